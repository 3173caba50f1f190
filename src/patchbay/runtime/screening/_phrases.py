"""Phrase rules: what injected instructions say, in several languages, matched on normalised text.

Rules (names are stable): ``instruction_override``, ``role_switch``, ``system_prompt_request``,
``secret_request``, ``ai_directive``, ``concealment``. The patterns live in ``_rules_en`` and
``_rules_intl``; this module finds where they can start (heads), runs them and applies the context
heuristics that keep security writing out (a quoted or exemplified match near words about attacks
is a *mention*: counted, not a finding).

Design: docs/screening.md
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from patchbay.runtime.screening._groups import ZH_GAP, Group
from patchbay.runtime.screening._rules_en import EN
from patchbay.runtime.screening._rules_intl import OTHER, ZH

__all__ = ["GROUPS", "PHRASE_RULES", "PhraseHit", "find_phrases", "raw_matches"]

PHRASE_RULES = (
    "instruction_override",
    "role_switch",
    "system_prompt_request",
    "secret_request",
    "ai_directive",
    "concealment",
)

GROUPS: tuple[Group, ...] = (*EN, *ZH, *OTHER)


@dataclass(frozen=True, slots=True)
class PhraseHit:
    """One match: ``rule``, ``language`` and the ``[start, end)`` span in the *normalised* text."""

    rule: str
    language: str
    start: int
    end: int
    mention: bool = False


# --- Where a match can start --------------------------------------------------------------------

_NO_SPACES = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(f"[^\\W{_NO_SPACES}]+(?:'[^\\W{_NO_SPACES}]+)*")
"""A word for head lookup: letters/digits/underscore, apostrophes inside; CJK and Hangul excluded."""


def _index() -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[tuple[str, tuple[int, ...]], ...]], re.Pattern[str]]:
    """Word heads -> groups; literal heads by first character -> groups; one regex for all literals."""
    words: dict[str, list[int]] = {}
    literals: dict[str, list[int]] = {}
    for number, group in enumerate(GROUPS):
        for head in group.heads:
            target = words if _TOKEN.fullmatch(head) else literals
            target.setdefault(head, []).append(number)
    by_first: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for literal, numbers in literals.items():
        by_first.setdefault(literal[0], []).append((literal, tuple(numbers)))
    any_literal = re.compile("|".join(map(re.escape, sorted(literals, key=len, reverse=True))))
    return (
        {word: tuple(numbers) for word, numbers in words.items()},
        {first: tuple(entries) for first, entries in by_first.items()},
        any_literal,
    )


_WORD_HEADS, _LITERALS_BY_FIRST, _ANY_LITERAL = _index()

# --- Context heuristics -------------------------------------------------------------------------

_DISCUSSION = re.compile(
    r"inject|jailbreak|attack|adversar|malicious|exploit|red[ -]team|owasp|llm01|mitigat|defen[cs]e|detect"
    r"|guardrail|phishing|threat|hijack|manipulat"
    r"|注入|攻击|攻擊|越狱|越獄|恶意|惡意|防御|防禦|检测|檢測|过滤|過濾"
    r"|inyecci|ataque|atacante|malicios|attaque|attaquant|malveill|angriff|angreifer|bösartig|manipul"
    r"|インジェクション|攻撃|脱獄|悪意|인젝션|공격|injeção|iniezione|attacco|инъекц|атак"
)
_FRAMING = re.compile(
    r"(?:such as|like|e\.g\.,?|eg|for example,?|for instance,?|known as|so-called|called|the phrase|phrases?|strings?|sentences?"
    r"|text|wording|lines?|prompts?|payloads?|patterns?|examples?:?"
    r"|例如|比如|诸如|諸如|类似|類似|像是|像|譬如|如|让模型|讓模型|让它|讓它|要求模型|要求它|诱导模型|誘導模型|使模型"
    r"|como|frases como|comme|phrases comme|wie|sätzen wie|のような|ような|같은)"
    r"[\s\"'`«「『:(-]*$"
)
_QUOTE_PAIRS = (('"', '"'), ("'", "'"), ("`", "`"), ("«", "»"), ("「", "」"), ("『", "』"), ("‹", "›"), ("《", "》"))
_NEGATION = re.compile(
    r"(?:\b(?:never|not|don't|dont|do not|avoid|refuse to|nunca|jamais|niemals|nicht)\b(?: [\w']+){0,4}[ ,]*"
    r"|(?:不要|不得|切勿|请勿|請勿|禁止|别|別|不能|不可|绝不|絕不|决不|決不)" + ZH_GAP + "{0,4})$"
)
_LEAD_WORDS = frozenset(
    "please pls kindly now just simply and then so also first immediately instead hereby hey ok okay always completely "
    "totally entirely fully actually really quietly silently secretly assistant ai model bot chatgpt claude gpt gemini "
    "copilot llm agent important urgent note or but step finally next".split()
)
_MODALS = frozenset("must should shall will can need to have gotta better".split())
_YOU_NEAR = re.compile(r"\b(?:you|u|ya|you'll|you'd)\b(?: [\w']+){0,3}$")
_ZH_DESCRIPTIVE = re.compile("(?:会|會|将|將|可以|能够|能夠|自动|自動|默认|默認|则|則|被|也会|也會|并|並)$")


def _imperative(prefix: str) -> bool:
    """Whether a verb right after ``prefix`` starts a clause (see the module docstring)."""
    stripped = prefix.rstrip()
    if not stripped:
        return True
    if not (stripped[-1].isalnum() or stripped[-1] == "'"):
        return True
    if stripped[-1] == "'" and (len(stripped) == 1 or not stripped[-2].isalnum()):
        return True  # an opening quote, not an apostrophe
    words = stripped.split(" ")
    last = words[-1].strip("'")
    if last in _LEAD_WORDS:
        return True
    if last in _MODALS:
        return bool(_YOU_NEAR.search(" ".join(words[:-1])))
    return False


def _quoted(text: str, start: int, end: int) -> bool:
    """Whether ``[start, end)`` sits between a pair of quotes (160 chars before, 240 after at most)."""
    for opening, closing in _QUOTE_PAIRS:
        left = text.rfind(opening, max(0, start - 160), start + 1)
        if left == -1:
            continue
        if opening == "'" and left > 0 and text[left - 1].isascii() and text[left - 1].isalnum():
            continue  # an apostrophe inside a word, not an opening quote
        if closing in text[left + 1 : start] and opening != closing:
            continue
        right = text.find(closing, end - 1 if text[end - 1] == closing else end, min(len(text), end + 240))
        if right == -1:
            continue
        if opening == "'" and right + 1 < len(text) and text[right + 1].isascii() and text[right + 1].isalnum():
            continue
        return True
    return False


def _is_mention(text: str, start: int, end: int) -> bool:
    """Quoted or framed as an example, with talk of attacks within 400 characters either side."""
    low, high = max(0, start - 400), min(len(text), end + 400)
    if not _DISCUSSION.search(text, low, high):
        return False
    if _quoted(text, start, end):
        return True
    return bool(_FRAMING.search(text[max(low, start - 40) : start]))


def _candidates(text: str) -> dict[int, list[int]]:
    """Group index -> sorted positions where one of its heads occurs."""
    found: dict[int, list[int]] = {}
    for match in _TOKEN.finditer(text):
        numbers = _WORD_HEADS.get(match.group())
        if numbers:
            for number in numbers:
                found.setdefault(number, []).append(match.start())
    literal_hits: set[int] = set()
    head = _ANY_LITERAL.search(text)
    while head is not None:  # one pass for every literal head; heads may overlap, so step by one
        position = head.start()
        for literal, numbers in _LITERALS_BY_FIRST[text[position]]:
            if text.startswith(literal, position):
                for number in numbers:
                    found.setdefault(number, []).append(position)
                    literal_hits.add(number)
        head = _ANY_LITERAL.search(text, position + 1)
    for number in literal_hits:
        found[number].sort()
    return found


def _anchored(normalized: str) -> Iterator[tuple[Group, re.Match[str]]]:
    """Each group's matches, tried only where one of its heads occurs; non-overlapping per group."""
    candidates = _candidates(normalized)
    for number in sorted(candidates):
        group = GROUPS[number]
        last_end = -1
        for position in candidates[number]:
            if position < last_end:
                continue
            match = group.pattern.match(normalized, position)
            if match is None or match.end() <= position:
                continue
            last_end = match.end()
            yield group, match


def find_phrases(normalized: str, *, mentions: bool) -> Iterator[PhraseHit]:
    """Every phrase-rule match in a normalised text, after the gates (imperative, negation).

    Args:
        normalized: text from :func:`patchbay.runtime.screening._normalize.normalize`.
        mentions: recognise mentions (quoted or framed examples in a discussion of attacks); when
            False every match is a finding.

    Yields:
        :class:`PhraseHit` objects (spans in ``normalized``), ``mention=True`` for mentions, group
        by group; within a group, matches do not overlap.
    """
    for group, match in _anchored(normalized):
        start, end = match.span()
        prefix = normalized[max(0, start - 60) : start]
        if group.gate == "en" and not _imperative(prefix):
            continue
        if group.gate == "zh" and _ZH_DESCRIPTIVE.search(prefix):
            continue
        if group.negatable and _NEGATION.search(prefix[-40:]):
            continue
        mention = mentions and _is_mention(normalized, start, end)
        yield PhraseHit(group.rule, group.language, start, end, mention)


def raw_matches(normalized: str, *, anchored: bool = True) -> list[tuple[str, str, int, int]]:
    """Every pattern match before the gates, as ``(rule, language, start, end)`` sorted.

    ``anchored=False`` runs each group's pattern over the whole text instead of only at its heads:
    the reference the tests compare the head tables against (same matches, or a head is missing).
    """
    if anchored:
        found = [(group.rule, group.language, *match.span()) for group, match in _anchored(normalized)]
    else:
        found = [
            (group.rule, group.language, *match.span())
            for group in GROUPS
            for match in group.pattern.finditer(normalized)
            if match.end() > match.start()
        ]
    return sorted(found)
