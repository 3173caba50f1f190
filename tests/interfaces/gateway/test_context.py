"""The gateway's names for resources, templates and prompts, and its protocol errors."""

from __future__ import annotations

import mcp_types as types
import pytest

from patchbay.core.errors import FailureReason, NotFoundError, ToolCallError, ValidationError
from patchbay.interfaces.gateway.context import (
    prompt_name,
    protocol_error,
    resource_uri,
    split_prompt_name,
    split_resource_uri,
    template_uri,
)


@pytest.mark.parametrize(
    "uri", ["fixture://doc/5", "file:///tmp/a b/c?x=1#y", "demo://resource/static/document/architecture.md", "x"]
)
def test_a_resource_uri_round_trips_through_the_gateway_name(uri: str) -> None:
    named = resource_uri("res", uri)
    assert named.startswith("patchbay://res/") and "/" not in named.removeprefix("patchbay://res/")
    assert split_resource_uri(named) == ("res", uri)


def test_a_template_keeps_its_variables_so_the_hosts_expansion_names_the_servers_uri() -> None:
    template = template_uri("res", "fixture://item/{id}/part/{part}")
    assert template == "patchbay://res/fixture%3A%2F%2Fitem%2F{id}%2Fpart%2F{part}"
    expanded = template.replace("{id}", "42").replace("{part}", "a%20b")  # as a host percent-encodes
    assert split_resource_uri(expanded) == ("res", "fixture://item/42/part/a b")


@pytest.mark.parametrize("uri", ["fixture://doc/5", "patchbay://res", "patchbay://res/", "patchbay://Bad_Name/x"])
def test_a_uri_the_gateway_did_not_give_is_a_validation_error(uri: str) -> None:
    with pytest.raises(ValidationError) as refused:
        split_resource_uri(uri)
    assert refused.value.details == {"field": "uri"}


def test_prompt_names_split_at_the_first_double_underscore() -> None:
    assert prompt_name("res", "greet") == "res__greet"
    assert split_prompt_name("res__my__prompt") == ("res", "my__prompt")
    for bad in ("greet", "res__", "__greet", "Res__greet"):
        with pytest.raises(ValidationError):
            split_prompt_name(bad)


def test_refusals_become_protocol_errors_carrying_the_stable_code() -> None:
    invalid = protocol_error(ValidationError("bad", details={"field": "uri"}))
    assert invalid.error.code == types.INVALID_PARAMS and invalid.error.data == {"code": "validation_error"}
    assert invalid.error.message == "error[validation_error]: bad"
    missing = protocol_error(NotFoundError("no connector 'x'"))
    assert missing.error.code == types.INVALID_PARAMS and missing.error.data == {"code": "not_found"}
    asked = protocol_error(ToolCallError(FailureReason.APPROVAL_UNAVAILABLE, "needs approval"))
    assert asked.error.code == types.INVALID_REQUEST and asked.error.data == {"code": "approval_unavailable"}
