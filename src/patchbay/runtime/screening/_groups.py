"""The building blocks of the phrase rules: a :class:`Group` of patterns and small helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CLAUSE_START", "ZH_GAP", "Group", "alt", "first_words"]

ZH_GAP = r"[^。！？!?,;；:：\n]"
"""One character inside a Chinese or Japanese clause (a gap never crosses sentence punctuation)."""
CLAUSE_START = r"(?:(?<![\s\S])|(?<=[.!?:;\[(<>\"'*#|-] )|(?<=[.!?:;\[(<>\"'*#|-]))"
"""Zero-width: at the start of the text or right after sentence punctuation, a bracket or a quote."""


def alt(*words: str) -> str:
    """A non-capturing alternation, longest alternative first (so ``提示词`` wins over ``提示``)."""
    return "(?:" + "|".join(sorted(words, key=len, reverse=True)) + ")"


@dataclass(frozen=True, slots=True)
class Group:
    """Patterns of one rule in one language.

    ``heads`` are the words (or, for scripts without spaces and for symbols, the literal strings)
    a match can start with: the pattern is only tried where a head occurs, which keeps the cost
    of many groups at one tokenising pass plus a few anchored attempts.
    """

    rule: str
    language: str
    heads: tuple[str, ...]
    pattern: re.Pattern[str]
    gate: str | None = None  # "en": clause-initial imperative; "zh": not after 会/将/...
    negatable: bool = True


def first_words(*phrases: str) -> tuple[str, ...]:
    """The distinct first words of plain phrases (the heads of an alternation of them)."""
    return tuple(sorted({phrase.split(" ")[0] for phrase in phrases}))
