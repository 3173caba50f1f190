"""JSONC: JSON with ``//`` and ``/* */`` comments and trailing commas, as host config files use.

:func:`strip_jsonc` blanks comments and trailing commas with spaces, keeping line and column
numbers, so ``json.loads`` reports positions in the original file. Errors:
:class:`MalformedConfigError` (code ``invalid_config``, ``details`` ``{"field": "file", "path",
"line", "column"}``); the message never quotes the file's content.

Design: docs/importer.md
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from patchbay.core.errors import MalformedConfigError

__all__ = ["JsoncDocument", "parse_jsonc", "strip_jsonc"]

_WORDS = ("true", "false", "null")
_MAX_DEPTH = 200


@dataclass(frozen=True)
class JsoncDocument:
    """A parsed JSONC file.

    Attributes:
        value: the JSON value (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``).
        duplicate_keys: keys that appeared more than once in one object (the last one wins, as
            in every JSON parser the hosts use); names only.
    """

    value: Any
    duplicate_keys: tuple[str, ...] = field(default=())


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    start = text.rfind("\n", 0, index) + 1
    return line, index - start + 1


def strip_jsonc(text: str, *, path: str = "<text>") -> str:
    """``text`` with comments and trailing commas replaced by spaces (newlines kept).

    A trailing comma is one followed (across whitespace and comments) by ``}`` or ``]`` and
    preceded by a value; ``[,]`` and ``{,}`` stay invalid. Bare words other than ``true``,
    ``false`` and ``null`` (``NaN``, ``Infinity``, unquoted keys) are refused here, where their
    position is known.

    Raises:
        MalformedConfigError: an unterminated ``/*`` comment (at its start) or a bare word.
    """
    out = list(text)
    i, n = 0, len(text)
    in_string = False
    last_sig = -1  # index of the last significant character outside comments
    pending_comma = -1  # index of a comma that may turn out to be trailing
    while i < n:
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_string = False
                last_sig = i
            i += 1
            continue
        if ch == '"':
            in_string = True
            pending_comma = -1
            i += 1
            continue
        if ch == "/" and i + 1 < n and text[i + 1] == "/":
            end = text.find("\n", i)
            end = n if end < 0 else end
            for j in range(i, end):
                if text[j] != "\r":
                    out[j] = " "
            i = end
            continue
        if ch == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            if end < 0:
                raise MalformedConfigError(path, *_position(text, i), "a /* comment is never closed")
            for j in range(i, end + 2):
                if text[j] not in "\r\n":
                    out[j] = " "
            i = end + 2
            continue
        if ch in " \t\r\n":
            i += 1
            continue
        if ch in "}]" and pending_comma >= 0:
            out[pending_comma] = " "
        if ch == ",":
            before = text[last_sig] if last_sig >= 0 else ""
            pending_comma = i if before not in ("", "[", "{", ",") else -1
        else:
            pending_comma = -1
        if ch in "-0123456789":  # a number; json.loads checks its shape
            while i < n and text[i] in "0123456789+-.eE":
                i += 1
            last_sig = i - 1
            continue
        if ch.isalpha() or ch == "_":
            start = i
            while i < n and (text[i].isalnum() or text[i] in "_$"):
                i += 1
            word = text[start:i]
            if word not in _WORDS:
                # never quote it: a file that is no config at all (/etc/shadow) would give its
                # first word away
                raise MalformedConfigError(
                    path, *_position(text, start), "unexpected bare word (keys and strings need double quotes)"
                )
            last_sig = i - 1
            continue
        last_sig = i
        i += 1
    return "".join(out)


def parse_jsonc(data: bytes | str, *, path: str = "<text>") -> JsoncDocument:
    """Parse a JSONC document (UTF-8, an optional BOM).

    Args:
        data: the file's bytes (or text).
        path: how the file is named in errors.

    Raises:
        MalformedConfigError: ``invalid_config`` with the line and column of the first problem:
            invalid UTF-8, an unterminated comment, a bare word, any JSON syntax error (an empty
            file included: it is malformed, not missing), nesting deeper than 200 levels.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            raise MalformedConfigError(path, line, column, "the file is not valid UTF-8") from None
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    plain = strip_jsonc(text, path=path)
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj and key not in duplicates:
                duplicates.append(key)
            obj[key] = value
        return obj

    depth = _depth_error(plain)
    if depth is not None:
        raise MalformedConfigError(path, *_position(text, depth), f"nested deeper than {_MAX_DEPTH} levels")
    try:
        value = json.loads(plain, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise MalformedConfigError(path, exc.lineno, exc.colno, exc.msg) from None
    return JsoncDocument(value=value, duplicate_keys=tuple(duplicates))


def _depth_error(plain: str) -> int | None:
    """Index of the first bracket nested deeper than the limit (``json`` would overflow the stack)."""
    depth = 0
    in_string = False
    i, n = 0, len(plain)
    while i < n:
        ch = plain[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                return i
        elif ch in "]}":
            depth -= 1
        i += 1
    return None
