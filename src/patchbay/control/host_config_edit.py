"""Surgical edits of one server entry in a host's MCP config file (JSON or JSONC).

A host's file is the user's: comments, trailing commas, key order, indentation, a byte order mark
and every other entry must survive an edit byte for byte. So an edit never re-serialises the
file: json-five's round-trip model (:mod:`json5.loader` ``ModelLoader``) locates the entry's
text span, and only that span (plus the one comma it needs) is replaced. The result is parsed
again and compared with the intended document before it is returned, so an edit that would
change anything else is refused instead of written.

Errors (code ``invalid_config``, field ``file``): :class:`~patchbay.core.errors.MalformedConfigError`
for text that is not JSONC (with its line and column), :class:`~patchbay.core.errors.ConfigError`
for a document that is not an object, a servers key that holds something else, or an edit that
would change anything but the entry.

Design: docs/gateway.md "Installing into a host"
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from json5.loader import ModelLoader, loads
from json5.model import Identifier, JSONObject, Node, String
from json5.tokenizer import tokenize
from json5.utils import JSON5DecodeError

from patchbay.control.importer.jsonc import parse_jsonc
from patchbay.core.errors import ConfigError, MalformedConfigError

__all__ = ["read_entry", "remove_entry", "set_entry"]

_BOM = "\ufeff"
MAX_EDIT_CHARS = 1 << 20
"""Largest host config file edited (json-five's model is pure Python; host files are kilobytes)."""
_TRIVIA = {"WHITESPACE", "LINE_COMMENT", "BLOCK_COMMENT"}


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def _refuse(path: str, reason: str) -> ConfigError:
    return ConfigError("file", f"{path} {reason}", details={"path": path})


def _end(node: Node) -> int:
    # json-five keeps a node's source span on its tokens (private names, pinned by the tests)
    token = node._end_tok or node._tok
    assert token is not None
    return int(token.end)


def _start(node: Node) -> int:
    assert node._tok is not None
    return int(node._tok.index)


def _key_name(key: Node) -> str | None:
    if isinstance(key, String):
        return str(key.characters)
    if isinstance(key, Identifier):
        return str(key.name)
    return None


def _line_indent(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    line = text[start:]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _own_line(text: str, index: int) -> bool:
    start = text.rfind("\n", 0, index) + 1
    return text[start:index].strip(" \t") == ""


def _apply(text: str, edits: list[_Edit]) -> str:
    # from the end, and at one position the later edit first, so each lands where it was meant
    for _, edit in sorted(enumerate(edits), key=lambda pair: (pair[1].start, pair[0]), reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


class _Document:
    """One parsed file: its text without BOM, its root object and its indentation unit."""

    def __init__(self, text: str, path: str):
        self.path = path
        self.bom = text.startswith(_BOM)
        self.body = text[1:] if self.bom else text
        try:
            model = loads(self.body, loader=ModelLoader())
        except JSON5DecodeError as exc:
            line, column = getattr(exc, "lineno", None) or 1, getattr(exc, "colno", None) or 1
            raise MalformedConfigError(path, line, column, "not JSON or JSONC") from None
        if not isinstance(model.value, JSONObject):
            raise _refuse(path, "holds no JSON object at its top level")
        self.root: JSONObject = model.value
        self.unit = self._indent_unit()
        # the line break most lines of the file end with, for the lines an edit writes
        self.newline = "\r\n" if 2 * self.body.count("\r\n") > self.body.count("\n") else "\n"

    def _indent_unit(self) -> str:
        for key in self.root.keys:
            if _own_line(self.body, _start(key)):
                indent = _line_indent(self.body, _start(key))
                if indent:
                    return indent
        return "  "

    def member(self, obj: JSONObject, name: str) -> tuple[Node, Node] | None:
        """The last ``name`` member of ``obj`` (the one JSON parsers keep), as (key, value)."""
        found = None
        for key, value in zip(obj.keys, obj.values, strict=True):
            if _key_name(key) == name:
                found = (key, value)
        return found

    def servers(self, root_key: str) -> JSONObject | None:
        found = self.member(self.root, root_key)
        if found is None:
            return None
        if not isinstance(found[1], JSONObject):
            raise _refuse(self.path, f'its "{root_key}" is not an object')
        return found[1]

    def render(self, value: Any, indent: str) -> str:
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", self.newline + indent)

    def member_indent(self, obj: JSONObject) -> str:
        if obj.keys and _own_line(self.body, _start(obj.keys[0])):
            return _line_indent(self.body, _start(obj.keys[0]))
        return _line_indent(self.body, _start(obj)) + self.unit

    def insert(self, obj: JSONObject, name: str, value: Any) -> list[_Edit]:
        """The edits that add member ``name`` at the end of ``obj``."""
        indent, nl = self.member_indent(obj), self.newline
        member = f"{json.dumps(name, ensure_ascii=False)}: {self.render(value, indent)}"
        closing = _end(obj) - 1  # the index of its "}"
        if not obj.keys:
            opening = _start(obj) + 1
            outer = _line_indent(self.body, _start(obj))
            return [_Edit(opening, opening, f"{nl}{indent}{member}{nl}{outer}")]
        at = closing
        while at > 0 and self.body[at - 1] in " \t\r\n":
            at -= 1
        # a closing brace that shared the last member's line moves to a line of its own
        tail = "" if _own_line(self.body, closing) else nl + _line_indent(self.body, _start(obj))
        if obj.trailing_comma is not None:
            return [_Edit(at, at, f"{nl}{indent}{member},{tail}")]
        last = _end(obj.values[-1])
        return [_Edit(last, last, ","), _Edit(at, at, f"{nl}{indent}{member}{tail}")]

    def remove(self, obj: JSONObject, key: Node, value: Node) -> list[_Edit]:
        """The edits that take one member out of ``obj`` with its comma and, when it had its
        own lines, those lines."""
        start, end = _start(key), _end(value)
        tokens = [t for t in tokenize(self.body) if t.type not in _TRIVIA]
        after = next((t for t in tokens if t.index >= end), None)
        edits: list[_Edit] = []
        if after is not None and after.type == "COMMA":
            end = int(after.end)
        else:
            before = [t for t in tokens if t.end <= start]
            if before and before[-1].type == "COMMA":
                edits.append(_Edit(int(before[-1].index), int(before[-1].end), ""))
        line_start = self.body.rfind("\n", 0, start) + 1
        line_end = self.body.find("\n", end)
        line_end = len(self.body) if line_end < 0 else line_end
        if self.body[line_start:start].strip(" \t") == "" and self.body[end:line_end].strip(" \t\r") == "":
            # the member's own lines go, with the line break before them (its own one stays)
            start = line_start - (2 if self.body[max(0, line_start - 2) : line_start] == "\r\n" else 1)
            start = max(0, start)
            end = line_end - 1 if self.body[line_end - 1 : line_end] == "\r" else line_end
        edits.append(_Edit(start, end, ""))
        return edits

    def finish(self, body: str) -> str:
        return (_BOM if self.bom else "") + body


def _plain(text: str, path: str) -> dict[str, Any]:
    if len(text) > MAX_EDIT_CHARS:
        raise _refuse(path, f"is larger than {MAX_EDIT_CHARS} characters; edit it by hand")
    try:
        value = parse_jsonc(text.removeprefix(_BOM), path=path).value
    except ValueError as exc:  # e.g. an integer longer than Python converts (4300 digits)
        raise _refuse(path, f"holds a value that cannot be read: {exc}") from None
    if not isinstance(value, dict):
        raise _refuse(path, "holds no JSON object at its top level")
    return value


def _check(result: str, expected: dict[str, Any], path: str) -> str:
    if _plain(result, path) != expected:
        raise _refuse(path, "cannot be edited without changing other entries; edit it by hand")
    return result


def read_entry(text: str, root_key: str, name: str, *, path: str = "<text>") -> Any | None:
    """The value of entry ``name`` under ``root_key`` in ``text``; None when there is none.

    Raises:
        MalformedConfigError: ``invalid_config`` for text that is not JSONC.
        ConfigError: ``invalid_config`` for a document that is not an object.
    """
    if not text.strip(_BOM + " \t\r\n"):
        return None
    servers = _plain(text, path).get(root_key)
    return servers.get(name) if isinstance(servers, dict) else None


def set_entry(text: str, root_key: str, name: str, value: Mapping[str, Any], *, path: str = "<text>") -> str:
    """``text`` with ``root_key.name`` set to ``value`` (added at the end, or its value replaced
    in place); everything else in the file unchanged. Empty text gives a new two-space document.

    Raises:
        MalformedConfigError: ``invalid_config`` for text that is not JSONC (line, column).
        ConfigError: ``invalid_config`` for a document or ``root_key`` that is not an object,
            or an edit that would change anything else.
    """
    entry = dict(value)
    if not text.strip(_BOM + " \t\r\n"):
        return json.dumps({root_key: {name: entry}}, indent=2, ensure_ascii=False) + "\n"
    expected = _plain(text, path)
    document = _Document(text, path)
    servers = document.servers(root_key)
    if servers is None:
        edits = document.insert(document.root, root_key, {name: entry})
        expected[root_key] = {name: entry}
    else:
        expected[root_key] = {**expected[root_key], name: entry}
        found = document.member(servers, name)
        if found is None:
            edits = document.insert(servers, name, entry)
        else:
            key, old = found
            indent = _line_indent(document.body, _start(key))
            edits = [_Edit(_start(old), _end(old), document.render(entry, indent))]
    return _check(document.finish(_apply(document.body, edits)), expected, path)


def remove_entry(text: str, root_key: str, name: str, *, path: str = "<text>") -> str:
    """``text`` without ``root_key.name`` (every member of that name); unchanged when there is none.

    Raises:
        MalformedConfigError, ConfigError: ``invalid_config`` as :func:`set_entry`.
    """
    if not text.strip(_BOM + " \t\r\n"):
        return text
    expected = _plain(text, path)
    document = _Document(text, path)
    servers = document.servers(root_key)
    if servers is None or document.member(servers, name) is None:
        return text
    expected[root_key] = {k: v for k, v in expected[root_key].items() if k != name}
    body = document.body
    while True:  # one member at a time: each removal moves the spans of what follows
        current = _Document(document.finish(body), path)
        servers = current.servers(root_key)
        found = current.member(servers, name) if servers is not None else None
        if servers is None or found is None:
            break
        removed = _apply(body, current.remove(servers, *found))
        inside = removed[_start(servers) + 1 : _end(servers) - 1 - (len(body) - len(removed))]
        if len(servers.keys) == 1 and not inside.strip(" \t\r\n"):  # nothing left but layout: {}
            removed = removed[: _start(servers)] + "{}" + removed[_end(servers) - (len(body) - len(removed)) :]
        body = removed
    return _check(document.finish(body), expected, path)
