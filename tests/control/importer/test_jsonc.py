"""JSONC parsing (seed 003 §12): comments and trailing commas accepted, `//` inside strings kept,
malformed input reported with its line and column, never treated as missing."""

from __future__ import annotations

import pytest

from patchbay.control.importer.jsonc import parse_jsonc, strip_jsonc
from patchbay.core.errors import MalformedConfigError


def test_line_and_block_comments_and_trailing_commas_are_accepted() -> None:
    text = """// leading comment
{
  /* block
     comment */ "a": [1, 2, 3,],   // trailing comma in an array
  "b": {"c": true, "d": null,},    /* and in an object */
  "e": -1.5e3,
}
"""
    assert parse_jsonc(text).value == {"a": [1, 2, 3], "b": {"c": True, "d": None}, "e": -1500.0}


def test_comment_markers_inside_strings_are_kept() -> None:
    text = '{"url": "https://host.example/a//b", "note": "/* not a comment */", "q": "say \\"// hi\\"",}'
    assert parse_jsonc(text).value == {
        "url": "https://host.example/a//b",
        "note": "/* not a comment */",
        "q": 'say "// hi"',
    }


def test_stripping_keeps_every_line_and_column_in_place() -> None:
    text = '{ // x\n  "a": 1, /* y */\n}\n'
    stripped = strip_jsonc(text)
    assert len(stripped) == len(text)
    assert [len(line) for line in stripped.split("\n")] == [len(line) for line in text.split("\n")]


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{\n  "a": {"command": "x"}\n  "b": {}\n}', 3, 3),  # missing comma
        ('{\n  "a": 1,\n  // comment\n  "b": \n}', 5, 1),  # missing value
        ("{\n  /* never closed\n}", 2, 3),
        ('{\n  "a": NaN\n}', 2, 8),
        ("{\n  unquoted: 1\n}", 2, 3),
        ("[,]", 1, 2),
        ("", 1, 1),  # an empty file is malformed, not missing
        ('{"a": "unterminated\n}', 1, 20),  # the raw newline inside the string
    ],
)
def test_malformed_input_is_reported_with_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(MalformedConfigError) as info:
        parse_jsonc(text, path="cfg.json")
    error = info.value
    assert (error.line, error.column) == (line, column)
    assert error.code == "invalid_config"
    assert error.details == {"field": "file", "path": "cfg.json", "line": line, "column": column}
    assert f"cfg.json:{line}:{column}:" in error.message


def test_invalid_utf8_is_located_and_a_bom_is_accepted() -> None:
    with pytest.raises(MalformedConfigError) as info:
        parse_jsonc(b'{\n  "a": "\xff"\n}')
    assert (info.value.line, info.value.column) == (2, 9)
    assert parse_jsonc("\ufeff{}".encode()).value == {}


def test_errors_never_quote_the_content() -> None:
    with pytest.raises(MalformedConfigError) as info:
        parse_jsonc('{"token": "cnryJSONCsecret-11223344" "x"}')
    assert "cnryJSONCsecret" not in info.value.message


def test_duplicate_keys_are_named_and_the_last_wins() -> None:
    document = parse_jsonc('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}')
    assert document.value["mcpServers"]["a"] == {"command": "y"}
    assert document.duplicate_keys == ("a",)


def test_hostile_nesting_is_malformed_not_a_crash() -> None:
    with pytest.raises(MalformedConfigError) as info:
        parse_jsonc("[" * 100_000 + "]" * 100_000)
    assert (info.value.line, info.value.column) == (1, 201)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n", (1, 1)),
        ("PATCHBAY_HOME=/root/.local/share/patchbay\x00PATH=/usr/bin\x00", (1, 1)),
        ('{"a": 1,\n "b": hunter2secret}', (2, 7)),
    ],
)
def test_a_malformed_file_is_reported_by_position_and_reason_never_by_its_content(
    text: str, position: tuple[int, int]
) -> None:
    with pytest.raises(MalformedConfigError) as caught:
        parse_jsonc(text.encode(), path="/etc/shadow")
    error = caught.value
    assert (error.line, error.column) == position
    for word in ("root", "saltsalt", "PATCHBAY_HOME", "hunter2"):
        assert word not in error.message
    assert error.message.startswith(f"/etc/shadow:{position[0]}:{position[1]}: malformed JSONC: ")
