"""Resource URIs and RFC 6570 URI templates (read by URI, never by name).

Templates are expanded with the maintained ``uritemplate`` library (levels 1–4). Simple expansion
percent-encodes every reserved character: ``{id}`` with ``a b/c`` → ``a%20b%2Fc``. Unlike plain
RFC 6570, every variable must be given (an undefined one would vanish from the URI and read
something else than meant) and the result must be a URI that :func:`validate_resource_uri` accepts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from uritemplate import URITemplate
from uritemplate.variable import VariableValueDict

from patchbay.core.errors import ValidationError

__all__ = ["MAX_URI_CHARS", "expand_uri_template", "template_variables", "validate_resource_uri"]

MAX_URI_CHARS = 8192
"""Longest URI (or URI template) accepted, in characters."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
# RFC 6570 section 2: expression = "{" [ operator ] variable-list "}"; the reserved operators =,!@|
# are refused.
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}+(?:\.{_VARCHAR}+)*(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = re.compile(rf"\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}}")


def _check_text(value: object, what: str, field_name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_URI_CHARS:
        raise ValidationError(f"{what} must be 1-{MAX_URI_CHARS} characters", details={"field": field_name})
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} must be valid UTF-8", details={"field": field_name}) from None
    if _UNSAFE.search(value):
        raise ValidationError(
            f"{what} must not contain spaces or control characters (percent-encode them)",
            details={"field": field_name},
        )
    return value


def validate_resource_uri(uri: object) -> str:
    """Check a URI to read: 1–8192 characters with a scheme (``scheme:...``), valid UTF-8, no
    whitespace or control characters, and no template expressions left.

    Raises:
        ValidationError: ``validation_error`` (field ``uri``).
    """
    text = _check_text(uri, "a resource URI", "uri")
    if "{" in text or "}" in text:
        raise ValidationError(
            f"{text[:200]!r} is a URI template; expand it with values first (RFC 6570)", details={"field": "uri"}
        )
    if not _SCHEME.match(text):
        raise ValidationError(f"{text[:200]!r} is not a URI (no scheme)", details={"field": "uri"})
    return text


def template_variables(template: str) -> tuple[str, ...]:
    """The variable names of an RFC 6570 template, in order of first appearance.

    Raises:
        ValidationError: ``validation_error`` (field ``uri_template``) for a malformed template:
            unbalanced braces, an empty or malformed expression, or a reserved operator
            (``=``, ``,``, ``!``, ``@``, ``|``).
    """
    text = _check_text(template, "a URI template", "uri_template")
    literal = _EXPRESSION.sub("", text)
    if "{" in literal or "}" in literal:
        raise ValidationError(f"{text[:200]!r} is not a valid RFC 6570 URI template", details={"field": "uri_template"})
    return tuple(URITemplate(text).variable_names)


def expand_uri_template(template: str, values: Mapping[str, str | int]) -> str:
    """Expand an RFC 6570 URI template (levels 1–4, through ``uritemplate``).

    Every variable must be given and no other: an undefined variable would silently vanish from the
    URI (RFC 6570 section 3.2.1) and read something else than meant. Values are strings (an int is
    written in decimal). Simple expansion percent-encodes reserved characters:
    ``expand_uri_template("x://{id}", {"id": "a b/c"}) == "x://a%20b%2Fc"``.

    Args:
        template: e.g. ``demo://resource/dynamic/text/{resourceId}``.
        values: variable name → value.

    Returns:
        The URI, checked with :func:`validate_resource_uri`.

    Raises:
        ValidationError: ``validation_error``: a malformed template (field ``uri_template``), an
            unknown or missing variable, or a value that is not a string (field ``values``).
    """
    variables = template_variables(template)
    if not isinstance(values, Mapping):
        raise ValidationError("template values must be an object of strings", details={"field": "values"})
    unknown = [name for name in values if name not in variables]
    if unknown:
        raise ValidationError(
            f"the template has no variable {str(unknown[0])[:100]!r} (it has: {', '.join(variables) or 'none'})",
            details={"field": "values", "variable": str(unknown[0])[:100]},
        )
    given: dict[str, str] = {}
    for name in variables:
        if name not in values:
            raise ValidationError(
                f"template variable '{name}' is required", details={"field": "values", "variable": name}
            )
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValidationError(
                f"template variable '{name}' must be a string", details={"field": "values", "variable": name}
            )
        given[name] = str(value)
        try:
            given[name].encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(
                f"template variable '{name}' must be valid UTF-8", details={"field": "values", "variable": name}
            ) from None
    expansion: VariableValueDict = dict(given)  # the expander's own (invariant) dict type
    return validate_resource_uri(URITemplate(template).expand(expansion))
