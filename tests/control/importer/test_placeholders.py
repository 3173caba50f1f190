"""The value syntaxes of host files: every env syntax, inputs, path variables and helpers."""

from __future__ import annotations

import pytest

from patchbay.control.importer.placeholders import EnvRef, InputRef, Literal, PathVar, Unsupported, parse_value


@pytest.mark.parametrize(
    ("text", "variable", "syntax"),
    [
        ("${GITHUB_TOKEN}", "GITHUB_TOKEN", "${VAR}"),
        ("${env:GITHUB_TOKEN}", "GITHUB_TOKEN", "${env:VAR}"),
        ("$env:GITHUB_TOKEN", "GITHUB_TOKEN", "$env:VAR"),
        ("{env:GITHUB_TOKEN}", "GITHUB_TOKEN", "{env:VAR}"),
    ],
)
def test_every_env_syntax_is_one_reference(text: str, variable: str, syntax: str) -> None:
    parsed = parse_value(text)
    assert parsed.sole_reference() == EnvRef(variable, syntax)


def test_a_default_is_kept_apart_and_hidden_from_repr() -> None:
    parsed = parse_value("${API_TOKEN:-cnryDEFAULT-1234}")
    ref = parsed.sole_reference()
    assert isinstance(ref, EnvRef) and (ref.variable, ref.default) == ("API_TOKEN", "cnryDEFAULT-1234")
    assert "cnryDEFAULT" not in repr(parsed)


def test_inputs_path_variables_and_unknown_variables() -> None:
    assert parse_value("${input:api-key}").sole_reference() == InputRef("api-key")
    parsed = parse_value("${workspaceFolder}/bin${/}x:${userHome}")
    assert parsed.path_vars == (PathVar("workspaceFolder"), PathVar("pathSeparator"), PathVar("userHome"))
    resolved = parsed.substitute({"workspaceFolder": "/w", "userHome": "/h", "pathSeparator": "/"})
    assert resolved.is_plain and resolved.literal_text() == "/w/bin/x:/h"
    assert parse_value("${command:pick}").unsupported == (Unsupported("command"),)


def test_mixed_text_is_not_a_sole_reference() -> None:
    parsed = parse_value("Bearer ${TOKEN}")
    assert parsed.sole_reference() is None
    assert isinstance(parsed.parts[0], Literal) and parsed.references == (EnvRef("TOKEN", "${VAR}"),)


def test_helpers_are_recognised_only_where_asked_and_bang_bang_escapes() -> None:
    assert parse_value("!op read x", helpers=True).helper == "op read x"
    assert parse_value("!op read x").helper is None
    escaped = parse_value("!!literal", helpers=True)
    assert escaped.helper is None and escaped.literal_text() == "!literal"
    assert "op read" not in repr(parse_value("!op read x", helpers=True))
