"""The scanner: :func:`screen` runs every rule over one item and returns a :class:`ScreeningResult`."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from patchbay.core.errors import ValidationError
from patchbay.runtime.screening._channels import base64_texts, html_comments, url_query_texts
from patchbay.runtime.screening._normalize import normalize
from patchbay.runtime.screening._phrases import PHRASE_RULES, find_phrases
from patchbay.runtime.screening._unicode import scan_unicode

__all__ = ["DEFAULT_MAX_BYTES", "MAX_SPANS_PER_FINDING", "RULES", "Finding", "ScreeningResult", "screen"]

DEFAULT_MAX_BYTES = 256 * 1024
"""Default of ``Settings.screening_max_bytes``: UTF-8 bytes of one item that are scanned."""
MAX_SPANS_PER_FINDING = 16
"""Spans kept per finding (the first ones, merged); ``Finding.count`` still counts every match."""
MAX_SOURCE_CHARS = 1024
_MAX_DEPTH = 2  # base64 inside base64 is decoded once more, no deeper

RULES: dict[str, str] = {
    "instruction_override": "tells the reader to drop its previous instructions",
    "role_switch": "switches the reader into another role or mode (admin mode, DAN, chat-template headers)",
    "system_prompt_request": "asks the reader to reveal its system prompt or instructions",
    "secret_request": "asks for secrets or credentials, or to send them somewhere",
    "ai_directive": "addresses an AI that reads the text ('if you are an LLM', 'note to the AI')",
    "concealment": "asks to keep something from the user",
    "unicode_tags": "holds Unicode tag characters (invisible ASCII) outside emoji flag sequences",
    "bidi_control": "holds bidi embeddings, overrides or isolates that can reorder what is displayed",
    "invisible_characters": "holds zero-width or other invisible characters outside legitimate joining contexts",
    "scan_limit": "is larger than the scan bound; the middle was not scanned",
}
"""Every rule name a finding can carry, with what it means."""

assert set(PHRASE_RULES) <= set(RULES)


@dataclass(frozen=True, slots=True)
class Finding:
    """What one rule found in one item, through one channel. Never holds any of the text.

    Attributes:
        rule: a key of :data:`RULES`.
        via: where the match was read: ``text`` (the item as given), ``html_comment``, ``base64``
            (decoded from a base64 run; ``base64>base64`` when nested), ``url`` (a URL's decoded
            query or fragment), ``unicode_tags`` or ``variation_selectors`` (decoded from invisible
            characters).
        spans: ``(start, end)`` code-point offsets into the original text, merged and sorted, at
            most :data:`MAX_SPANS_PER_FINDING`. For decoded channels a span covers the encoded run.
        count: how many matches there were (spans may be fewer: merged or capped).
        languages: languages of the phrase patterns that matched (``en``, ``zh``, ...); empty for
            the Unicode rules and ``scan_limit``.
    """

    rule: str
    via: str
    spans: tuple[tuple[int, int], ...]
    count: int
    languages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ScreeningResult:
    """The outcome of :func:`screen` for one item.

    Attributes:
        source: what the caller said the item is (``mcp:<server>:<tool or uri>``, ...).
        findings: one :class:`Finding` per (rule, channel), ordered by rule then channel.
        length: code points of the screened text (checked by ``apply_policy``).
        scanned_chars: code points actually scanned (less than ``length`` beyond the bound).
        mentions: matches judged to be quoted examples in a discussion of attacks (not findings).
    """

    source: str
    findings: tuple[Finding, ...]
    length: int
    scanned_chars: int
    mentions: int = 0

    @property
    def untrusted(self) -> bool:
        """True when any rule fired: the item must be labelled as untrusted or withheld."""
        return bool(self.findings)

    @property
    def rules(self) -> tuple[str, ...]:
        """The distinct rule names of the findings, sorted."""
        return tuple(sorted({finding.rule for finding in self.findings}))

    @property
    def truncated(self) -> bool:
        """The item was over the byte bound and its middle was not scanned."""
        return self.scanned_chars < self.length


@dataclass
class _Collector:
    spans: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    languages: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    mentions: int = 0

    def add(self, rule: str, via: str, start: int, end: int, language: str | None = None) -> None:
        key = (rule, via)
        self.counts[key] = self.counts.get(key, 0) + 1
        spans = self.spans.setdefault(key, [])
        if len(spans) < 4 * MAX_SPANS_PER_FINDING:  # enough to merge down to the cap
            spans.append((start, end))
        if language:
            self.languages.setdefault(key, set()).add(language)

    def findings(self) -> tuple[Finding, ...]:
        out = []
        for key in sorted(self.spans):
            merged: list[tuple[int, int]] = []
            for start, end in sorted(self.spans[key]):
                if merged and start <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], end))
                else:
                    merged.append((start, end))
            out.append(
                Finding(
                    rule=key[0],
                    via=key[1],
                    spans=tuple(merged[:MAX_SPANS_PER_FINDING]),
                    count=self.counts[key],
                    languages=tuple(sorted(self.languages.get(key, ()))),
                )
            )
        return tuple(out)


def _scan_hidden(text: str, via: str, span: tuple[int, int], depth: int, out: _Collector) -> None:
    """Phrase rules over text decoded from a hidden channel; every finding gets the run's span."""
    normalized = normalize(text)
    for hit in find_phrases(normalized.text, mentions=False):
        out.add(hit.rule, via, span[0], span[1], hit.language)
    if depth < _MAX_DEPTH:
        for decoded in base64_texts(text):
            _scan_hidden(decoded.text, f"{via}>base64", span, depth + 1, out)


def _scan_region(text: str, offset: int, out: _Collector) -> None:
    hits, hidden = scan_unicode(text)
    for hit in hits:
        out.add(hit.rule, "text", offset + hit.start, offset + hit.end)
    for item in hidden:
        _scan_hidden(item.text, item.via, (offset + item.start, offset + item.end), 1, out)

    comments = list(html_comments(text))
    comment_starts = [start for start, _ in comments]
    normalized = normalize(text)
    for phrase in find_phrases(normalized.text, mentions=True):
        start, end = normalized.to_original(phrase.start, phrase.end)
        index = bisect.bisect_right(comment_starts, start) - 1
        if index >= 0 and end <= comments[index][1]:
            continue  # inside a comment: the comment pass below reports it
        if phrase.mention:
            out.mentions += 1
        else:
            out.add(phrase.rule, "text", offset + start, offset + end, phrase.language)

    if comments:
        # All bodies in one pass, joined by NUL (no pattern matches across it), mapped back by bisect.
        joined_starts, position = [], 0
        for body_start, body_end in comments:
            joined_starts.append(position)
            position += body_end - body_start + 1
        bodies = normalize("\0".join(text[body_start:body_end] for body_start, body_end in comments))
        for phrase in find_phrases(bodies.text, mentions=True):
            if phrase.mention:
                out.mentions += 1
                continue
            start, end = bodies.to_original(phrase.start, phrase.end)
            index = bisect.bisect_right(joined_starts, start) - 1
            base = offset + comments[index][0] - joined_starts[index]
            out.add(phrase.rule, "html_comment", base + start, base + end, phrase.language)

    for decoded in base64_texts(text):
        _scan_hidden(decoded.text, "base64", (offset + decoded.start, offset + decoded.end), 1, out)
    for decoded in url_query_texts(text):
        _scan_hidden(decoded.text, "url", (offset + decoded.start, offset + decoded.end), _MAX_DEPTH, out)


def _utf8_prefix_chars(text: str, limit: int) -> int:
    """How many leading characters of ``text`` fit in ``limit`` UTF-8 bytes."""
    return len(text[:limit].encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore"))


def _utf8_suffix_chars(text: str, limit: int) -> int:
    """How many trailing characters of ``text`` fit in ``limit`` UTF-8 bytes."""
    if limit <= 0:
        return 0
    return len(text[-limit:].encode("utf-8", "surrogatepass")[-limit:].decode("utf-8", "ignore"))


def screen(text: str, *, source: str, max_bytes: int = DEFAULT_MAX_BYTES) -> ScreeningResult:
    """Screen one item (a prompt expansion, resource content or tool result) before it reaches a
    model's context (expanded prompts must pass injection detection, and server output is untrusted
    text).

    Args:
        text: the item's text, as it would be given to the model.
        source: what the item is, for the event and the label, e.g. ``mcp:wiki:wiki://docs/a`` or
            ``mcp:git:git_log``; 1–1024 characters.
        max_bytes: UTF-8 bytes scanned (``Settings.screening_max_bytes``). An item within the
            bound is scanned whole. A bigger one is scanned in its first and last ``max_bytes / 2``
            bytes (cut on character boundaries); the middle is not read, and a ``scan_limit``
            finding with the unscanned span makes the result untrusted, because what was not read
            cannot be vouched for.

    Returns:
        a :class:`ScreeningResult`; ``untrusted`` is True when any rule fired.

    Raises:
        ValidationError: (code ``validation_error``) ``text`` is not a string, ``source`` is empty,
            not a string or too long, or ``max_bytes`` is below 1024.
    """
    if not isinstance(text, str):
        raise ValidationError("screening needs text (a str)", details={"field": "text"})
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_SOURCE_CHARS:
        raise ValidationError(f"source must be 1-{MAX_SOURCE_CHARS} characters", details={"field": "source"})
    if not isinstance(max_bytes, int) or max_bytes < 1024:
        raise ValidationError("max_bytes must be an integer of at least 1024", details={"field": "max_bytes"})

    out = _Collector()
    length = len(text)
    whole = length * 4 <= max_bytes or (length <= max_bytes and len(text.encode("utf-8", "surrogatepass")) <= max_bytes)
    if whole:
        _scan_region(text, 0, out)
        scanned = length
    else:
        half = max_bytes // 2
        head = _utf8_prefix_chars(text, half)
        tail = min(length - head, _utf8_suffix_chars(text, max_bytes - half))
        _scan_region(text[:head], 0, out)
        _scan_region(text[length - tail :], length - tail, out)
        out.add("scan_limit", "text", head, length - tail)
        scanned = head + tail
    return ScreeningResult(
        source=source, findings=out.findings(), length=length, scanned_chars=scanned, mentions=out.mentions
    )
