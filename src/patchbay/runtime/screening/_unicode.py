"""Invisible, bidirectional and tag characters: the three Unicode rules and the hidden text they carry.

Rules (names are stable): ``unicode_tags`` (tag characters, decoded and scanned by the phrase rules
as ``via="unicode_tags"``), ``bidi_control`` (embeddings, overrides and isolates outside RTL text or
left open) and ``invisible_characters`` (zero-width runs that do not join letters, and runs of
variation selectors, decoded as ``via="variation_selectors"``). Every pass is bounded; the scan
stops after :data:`MAX_HITS` flagged runs.

Design: docs/screening.md
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["MAX_HITS", "Hidden", "UnicodeHit", "scan_unicode"]

MAX_HITS = 4096
"""Most flagged runs reported per scanned text; the scan stops there (the item is flagged anyway)."""

_CANDIDATES = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200d\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]+"
)
_BIDI_OPENERS = frozenset("\u202a\u202b\u202d\u202e\u2066\u2067\u2068")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_EMBEDDINGS = frozenset("\u202a\u202b\u202d\u202e")
_ISOLATES = frozenset("\u2066\u2067\u2068")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]")
_LINE_WINDOW = 2048
_BLACK_FLAG = "\U0001f3f4"
_CANCEL_TAG = "\U000e007f"


@dataclass(frozen=True, slots=True)
class UnicodeHit:
    """One flagged run: ``rule`` and the ``[start, end)`` code-point span in the scanned text."""

    rule: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Hidden:
    """Text decoded from a flagged run (tag characters or variation selectors), to be re-scanned."""

    via: str
    start: int
    end: int
    text: str


def _is_tag(char: str) -> bool:
    return 0xE0000 <= ord(char) <= 0xE007F


def _is_selector(char: str) -> bool:
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _kind(char: str) -> str:
    if _is_tag(char):
        return "tag"
    if _is_selector(char):
        return "selector"
    if char in _BIDI:
        return "bidi"
    return "invisible"


_KINDS: dict[str, str] = {}


def _joins_legitimately(char: str) -> bool:
    """A neighbour next to which ZWJ/ZWNJ/ZWSP are ordinary: non-Latin script letters, marks, emoji."""
    if not char:
        return False
    code = ord(char)
    if code < 0x0590:  # Latin, Greek, Cyrillic, Armenian, ASCII punctuation and digits
        return False
    if 0x1E00 <= code <= 0x1EFF or 0xFF00 <= code <= 0xFF5F or 0x2000 <= code <= 0x206F:
        return False  # Latin Extended Additional, fullwidth ASCII, general punctuation
    category = unicodedata.category(char)
    return category[0] in "LM" or category in ("So", "Sk") or 0x1F000 <= code <= 0x1FAFF


def _visible_neighbour(text: str, index: int, step: int) -> str:
    """The nearest character from ``index`` in direction ``step`` that is not a variation selector."""
    if 0 <= index < len(text) and text[index] < "\ufe00":
        return text[index]
    for _ in range(8):
        if not 0 <= index < len(text):
            return ""
        if not _is_selector(text[index]):
            return text[index]
        index += step
    return ""


def _line_bounds(text: str, index: int) -> tuple[int, int]:
    low = max(0, index - _LINE_WINDOW)
    start = text.rfind("\n", low, index) + 1 or low
    end = text.find("\n", index, min(len(text), index + _LINE_WINDOW))
    return start, (end if end != -1 else min(len(text), index + _LINE_WINDOW))


def _bidi_line_flagged(line: str) -> bool:
    """Whether the bidi controls of one line are suspicious (see the module docstring)."""
    if not _RTL.search(line):
        return True
    embeddings = isolates = 0
    for char in line:
        if char in _EMBEDDINGS:
            embeddings += 1
        elif char == "\u202c":
            embeddings = max(0, embeddings - 1)
        elif char in _ISOLATES:
            isolates += 1
        elif char == "\u2069":
            isolates = max(0, isolates - 1)
            embeddings = 0  # PDI closes the embeddings opened inside the isolate
    return embeddings > 0 or isolates > 0


def _decode_selectors(run: str) -> str | None:
    data = bytearray()
    for char in run:
        code = ord(char)
        data.append(code - 0xFE00 if code <= 0xFE0F else code - 0xE0100 + 16)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _split(run: str, offset: int) -> Iterator[tuple[str, int, int]]:
    """Sub-runs of one kind: ``(kind, start, end)``."""
    if len(run) == 1:
        kind = _KINDS.get(run)
        if kind is None:
            kind = _KINDS[run] = _kind(run)
        yield kind, offset, offset + 1
        return
    start = 0
    for index in range(1, len(run) + 1):
        if index == len(run) or _kind(run[index]) != _kind(run[start]):
            yield _kind(run[start]), offset + start, offset + index
            start = index


def scan_unicode(text: str) -> tuple[list[UnicodeHit], list[Hidden]]:
    """Find the runs the three Unicode rules flag, and the hidden text some of them carry.

    Args:
        text: the text to scan (the original, not normalised).

    Returns:
        ``(hits, hidden)``: flagged runs with their rule, and decoded hidden texts with the span of
        the run they came from (both in code points of ``text``).
    """
    hits: list[UnicodeHit] = []
    hidden: list[Hidden] = []
    bidi_lines: dict[int, bool] = {}
    for match in _CANDIDATES.finditer(text):
        if len(hits) >= MAX_HITS:
            break
        for kind, start, end in _split(match.group(), match.start()):
            if kind == "tag":
                before = text[start - 1] if start else ""
                run = text[start:end]
                if (
                    before == _BLACK_FLAG
                    and run[-1] == _CANCEL_TAG
                    and 2 <= len(run) <= 33
                    and all(c.isalnum() for c in (chr(ord(t) - 0xE0000) for t in run[:-1]))
                ):
                    continue
                hits.append(UnicodeHit("unicode_tags", start, end))
                decoded = "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)
                if decoded.strip():
                    hidden.append(Hidden("unicode_tags", start, end, decoded))
            elif kind == "selector":
                if end - start >= 2:
                    hits.append(UnicodeHit("invisible_characters", start, end))
                    decoded_text = _decode_selectors(text[start:end])
                    if decoded_text and decoded_text.strip():
                        hidden.append(Hidden("variation_selectors", start, end, decoded_text))
            elif kind == "bidi":
                line_start, line_end = _line_bounds(text, start)
                flagged = bidi_lines.get(line_start)
                if flagged is None:
                    flagged = bidi_lines[line_start] = _bidi_line_flagged(text[line_start:line_end])
                if flagged:
                    hits.append(UnicodeHit("bidi_control", start, end))
            else:
                if start == 0 and text[start:end] == "\ufeff":
                    continue  # a byte order mark at the very start
                if end - start < 3 and not (
                    _joins_legitimately(_visible_neighbour(text, start - 1, -1))
                    or _joins_legitimately(_visible_neighbour(text, end, 1))
                ):
                    hits.append(UnicodeHit("invisible_characters", start, end))
                elif end - start >= 3:
                    hits.append(UnicodeHit("invisible_characters", start, end))
    return hits, hidden
