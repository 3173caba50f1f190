"""Secret redaction for text and JSON-like payloads (seed 003 §14.3, seed 000 §10).

Applied to stderr tails, event payloads and error messages before they are stored or printed.
It is a safety net, not the primary defence: secrets are kept out by reference in the first place.
Kept cheap because it runs on every event (the call-overhead benchmark budgets ~70 µs per call).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact_text", "redact_value", "is_secret_key"]

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(pass(word|wd)?|secret|token|api[-_]?key|apikey|authorization|auth|credential|cookie|session[-_]?id|private[-_]?key)",
    re.IGNORECASE,
)
_TEXT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization: Bearer xxx / Basic xxx
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    # well-known token shapes
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
    # userinfo in URLs
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), r"\1" + REDACTED + "@"),
)


_KEYWORD = re.compile(r"(?i)pass(?:word|wd)?|secret|token|api[-_]?key|apikey|authorization|credential|private[-_]?key")
# key=value / key: value / "key": "value" where the key names a secret; the key's affixes are
# bounded so a long run of word characters cannot make the match quadratic.
_KEY_VALUE = re.compile(
    r"""(?i)((?<![A-Za-z0-9_.-])["']?[A-Za-z0-9_.-]{0,32}?"""
    r"""(?:pass(?:word|wd)?|secret|token|api[-_]?key|apikey|authorization|credential|private[-_]?key)"""
    r"""[A-Za-z0-9_.-]{0,32}["']?\s{0,8}[:=]\s{0,8}["']?)([^\s"',;&}]{4,})"""
)


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (``token``, ``password``, ``api_key``, ...)."""
    return bool(_SECRET_KEY.search(key))


def redact_text(text: str, known_secrets: tuple[str, ...] = ()) -> str:
    """Replace secret-looking substrings and every exact ``known_secrets`` value with ``[REDACTED]``.

    Linear in ``len(text)``: every pattern is bounded (no unbounded prefix before a keyword), and
    the ``key=value`` rule only runs when a secret keyword occurs at all.
    """
    for secret in known_secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _TEXT_PATTERNS:
        text = pattern.sub(replacement, text)
    if _KEYWORD.search(text):
        text = _KEY_VALUE.sub(r"\1" + REDACTED, text)
    return text


def redact_value(value: Any, known_secrets: tuple[str, ...] = ()) -> Any:
    """Redact a JSON-like value: secret-named keys lose their values, strings are scanned.

    Returns a new value; the input is not modified.
    """
    if isinstance(value, str):
        return redact_text(value, known_secrets)
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and is_secret_key(k) and v not in (None, "", {}, []) else redact_value(v, known_secrets))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, known_secrets) for v in value]
    return value
