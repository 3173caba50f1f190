"""Output guard: bounds what one tool result may put into memory, events and a model's context.

Rule (DESIGN.md "Events"): a result whose JSON (``{"content": [...], "structuredContent": ...}``,
UTF-8) is over ``settings.max_output_bytes``, or whose text has more than
``settings.max_output_lines`` lines, is *cut*:

* the whole result is written, streaming, to the content-addressed artifact store
  (:class:`patchbay.runtime.output.artifacts.ArtifactStore`, ``<home>/artifacts``, files 0600);
* the text (text blocks and embedded text resources, in order) becomes a head + tail preview of
  ``settings.output_preview_bytes`` in all (half each, cut on UTF-8 character boundaries, at most
  half of ``max_output_lines`` lines each) with ``[truncated N bytes]`` between them, N being the
  UTF-8 bytes of text left out;
* binary blocks (image, audio, embedded blob) and other non-text blocks are never sliced: each is
  kept whole while it fits in what is left of ``max_output_bytes`` after the preview, otherwise it
  is replaced by a text note naming its kind, MIME type, size and the artifact id;
* ``structuredContent`` is kept when it fits in what is then left, otherwise it is left out (it is
  in the artifact).

Sizes are measured without copying a big string whole: strings longer than 1 MiB characters are
escaped, measured and written in 1 MiB slices, so the guard's own peak memory stays a few MiB on top
of the result it is given (a test bounds it through the real runtime). ``structuredContent`` is
serialised once to bytes (pydantic-core) and that is its only copy.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pydantic_core

from patchbay.core.settings import Settings
from patchbay.runtime.events.log import encode_json
from patchbay.runtime.output.artifacts import ArtifactStore

__all__ = ["GUARD_IN_THREAD_BYTES", "GuardedOutput", "OutputGuard", "measure_output", "rough_size", "truncation_marker"]

logger = logging.getLogger(__name__)

_CHUNK = 1024 * 1024
"""Characters per slice when a big string is escaped, measured or written."""
_SMALL = 64 * 1024
"""Flat results with at most this many characters are measured with one ``encode_json`` call."""
_ESCAPE = json.encoder.encode_basestring  # the C escaper of ``encode_json`` (UTF-8 kept, quotes added)
_OPEN, _MIDDLE, _CLOSE = '{"content":[', '],"structuredContent":', "}"
_SCALARS = (int, float, bool, type(None))


def truncation_marker(omitted_bytes: int) -> str:
    """``[truncated N bytes]``: what stands where the middle of a cut text was."""
    return f"[truncated {omitted_bytes} bytes]"


@dataclass(slots=True)
class GuardedOutput:
    """A tool result as the guard lets it through.

    Attributes:
        content: content blocks (wire/camelCase dicts); cut ones are previews and notes.
        structured_content: the structured result, or None (none given, or left out when cut).
        text: the text blocks of ``content`` joined with ``"\\n"``.
        size_bytes: UTF-8 bytes of the whole result's JSON (the artifact's size when stored).
        truncated: the result was over a bound and was cut.
        artifact_id: ``sha256:<hex>`` of the stored whole result; None when not cut, or when
            storing failed (logged; the result is cut all the same).
    """

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    text: str
    size_bytes: int
    truncated: bool = False
    artifact_id: str | None = None


# -- JSON without whole copies -------------------------------------------------------------------


def _flat(value: dict[Any, Any]) -> bool:
    """No containers and no big strings: one ``encode_json`` call renders it cheaply."""
    for item in value.values():
        kind = type(item)
        if kind is str:
            if len(item) > _CHUNK:
                return False
        elif kind not in _SCALARS:
            return False
    return True


def _pieces(value: Any) -> Iterator[str]:
    """The compact JSON text of ``value`` (as ``encode_json`` writes it), in pieces of at most about
    1 MiB characters (a big string is escaped slice by slice)."""
    kind = type(value)
    if kind is str:
        if len(value) <= _CHUNK:
            yield _ESCAPE(value)
            return
        yield '"'
        for start in range(0, len(value), _CHUNK):
            yield _ESCAPE(value[start : start + _CHUNK])[1:-1]
        yield '"'
    elif isinstance(value, dict):
        if _flat(value) or not all(type(key) is str for key in value):
            yield encode_json(value)
            return
        separator = "{"
        for key, item in value.items():
            yield separator + _ESCAPE(key) + ":"
            separator = ","
            yield from _pieces(item)
        yield "}" if separator == "," else "{}"
    elif isinstance(value, list | tuple):
        separator = "["
        for item in value:
            yield separator
            separator = ","
            yield from _pieces(item)
        yield "]" if separator == "," else "[]"
    else:
        yield encode_json(value)


def _to_bytes(piece: str) -> bytes:
    # A lone surrogate (legal in a JSON string, not in UTF-8) becomes its JSON escape \udXXX.
    return piece.encode("utf-8", "backslashreplace")


def _piece_size(piece: str) -> int:
    return len(piece) if piece.isascii() else len(_to_bytes(piece))


def _json_size(value: Any) -> int:
    return sum(_piece_size(piece) for piece in _pieces(value))


def _flat_chars(content: list[dict[str, Any]]) -> int:
    """Characters in the keys and strings of flat blocks (scalar values only), or -1."""
    total = 0
    for block in content:
        for key, item in block.items():
            kind = type(item)
            if kind is str:
                total += len(item)
            elif kind not in _SCALARS or type(key) is not str:
                return -1
            total += len(key)
    return total


def _chars(value: Any) -> int:
    """Characters in the strings of ``value``: a cheap lower bound of its UTF-8 JSON size."""
    kind = type(value)
    if kind is str:
        return len(value)
    if isinstance(value, dict):
        return sum(len(item) if type(item) is str else _chars(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(_chars(item) for item in value)
    return 0


def _structured_bytes(value: Any) -> bytes:
    """``structuredContent`` as compact UTF-8 JSON, in one copy (pydantic-core)."""
    try:
        return pydantic_core.to_json(value, fallback=str)
    except (pydantic_core.PydanticSerializationError, ValueError):  # e.g. a lone surrogate
        return _to_bytes(encode_json(value))


def _utf8_size(text: str) -> int:
    """UTF-8 bytes of ``text`` (lone surrogates count 3), without encoding it whole."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[start : start + _CHUNK].encode("utf-8", "surrogatepass")) for start in range(0, len(text), _CHUNK)
    )


def measure_output(content: list[dict[str, Any]], structured: Any) -> int:
    """UTF-8 bytes of ``{"content": content, "structuredContent": structured}`` as compact JSON.

    The same size :class:`OutputGuard` reports and writes, computed without encoding big strings
    whole. ``content`` holds wire-form dicts; ``structured`` is a JSON-like value or None.
    """
    structured_size = 4 if structured is None else len(_structured_bytes(structured))
    if 0 <= _flat_chars(content) <= _SMALL:
        return len(_to_bytes(encode_json({"content": content, "structuredContent": None}))) - 4 + structured_size
    size = len(_OPEN) + len(_MIDDLE) + len(_CLOSE) + max(0, len(content) - 1)
    return size + sum(_json_size(block) for block in content) + structured_size


# -- text slots and previews ---------------------------------------------------------------------


def _text_holder(block: dict[str, Any]) -> dict[str, Any] | None:
    """The dict whose ``"text"`` is this block's text (a text block, an embedded text resource)."""
    kind = block.get("type")
    holder = block.get("resource") if kind == "resource" else block if kind == "text" else None
    if isinstance(holder, dict) and type(holder.get("text")) is str:
        return holder
    return None


def _line_count(text: str) -> int:
    return text.count("\n") + 1 if text else 0


def _complete_prefix(data: bytes) -> int:
    """Length of the longest prefix of ``data`` that ends on a UTF-8 character boundary."""
    end = len(data)
    start = end - 1  # where the last character starts
    while start >= 0 and end - start < 4 and data[start] & 0xC0 == 0x80:
        start -= 1
    if start < 0:
        return 0
    lead = data[start]
    need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return end if end - start >= need else start


def _head(text: str, max_bytes: int, max_lines: int) -> str:
    """The longest prefix of ``text`` of at most ``max_bytes`` UTF-8 bytes and ``max_lines`` lines."""
    if max_bytes <= 0 or max_lines <= 0:
        return ""
    window = text[:max_bytes]  # characters; at least as many bytes
    if not window.isascii():
        data = window.encode("utf-8", "surrogatepass")[:max_bytes]
        window = data[: _complete_prefix(data)].decode("utf-8", "surrogatepass")
    if window.count("\n") >= max_lines:
        window = "\n".join(window.split("\n", max_lines)[:max_lines])
    return window


def _tail(text: str, start: int, max_bytes: int, max_lines: int) -> int:
    """Where the longest suffix of ``text[start:]`` within the budgets begins (an index of ``text``)."""
    if max_bytes <= 0 or max_lines <= 0:
        return len(text)
    first = max(start, len(text) - max_bytes)
    window = text[first:]
    if not window.isascii():
        data = window.encode("utf-8", "surrogatepass")
        data = data[len(data) - min(max_bytes, len(data)) :]
        skip = 0
        while skip < len(data) and skip < 4 and data[skip] & 0xC0 == 0x80:
            skip += 1
        window = data[skip:].decode("utf-8", "surrogatepass")
    if window.count("\n") >= max_lines:
        window = "\n".join(window.rsplit("\n", max_lines)[-max_lines:])
    return len(text) - len(window)


def _preview(texts: list[str], head_bytes: int, tail_bytes: int, head_lines: int, tail_lines: int) -> list[str | None]:
    """New text per slot (None: drop it): whole slots while they fit, a head, the marker, a tail."""
    sizes = [_utf8_size(text) for text in texts]
    lines = [_line_count(text) for text in texts]
    position, head_end = len(texts), 0
    for index, text in enumerate(texts):
        if sizes[index] <= head_bytes and lines[index] <= head_lines:
            head_bytes, head_lines = head_bytes - sizes[index], head_lines - lines[index]
            continue
        position, head_end = index, len(_head(text, head_bytes, head_lines))
        break
    if position == len(texts):
        return list(texts)  # everything fits: nothing to cut
    for index in range(len(texts) - 1, position, -1):
        if sizes[index] <= tail_bytes and lines[index] <= tail_lines:
            tail_bytes, tail_lines = tail_bytes - sizes[index], tail_lines - lines[index]
            continue
        tail_position, tail_start = index, _tail(texts[index], 0, tail_bytes, tail_lines)
        break
    else:
        tail_position, tail_start = position, _tail(texts[position], head_end, tail_bytes, tail_lines)
    head = texts[position][:head_end]
    tail = texts[tail_position][tail_start:]
    omitted = sum(sizes[position : tail_position + 1]) - _utf8_size(head) - _utf8_size(tail)
    marker = truncation_marker(omitted)
    out: list[str | None] = [*texts[:position], *([None] * (len(texts) - position))]
    if tail_position == position:
        out[position] = "\n".join(part for part in (head, marker, tail) if part)
    else:
        out[position] = "\n".join(part for part in (head, marker) if part)
        out[tail_position] = tail or None
    out[tail_position + 1 :] = texts[tail_position + 1 :]
    return out


def _binary(block: dict[str, Any]) -> tuple[str, str, int] | None:
    """``(kind, MIME type, decoded bytes)`` of an image, audio or embedded blob block, else None."""
    kind = block.get("type")
    holder: object
    if kind in ("image", "audio"):
        holder, key = block, "data"
    elif kind == "resource":
        holder, key = block.get("resource"), "blob"
    else:
        return None
    if not isinstance(holder, dict) or type(holder.get(key)) is not str:
        return None
    data = holder[key]
    size = len(data) * 3 // 4 - data[-2:].count("=")  # base64: 4 characters per 3 bytes
    return str(kind), str(holder.get("mimeType") or "application/octet-stream"), size


def _note(block: dict[str, Any], size: int, artifact_id: str | None) -> dict[str, Any]:
    binary = _binary(block)
    what = f"{binary[0]} {binary[1]}, {binary[2]} bytes" if binary else f"{block.get('type')} block, {size} bytes"
    where = f"full result in artifact {artifact_id}" if artifact_id else "the full result could not be stored"
    return {"type": "text", "text": f"[{what} not shown: {where}]"}


def _with_text(block: dict[str, Any], holder: dict[str, Any], text: str) -> dict[str, Any]:
    """A cut copy of a text block or embedded text resource (``_meta`` left out: it is in the artifact)."""
    if holder is block:
        cut: dict[str, Any] = {"type": "text", "text": text}
    else:
        cut = {"type": "resource", "resource": {k: v for k, v in holder.items() if k != "_meta"} | {"text": text}}
    if isinstance(block.get("annotations"), dict):
        cut["annotations"] = block["annotations"]
    return cut


def _joined_text(content: list[dict[str, Any]]) -> str:
    return "\n".join(
        [block["text"] for block in content if block.get("type") == "text" and type(block.get("text")) is str]
    )


class OutputGuard:
    """Bounds tool results (see the module docstring for the rule).

    Args:
        settings: ``max_output_bytes``, ``max_output_lines``, ``output_preview_bytes`` and
            ``artifacts_dir`` (where the store lives unless ``store`` is given).
        store: the artifact store; default ``ArtifactStore(settings.artifacts_dir)``, created on
            the first cut result.
    """

    def __init__(self, settings: Settings, store: ArtifactStore | None = None):
        self.settings = settings
        self._store = store

    @property
    def store(self) -> ArtifactStore:
        if self._store is None:
            self._store = ArtifactStore.from_settings(self.settings)
        return self._store

    def bound(self, content: list[dict[str, Any]], structured: Mapping[str, Any] | None) -> GuardedOutput:
        """Bound one result: return it as is when within bounds, else cut and store it.

        Args:
            content: the content blocks as wire-form dicts (``model_dump(by_alias=True)``); they
                are not modified.
            structured: the structured content (a JSON object) or None.

        Never raises for a storage failure: the result is then cut without an artifact (logged).
        """
        if structured is not None and type(structured) is not dict:
            structured = dict(structured)
        settings = self.settings
        structured_json = None if structured is None else _structured_bytes(structured)
        structured_size = 4 if structured_json is None else len(structured_json)  # 4: null
        fixed = len(_OPEN) + len(_MIDDLE) + len(_CLOSE) + max(0, len(content) - 1) + structured_size
        # The common case, a few flat blocks of small strings: one C encoder call measures it.
        chars = _flat_chars(content)
        if 0 <= chars <= _SMALL and chars + len(content) <= settings.max_output_lines:
            size = len(_to_bytes(encode_json({"content": content, "structuredContent": None}))) - 4 + structured_size
            if size <= settings.max_output_bytes:
                return GuardedOutput(content, structured, _joined_text(content), size)
        holders = [_text_holder(block) for block in content]
        lines = sum(_line_count(holder["text"]) for holder in holders if holder is not None)
        sizes: list[int] | None = None
        # Characters never outnumber UTF-8 bytes: a result clearly over the bound skips the exact
        # measuring pass (escaping is the slow part) and is measured while it is written.
        lower = fixed + sum(_chars(block) for block in content)
        if lines <= settings.max_output_lines and lower <= settings.max_output_bytes:
            sizes = [_json_size(block) for block in content]
            if fixed + sum(sizes) <= settings.max_output_bytes:
                return GuardedOutput(content, structured, _joined_text(content), fixed + sum(sizes))
        artifact_id, written = self._store_whole(content, structured_json)
        sizes = written or sizes or [_json_size(block) for block in content]
        return self._cut(content, holders, sizes, structured, structured_json, fixed + sum(sizes), artifact_id)

    def _store_whole(
        self, content: list[dict[str, Any]], structured_json: bytes | None
    ) -> tuple[str | None, list[int] | None]:
        """Write the whole result to the store; return its id and each block's JSON size, or
        ``(None, None)`` when it could not be stored (logged)."""
        try:
            with self.store.writer() as writer:
                writer.write(_OPEN.encode())
                sizes = []
                for index, block in enumerate(content):
                    if index:
                        writer.write(b",")
                    start = writer.size
                    for piece in _pieces(block):
                        writer.write(_to_bytes(piece))
                    sizes.append(writer.size - start)
                writer.write(_MIDDLE.encode())
                writer.write(b"null" if structured_json is None else structured_json)
                writer.write(_CLOSE.encode())
                return writer.commit(), sizes
        except OSError as exc:
            logger.warning("could not store an oversized tool result in %s: %s", self.store.root, exc)
            return None, None

    def _cut(
        self,
        content: list[dict[str, Any]],
        holders: list[dict[str, Any] | None],
        sizes: list[int],
        structured: dict[str, Any] | None,
        structured_json: bytes | None,
        size: int,
        artifact_id: str | None,
    ) -> GuardedOutput:
        settings = self.settings
        preview = max(0, settings.output_preview_bytes)
        line_cap = max(0, settings.max_output_lines)
        slots = [index for index, holder in enumerate(holders) if holder is not None]
        texts = _preview(
            [holders[index]["text"] for index in slots],  # type: ignore[index]
            preview // 2,
            preview - preview // 2,
            line_cap // 2,
            line_cap - line_cap // 2,
        )
        new_text = dict(zip(slots, texts, strict=True))
        room = max(0, settings.max_output_bytes - preview)
        bounded: list[dict[str, Any]] = []
        for index, block in enumerate(content):
            holder = holders[index]
            if holder is not None:
                text = new_text[index]
                if text is holder["text"]:
                    bounded.append(block)
                elif text is not None:
                    bounded.append(_with_text(block, holder, text))
            elif sizes[index] <= room:
                room -= sizes[index]
                bounded.append(block)
            else:
                bounded.append(_note(block, sizes[index], artifact_id))
        kept_structured = structured if structured_json is not None and len(structured_json) <= room else None
        return GuardedOutput(bounded, kept_structured, _joined_text(bounded), size, True, artifact_id)


GUARD_IN_THREAD_BYTES = 1024 * 1024
"""A result whose :func:`rough_size` is over this is guarded in a worker thread, off the event loop."""
_MANY_BLOCKS = 1000


def rough_size(result: Any) -> int:
    """Characters of text and base64 data in a result (cheap; no encoding); many blocks count
    as big whatever their size, since each one costs the guard a model dump."""
    if len(result.content) > _MANY_BLOCKS:
        return GUARD_IN_THREAD_BYTES + 1
    size = 0
    for block in result.content:
        if type(block) is types.TextContent:  # the common block; a missing attribute costs pydantic a raise
            size += len(block.text)
            continue
        size += len(getattr(block, "text", "") or "") + len(getattr(block, "data", "") or "")
        resource = getattr(block, "resource", None)
        if resource is not None:
            size += len(getattr(resource, "text", "") or "") + len(getattr(resource, "blob", "") or "")
    return size
