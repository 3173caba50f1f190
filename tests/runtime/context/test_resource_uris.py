"""Resource URIs are checked before a read, and URI templates expanded with percent-encoding."""

from __future__ import annotations

import pytest

from patchbay.core.errors import ValidationError
from patchbay.runtime.context.resource_uris import expand_uri_template, validate_resource_uri


def test_template_expansion_percent_encodes_and_refuses_missing_unknown_or_malformed() -> None:
    assert expand_uri_template("fixture://item/{id}", {"id": "a b/c"}) == "fixture://item/a%20b%2Fc"
    assert expand_uri_template("x://{+path}{?q,n}", {"path": "a/b c", "q": "x y", "n": 3}) == "x://a/b%20c?q=x%20y&n=3"
    with pytest.raises(ValidationError, match="template variable 'id' is required"):
        expand_uri_template("fixture://item/{id}", {})
    with pytest.raises(ValidationError, match="no variable 'other'"):
        expand_uri_template("fixture://item/{id}", {"id": "1", "other": "2"})
    for malformed in ("x://{id", "x://{a b}", "x://{=a}", "x://}{", "x://{}"):
        with pytest.raises(ValidationError) as caught:
            expand_uri_template(malformed, {})
        assert caught.value.details["field"] == "uri_template"
    with pytest.raises(ValidationError, match="must be a string"):
        expand_uri_template("x://{id}", {"id": ["a"]})


def test_uris_to_read_are_checked() -> None:
    assert validate_resource_uri("fixture://doc/1") == "fixture://doc/1"
    for bad, why in (
        ("fixture://item/{id}", "template"),
        ("doc-1", "no scheme"),
        ("fixture://a b", "spaces"),
        ("", "1-8192"),
        ("x:" + "a" * 9000, "1-8192"),
    ):
        with pytest.raises(ValidationError, match=why):
            validate_resource_uri(bad)
