"""Injection screening: a scanner for prompt expansions, resource contents and tool results before
they reach a model's context: expanded prompts must pass prompt-injection detection, and MCP output
enters the context as untrusted text.

Usage::

    result = screen(text, source="mcp:wiki:wiki://docs/a", max_bytes=settings.screening_max_bytes)
    if result.untrusted:
        event_log.append(CONTENT_SCREENED, screened_event_payload(result, settings.screening_policy))
    context_text = apply_policy(text, result, settings.screening_policy)

Rules (:data:`RULES`; each finding carries its rule name and code-point spans, never text):

* phrase rules over normalised text, in English, Chinese (simplified and traditional), Spanish,
  French, German, Italian, Portuguese, Russian, Japanese and Korean (what each covers, and how it
  avoids flagging security writing that *discusses* injection: ``_phrases``) —
  ``instruction_override``, ``role_switch``, ``system_prompt_request``, ``secret_request``,
  ``ai_directive``, ``concealment``;
* Unicode rules over the original text (``_unicode``) — ``unicode_tags``, ``bidi_control``,
  ``invisible_characters``; text smuggled in tag characters or variation selectors is decoded and
  scanned by the phrase rules;
* hidden channels (``_channels``): HTML comment bodies, base64 runs that decode to text and the
  decoded queries of URLs are scanned by the phrase rules; findings say ``via="html_comment"``,
  ``via="base64"`` or ``via="url"`` and, for base64 and URLs, span the encoded run;
* ``scan_limit``: the item is over ``Settings.screening_max_bytes``; only its head and tail were
  scanned.

Normalisation before matching (``_normalize``): NFKC + case folding, whitespace collapsed,
zero-width and other format characters dropped, look-alike Cyrillic/Greek letters inside Latin
words read as Latin; spans map back to the original text.

Cost: every pass is linear in the scanned text, and at most ``max_bytes``
(``Settings.screening_max_bytes``, default 256 KiB) of an item is read.

Design: docs/screening.md
"""

from patchbay.runtime.screening._policy import CONTENT_SCREENED, ScreeningPolicy, apply_policy, screened_event_payload
from patchbay.runtime.screening._scanner import (
    DEFAULT_MAX_BYTES,
    MAX_SPANS_PER_FINDING,
    RULES,
    Finding,
    ScreeningResult,
    screen,
)

__all__ = [
    "CONTENT_SCREENED",
    "DEFAULT_MAX_BYTES",
    "MAX_SPANS_PER_FINDING",
    "RULES",
    "Finding",
    "ScreeningPolicy",
    "ScreeningResult",
    "apply_policy",
    "screen",
    "screened_event_payload",
]
