"""Injection screening: scans prompt expansions, resource contents and tool results before they reach
a model's context, and applies the screening policy to what it finds.

Usage::

    result = screen(text, source="mcp:wiki:wiki://docs/a", max_bytes=settings.screening_max_bytes)
    if result.untrusted:
        event_log.append(CONTENT_SCREENED, screened_event_payload(result, settings.screening_policy))
    context_text = apply_policy(text, result, settings.screening_policy)

Each finding carries its rule name (:data:`RULES`) and code-point spans, never text. At most
``max_bytes`` (``Settings.screening_max_bytes``, default 256 KiB) of an item is read; a longer item
gets the ``scan_limit`` finding.

Modules:

* ``_scanner``: :func:`screen`, :class:`ScreeningResult`, :class:`Finding`; runs every rule.
* ``_policy``: the ``content.screened`` event payload and :func:`apply_policy`.
* ``_phrases``: the phrase rules (``instruction_override``, ``role_switch``, ...), in eleven languages.
* ``_rules_en``, ``_rules_intl``: the phrase-rule patterns; ``_groups``: their building blocks.
* ``_unicode``: ``unicode_tags``, ``bidi_control``, ``invisible_characters``.
* ``_channels``: HTML comments, base64 runs and URL queries, scanned by the phrase rules.
* ``_normalize``: normalisation before matching, with spans mapped back to the original.

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
