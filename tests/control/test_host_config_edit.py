"""Surgical edits of one entry in a host's JSON(C) config: everything else survives byte for byte."""

from __future__ import annotations

import json

import pytest

from patchbay.control.host_config_edit import read_entry, remove_entry, set_entry
from patchbay.control.importer.jsonc import parse_jsonc
from patchbay.core.errors import ConfigError, ErrorCode, MalformedConfigError

ENTRY = {"command": "/venv/bin/patchbay", "args": ["gateway", "--stdio", "--project", "/ws"]}

COMMENTED = """{
  // my servers
  "mcpServers": {
    "a": {"command": "x"}, // the first
    /* the second */ "b": {"url": "https://example.com/mcp",},
  },
  "theme": "dark"
}
"""


def test_an_entry_is_added_after_the_others_and_removed_back_to_the_same_bytes() -> None:
    added = set_entry(COMMENTED, "mcpServers", "patchbay", ENTRY)
    assert "// my servers" in added and "// the first" in added and "/* the second */" in added
    assert parse_jsonc(added).value == {
        "mcpServers": {"a": {"command": "x"}, "b": {"url": "https://example.com/mcp"}, "patchbay": ENTRY},
        "theme": "dark",
    }
    # the other lines are untouched, in order; the new entry sits at the members' indentation
    assert added.splitlines()[:5] == COMMENTED.splitlines()[:5]
    assert '\n    "patchbay": {\n      "command": "/venv/bin/patchbay",' in added
    assert remove_entry(added, "mcpServers", "patchbay") == COMMENTED


@pytest.mark.parametrize(
    "original",
    [
        '{\n  "mcpServers": {\n    "a": {}\n  }\n}\n',
        '{\n\t"mcpServers": {\n\t\t"a": {}\n\t}\n}',
        '\ufeff{\n    "servers": {\n        "a": {}\n        // the end\n    }\n}\n',
        '{\r\n  "mcpServers": {\r\n    "a": {}\r\n  }\r\n}\r\n',
    ],
    ids=["two-spaces", "tabs", "bom-comment-four-spaces", "crlf"],
)
def test_round_trip_keeps_indentation_bom_comments_and_line_ends(original: str) -> None:
    key = "servers" if '"servers"' in original else "mcpServers"
    added = set_entry(original, key, "patchbay", ENTRY)
    assert read_entry(added, key, "patchbay") == ENTRY
    assert added.startswith("\ufeff") == original.startswith("\ufeff")
    if "\t" in original:
        assert '\n\t\t"patchbay": {\n\t\t\t"command"' in added
    assert remove_entry(added, key, "patchbay") == original


def test_an_existing_entry_is_replaced_in_place() -> None:
    original = '{\n  "mcpServers": {\n    "patchbay": {"command": "old"},\n    "z": {}\n  }\n}\n'
    replaced = set_entry(original, "mcpServers", "patchbay", ENTRY)
    assert list(parse_jsonc(replaced).value["mcpServers"]) == ["patchbay", "z"]
    assert read_entry(replaced, "mcpServers", "patchbay") == ENTRY
    assert replaced.endswith('    },\n    "z": {}\n  }\n}\n')


def test_a_missing_servers_key_or_file_is_created() -> None:
    assert json.loads(set_entry("", "servers", "patchbay", ENTRY)) == {"servers": {"patchbay": ENTRY}}
    one_line = set_entry('{"theme": "dark"}', "mcpServers", "patchbay", ENTRY)
    assert parse_jsonc(one_line).value == {"theme": "dark", "mcpServers": {"patchbay": ENTRY}}
    assert one_line.startswith('{"theme": "dark",\n  "mcpServers": {') and one_line.endswith("\n}")
    assert set_entry("{}", "mcpServers", "patchbay", ENTRY).startswith('{\n  "mcpServers": {\n    "patchbay"')


def test_removing_the_only_entry_leaves_an_empty_object_and_a_missing_one_changes_nothing() -> None:
    added = set_entry('{\n  "mcpServers": {}\n}\n', "mcpServers", "patchbay", ENTRY)
    assert remove_entry(added, "mcpServers", "patchbay") == '{\n  "mcpServers": {}\n}\n'
    assert remove_entry(COMMENTED, "mcpServers", "patchbay") == COMMENTED
    assert remove_entry("", "mcpServers", "patchbay") == ""


def test_every_entry_of_a_repeated_name_is_removed() -> None:
    text = '{"mcpServers": {"a": {}, "patchbay": {"command": "one"}, "patchbay": {"command": "two"}}}'
    assert read_entry(text, "mcpServers", "patchbay") == {"command": "two"}  # the last one wins
    assert parse_jsonc(remove_entry(text, "mcpServers", "patchbay")).value == {"mcpServers": {"a": {}}}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"mcpServers": {"a": }', MalformedConfigError),
        ("[1, 2]", ConfigError),
        ('{"mcpServers": []}', ConfigError),
        ("{unquoted: 1}", MalformedConfigError),
    ],
    ids=["broken", "array", "servers-not-object", "json5-only"],
)
def test_bad_files_are_refused_with_invalid_config(text: str, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        set_entry(text, "mcpServers", "patchbay", ENTRY, path="/x/mcp.json")
    assert raised.value.code == ErrorCode.INVALID_CONFIG  # type: ignore[attr-defined]
    assert raised.value.details["field"] == "file"  # type: ignore[attr-defined]
    with pytest.raises(error):
        remove_entry(text, "mcpServers", "patchbay")


def test_mixed_line_ends_lose_no_character_on_removal() -> None:
    original = '{\r\n  "mcpServers": {\n    "fs": {"command": "npx"}, // filesystem\n    "a": 1\n  }\n}\n'
    added = set_entry(original, "mcpServers", "patchbay", ENTRY)
    assert remove_entry(added, "mcpServers", "patchbay") == original
    crlf_first = '{\r\n"mcpServers": {\n  "patchbay": 1,\n  "a": 2\n}}'
    removed = remove_entry(crlf_first, "mcpServers", "patchbay")
    assert parse_jsonc(removed).value == {"mcpServers": {"a": 2}} and removed.startswith(
        '{\r\n"mcpServers": {\n  "a": 2'
    )


def test_removing_the_only_entry_keeps_the_comments_around_it() -> None:
    original = '{\n  "mcpServers": {\n    // add servers below\n  }\n}\n'
    added = set_entry(original, "mcpServers", "patchbay", ENTRY)
    assert "// add servers below" in remove_entry(added, "mcpServers", "patchbay")
    block = remove_entry('{"mcpServers": {/* none */ "patchbay": 1}}', "mcpServers", "patchbay")
    assert "/* none */" in block and parse_jsonc(block).value == {"mcpServers": {}}


def test_files_too_large_or_with_unreadable_numbers_are_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        set_entry('{"a": ' + "9" * 5000 + ', "mcpServers": {}}', "mcpServers", "patchbay", ENTRY)
    assert raised.value.code == ErrorCode.INVALID_CONFIG and "cannot be read" in str(raised.value)
    with pytest.raises(ConfigError) as too_big:
        set_entry('{"pad": "' + "x" * (1 << 20) + '", "mcpServers": {}}', "mcpServers", "patchbay", ENTRY)
    assert "larger than" in str(too_big.value)
