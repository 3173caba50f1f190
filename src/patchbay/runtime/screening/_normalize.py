"""Text normalisation for matching, with a map from every normalised span back to the original.

:func:`normalize` applies NFKC and case folding, folds typographic quotes, collapses whitespace,
drops format characters and reads look-alike Cyrillic/Greek letters inside Latin words as Latin.
The per-character classification is memoised process-wide.

Design: docs/screening.md
"""

from __future__ import annotations

import bisect
import re
import threading
import unicodedata
from dataclasses import dataclass, field

__all__ = ["Normalized", "is_ignorable", "normalize"]

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"'})

_CONFUSABLES = {
    # Cyrillic
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
    "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ѵ": "v",
    # Greek
    "ο": "o", "ν": "v", "ι": "i", "ρ": "p", "α": "a", "κ": "k",
}  # fmt: skip
"""Lower-case look-alikes read as Latin inside words that also hold ASCII letters."""

_HANGUL_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")


def is_ignorable(char: str) -> bool:
    """True for characters dropped before matching: format characters (category ``Cf``: zero-width
    characters, soft hyphen, bidi controls, tags), variation selectors and Hangul fillers."""
    code = ord(char)
    return (
        unicodedata.category(char) == "Cf"
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or 0x180B <= code <= 0x180F
        or char in _HANGUL_FILLERS
        or 0xE0000 <= code <= 0xE0FFF
    )


def _fold(chars: str) -> str:
    """NFKC-casefold-NFKC of one character or one base+marks cluster, quotes folded."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", chars).casefold())
    return folded.translate(_QUOTES)


def _fold_run(run: str) -> str:
    """The fold of a run of regular characters: the same as folding each one, at C speed."""
    if run.isascii():
        return run.lower()
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", run).casefold())
    if len(folded) == len(run):
        return folded
    return "".join(_FOLDS[char] or "" for char in run)  # pragma: no cover - a composition we did not foresee


def _is_jamo(code: int) -> bool:
    return 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F or 0xA960 <= code <= 0xA97F or 0xD7B0 <= code <= 0xD7FF


class _Folds(dict[str, str | None]):
    """Per-character folds, filled on demand; ``irregular`` holds the characters the fast path
    (:func:`_fold_run` over a run) cannot handle: dropped characters, whitespace other than a space,
    folds that are not one character, look-alikes, combining marks, conjoining jamo, curly quotes."""

    def __init__(self) -> None:
        super().__init__()
        self.irregular: set[str] = set()
        self.combining: set[str] = set()
        self.version = 0
        self.lock = threading.Lock()

    def __missing__(self, char: str) -> str | None:
        value: str | None
        if is_ignorable(char):
            value = None
        elif char.isspace():
            value = " "
        else:
            value = _fold(char)
        mark = unicodedata.category(char).startswith("M") or bool(unicodedata.combining(char))
        irregular = char != " " and (
            value is None
            or len(value) != 1
            or char.isspace()
            or char in _CONFUSABLES
            or value in _CONFUSABLES
            or char in _QUOTE_CHARS
            or mark
            or _is_jamo(ord(char))
            or value != unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", char).casefold())
        )
        with self.lock:
            if irregular:
                self.irregular.add(char)
                self.version += 1
            if mark:
                self.combining.add(char)
            self[char] = value
        return value

    def learn(self, text: str) -> None:
        """Classify every character of ``text`` not seen before."""
        if text.isascii():
            return  # all of ASCII is classified at import
        for char in set(text).difference(self):
            self[char]  # fills the entry through __missing__


_QUOTE_CHARS = frozenset("‘’‚‛“”„‟")
_FOLDS = _Folds()
for _code in range(128):
    _FOLDS[chr(_code)]  # classify all of ASCII up front
_pattern_cache: tuple[int, re.Pattern[str]] | None = None


def _irregular_pattern() -> re.Pattern[str]:
    """What the slow path handles: whitespace runs, a base with marks, irregular characters."""
    global _pattern_cache
    cached = _pattern_cache
    if cached is not None and cached[0] == _FOLDS.version:
        return cached[1]
    with _FOLDS.lock:
        version = _FOLDS.version
        irregular = "".join(re.escape(c) for c in sorted(_FOLDS.irregular))
        combining = "".join(re.escape(c) for c in sorted(_FOLDS.combining))
    parts = [r"\s{2,}"]
    if combining:
        parts.append(f"(?s:.)[{combining}]+")
    parts.append(f"[{irregular}]+")
    pattern = re.compile("|".join(parts))
    _pattern_cache = (version, pattern)
    return pattern


def _ascii_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()


def _in_latin_word(text: str, index: int) -> bool:
    """The letter at ``index`` belongs to a word (alphabetic run, 20 chars each way) with an ASCII letter."""
    for step in (-1, 1):
        position = index + step
        for _ in range(20):
            if not 0 <= position < len(text) or not text[position].isalpha():
                break
            if _ascii_letter(text[position]):
                return True
            position += step
    return False


@dataclass(slots=True)
class Normalized:
    """A normalised text and its map back to the original.

    Attributes:
        text: the normalised text the rules match on.
        original_length: length of the original text (code points).
    """

    text: str
    original_length: int
    _norm_starts: list[int] = field(default_factory=list)
    _orig_starts: list[int] = field(default_factory=list)
    _orig_ends: list[int] = field(default_factory=list)
    _linear: list[bool] = field(default_factory=list)

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map the normalised span ``[start, end)`` to the original span it came from.

        Args:
            start, end: offsets into :attr:`text`, ``0 <= start < end <= len(text)``.

        Returns:
            ``(start, end)`` offsets (code points) into the original text, covering every original
            character that produced a character of the span (dropped characters inside it included).
        """
        if not self._norm_starts or end <= start:
            return (0, 0)
        return (self._orig_position(start, first=True), self._orig_position(end - 1, first=False))

    def _orig_position(self, index: int, *, first: bool) -> int:
        piece = bisect.bisect_right(self._norm_starts, index) - 1
        if self._linear[piece]:
            position = self._orig_starts[piece] + (index - self._norm_starts[piece])
            return position if first else position + 1
        return self._orig_starts[piece] if first else self._orig_ends[piece]


class _Builder:
    def __init__(self, original: str) -> None:
        self.original = original
        self.chunks: list[str] = []
        self.length = 0
        self.result = Normalized(text="", original_length=len(original))
        self.last_space = True  # a leading space is never emitted

    def emit(self, out: str, orig_start: int, orig_end: int) -> None:
        if not out:
            return
        if out[0] == " " and self.last_space:
            if len(out) == orig_end - orig_start:  # linear: drop the first character in step
                out, orig_start = out[1:], orig_start + 1
            else:
                out = out[1:]
            if not out:
                return
        result = self.result
        linear = len(out) == orig_end - orig_start
        if linear and result._linear and result._linear[-1] and result._orig_ends[-1] == orig_start:
            result._orig_ends[-1] = orig_end
        else:
            result._norm_starts.append(self.length)
            result._orig_starts.append(orig_start)
            result._orig_ends.append(orig_end)
            result._linear.append(linear)
        self.chunks.append(out)
        self.length += len(out)
        self.last_space = out[-1] == " "

    def slow(self, start: int, end: int) -> None:
        text = self.original
        index = start
        while index < end:
            char = text[index]
            stop = index + 1
            while stop < end and text[stop] in _FOLDS.combining:
                stop += 1
            if char.isspace():
                run_end = stop
                while run_end < end and (text[run_end].isspace() or text[run_end] in _FOLDS.combining):
                    run_end += 1
                self.emit(" ", index, run_end)
                index = run_end
                continue
            if stop == index + 1:
                folded = _FOLDS[char]
                if folded is None:
                    index = stop
                    continue
                if char in _CONFUSABLES or (len(folded) == 1 and folded in _CONFUSABLES):
                    key = char if char in _CONFUSABLES else folded
                    if _in_latin_word(text, index):
                        folded = _CONFUSABLES[key]
            else:
                folded = _fold(text[index:stop])
            self.emit(folded, index, stop)
            index = stop


def normalize(text: str) -> Normalized:
    """Normalise ``text`` for matching (see the module docstring) and keep the span map.

    Args:
        text: any string; it is not modified.

    Returns:
        a :class:`Normalized` whose ``to_original`` maps spans back to ``text``.
    """
    _FOLDS.learn(text)
    pattern = _irregular_pattern()
    builder = _Builder(text)
    cursor = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        if start > cursor:
            builder.emit(_fold_run(text[cursor:start]), cursor, start)
        builder.slow(start, end)
        cursor = end
    if cursor < len(text):
        builder.emit(_fold_run(text[cursor:]), cursor, len(text))
    builder.result.text = "".join(builder.chunks)
    return builder.result
