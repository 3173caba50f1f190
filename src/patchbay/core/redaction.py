"""Secret redaction: one module for events, logs, probe diagnostics, stderr tails and messages.

Applied to every text Patchbay stores or prints that could carry a secret: session event payloads,
stderr tails, probe results, error messages, CLI output and Python log records
(:class:`RedactingFilter`). Header values, values of secret-named keys, OAuth callback parameters,
well-known key shapes, URL passwords and the exact value of every secret the process knows
(:func:`register_secret`, ``known_secrets``) become ``[REDACTED]``; the name stays visible. Values
shorter than :data:`MIN_SECRET_LENGTH` are never masked by value. Every rule is linear in the text
and idempotent: ``redact_text(redact_text(t)) == redact_text(t)``.

Design: docs/security.md
"""

from __future__ import annotations

import json
import logging
import re
import threading
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "RedactingFilter",
    "is_maskable",
    "is_secret_key",
    "redact_known",
    "redact_text",
    "redact_url",
    "redact_value",
    "register_secret",
    "registered_secrets",
    "registry_version",
]

REDACTED = "[REDACTED]"

MIN_SECRET_LENGTH = 8
"""Exact secret values shorter than this are not masked: they would mask ordinary text."""

MAX_TRANSIENT = 4096
"""Transient registered values kept (least recently registered forgotten first); configured
credentials are never forgotten."""

# Values that configuration files carry as settings, not secrets: masking them by value would
# turn ordinary words in tool results and audit lines into [REDACTED] (compared lower-cased).
_COMMON_VALUES = frozenset(
    """
    production development developer staging testing localhost 127.0.0.1 0.0.0.0:0 ::1 disabled
    enabled required optional undefined default verbose warning warnings critical information
    password username changeme anonymous database postgres postgresql application/json
    text/plain readonly read-only readwrite read-write internal external override standard
    continue complete inherited automatic manual
    """.split()
)

# -- names ---------------------------------------------------------------------------------------

# A mapping key that names a secret. ``pass`` alone only as a whole word part (``db_pass``,
# not ``bypass``/``passage``); ``auth`` but not ``author``/``authority``.
_SECRET_KEY = re.compile(
    r"passw(?:or)?d|passphrase|(?<![a-z])pass(?![a-z])|secret|token|api[-_]?key|apikey|"
    r"authorization|auth(?!or)|credential|cookie|session[-_]?id|private[-_]?key|access[-_]?key",
    re.IGNORECASE,
)

# -- text rules ----------------------------------------------------------------------------------
#
# The case-insensitive rules are written in lower case and run on ``text.lower()`` (which the
# engine scans much faster than an IGNORECASE pattern: it can skip to the keyword's first
# letters); the replacement is rebuilt from the original text, so the names keep their case.

# Header-like names whose whole value is secret; the value may contain spaces and ``;``
# (``Cookie: a=1; b=2``). Matching starts at the keyword (a prefix such as ``proxy-``/``set-``
# stays as it is), the name's suffix is bounded. Group 1 is kept; the value is masked.
_HEADER = re.compile(
    r"""(?x)
    ((?:authorization|cookie)[a-z0-9_.-]{0,32}+                            # the name (its end)
     \\{0,2}["']?[ \t]{0,8}[:=][ \t]{0,8}                                 # separator
     (?:\\{0,2}["'])?                                                      # opening quote
     (?:(?:bearer|basic|digest|token|negotiate|ntlm|dpop|hoba|mutual|aws4-hmac-sha256)[ \t]++)?)
    ([^"'\\\r\n&]++)                                                       # the value
    """
)

# key=value / key: value / "key": "value" where the key names a secret (matched from the keyword
# on, like _HEADER). A quoted value runs to its closing quote (spaces included), a bare one to
# whitespace or a delimiter. Group 1 (name, separator, opening quote) is kept.
_KEY_VALUE = re.compile(
    r"""(?x)
    ((?:passw(?:or)?d|passphrase|pass(?<![a-z]pass)(?![a-z])|secret|token|api[-_]?key|apikey|
        private[-_]?key|access[-_]?key|credential)
     [a-z0-9_.-]{0,32}+
     \\{0,2}["']?[ \t]{0,8}[:=][ \t]{0,8}
     (?:\\{0,2}["'])?)
    (?:(?<=["'])[^"'\\\r\n]++|(?<!["'])[^\s"',;&}]++)
    """
)
_KEY_VALUE_HINTS = ("pass", "secret", "token", "key", "credential")

# URL query/fragment parameters that carry one-time secrets (OAuth callbacks, signed URLs).
_QUERY = re.compile(r"""(?<=[?&#;])((?:code|state|oauth_verifier|sig|signature)=)[^&#\s"'<>]++""")
_QUERY_HINTS = ("code=", "state=", "oauth_verifier=", "sig=", "signature=")

# "Bearer <token>" / "Basic <credentials>" anywhere (a header rule may have missed the name).
_BEARER = re.compile(r"((?:bearer|basic)(?<![a-z0-9_-]bearer)(?<![a-z0-9_-]basic)[ \t]++)[a-z0-9._~+/=-]{8,}+")

# scheme://user:password@ -- the scheme starts a run and is bounded; the "@" stays.
# A password already masked as ``***`` (SQLAlchemy's rendering) keeps the user name visible.
_USERINFO = re.compile(r"(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}://)[^/\s:@?#]++:(?!\*\*\*@)[^/\s@?#]++(?=@)")

# A pydantic validation error quotes the offending input cut in the middle when it is long
# (``input_value='https://api.example.com/...y=abc123&page=2'``): the cut can remove the name
# or prefix another rule needs and leave the rest of a secret, so a cut input is masked whole.
# (The SDK logs such errors with every non-JSON line a server prints.) pydantic cuts to about
# 50 characters; the match is bounded to 120.
_CUT_INPUT = re.compile(
    r"(input_value=)(?=(?:(?!, input_type=)[^\r\n]){0,120}?\.\.\.)(?:(?!, input_type=)[^\r\n]){1,120}+(?=, input_type=)"
)

# Well-known key shapes (case-sensitive, on the text itself), one pass. Each alternative starts
# with its literal prefix (so the engine can skip ahead) followed by a look-behind that the
# prefix starts a run (an "_" before it still counts as a start: wire names join parts with "__");
# each either matches a whole run or fails within a bounded distance.
_SHAPES = re.compile(
    r"""(?x)
      [spr]k-(?<![A-Za-z0-9][spr]k-)[A-Za-z0-9_-]{16,}+
    | [spr]k_(?<![A-Za-z0-9][spr]k_)(?:live|test)_[A-Za-z0-9]{16,}+
    | gh[pousr]_(?<![A-Za-z0-9]gh[pousr]_)[A-Za-z0-9]{20,}+
    | github_pat_(?<![A-Za-z0-9]github_pat_)[A-Za-z0-9_]{20,}+
    | glpat-(?<![A-Za-z0-9]glpat-)[A-Za-z0-9_-]{20,}+
    | xox[abeoprs]-(?<![A-Za-z0-9]xox[abeoprs]-)[A-Za-z0-9-]{10,}+
    | xapp-(?<![A-Za-z0-9]xapp-)[A-Za-z0-9-]{10,}+
    | A(?:KIA|SIA|BIA|CCA)(?<![A-Za-z0-9]A[A-Z]{3})[0-9A-Z]{16}(?![0-9A-Za-z])
    | AIza(?<![A-Za-z0-9]AIza)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])
    | eyJ(?<![A-Za-z0-9-]eyJ)[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+
    | pbgw_(?<![A-Za-z0-9]pbgw_)[A-Za-z0-9_-]{32,}+
    """
)
# Case-sensitive substrings, at least one of which every shape contains.
_SHAPE_HINTS = tuple(
    "sk- pk- rk- k_live_ k_test_ ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ glpat- xox xapp- AKIA ASIA ABIA ACCA AIza eyJ pbgw_".split()
)

# The lower-case rules in order, each with the substrings (of the lower-cased text) at least one
# of which a match contains.
_LOWER_RULES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (_HEADER, ("authorization", "cookie")),
    (_KEY_VALUE, _KEY_VALUE_HINTS),
    (_QUERY, _QUERY_HINTS),
    (_BEARER, ("bearer", "basic")),
    (_USERINFO, ("://",)),
    (_CUT_INPUT, ("input_value=",)),
)

# One search for every hint above (shape hints lower-cased): most texts match none of them and
# cost one lower() and one scan.
_TRIGGER = re.compile(
    "|".join(
        re.escape(hint)
        for hint in sorted(
            {h for _, hints in _LOWER_RULES for h in hints} | {h.lower() for h in _SHAPE_HINTS}, key=len, reverse=True
        )
    )
)

# Lower-cases ASCII letters only: used when str.lower() would change the length (e.g. "İ").
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}

# -- known secret values -------------------------------------------------------------------------

_registry_lock = threading.Lock()
# value -> pinned (a configured credential, never evicted); insertion order is the order of the
# latest registration, so the first transient entry is the least recently registered one.
_registered: dict[str, bool] = {}
_transient_count = 0
_registered_forms: tuple[str, ...] = ()
_registry_version = 0


def is_maskable(value: object) -> bool:
    """Whether an exact value can be masked wherever it appears without masking ordinary text:
    a string of at least :data:`MIN_SECRET_LENGTH` characters that is not a common configuration
    word (``production``, ``localhost``, ``disabled``…)."""
    return (
        isinstance(value, str)
        and len(value) >= MIN_SECRET_LENGTH
        and value.strip().lower() not in _COMMON_VALUES
        and value not in REDACTED
    )


def _forms(secret: str) -> tuple[str, ...]:
    """The value plus its URL-encoded and JSON-escaped forms (where they differ)."""
    if not is_maskable(secret):
        return ()
    forms = {secret, quote(secret, safe=""), quote_plus(secret, safe=""), json.dumps(secret, ensure_ascii=False)[1:-1]}
    # A value inside "[REDACTED]" itself would make redaction grow the text on every pass.
    return tuple(form for form in forms if len(form) >= MIN_SECRET_LENGTH and form not in REDACTED)


@lru_cache(maxsize=256)
def _known_forms(known_secrets: tuple[str, ...]) -> tuple[str, ...]:
    forms = {form for secret in known_secrets if isinstance(secret, str) for form in _forms(secret)}
    return tuple(sorted(forms, key=len, reverse=True))  # a longer value first: never half-masked


def register_secret(value: str, *, transient: bool = False) -> bool:
    """Remember ``value`` as a secret: from now on every redaction in this process masks it.

    For credential values (values are resolved by reference and never stored): configured
    credentials are registered when the credential store is opened and again when they are resolved,
    so events, logs, stderr tails and messages mask them even on paths that do not pass
    ``known_secrets``. Values :func:`is_maskable` refuses (shorter than :data:`MIN_SECRET_LENGTH`,
    common words) are ignored.

    Registering a value again makes it the most recently registered one. Configured values
    (the default) are kept for the life of the process; ``transient`` ones (OAuth access and
    refresh tokens, which rotate) are forgotten least recently registered first once more than
    :data:`MAX_TRANSIENT` are kept. A value once registered as configured stays configured.

    Args:
        value: the exact secret text.
        transient: the value is replaced over time (a rotating token), so it may be forgotten.

    Returns:
        Whether the value is masked from now on.
    """
    global _registered_forms, _registry_version, _transient_count
    if not is_maskable(value):
        return False
    pinned = not transient
    with _registry_lock:
        was = _registered.pop(value, None)
        if was is not None:
            _registered[value] = was or pinned  # moved to the end: most recently registered
            if was is False and pinned:
                _transient_count -= 1
            return True
        _registered[value] = pinned
        if not pinned:
            _transient_count += 1
            while _transient_count > MAX_TRANSIENT:
                oldest = next(v for v, keep in _registered.items() if not keep)
                del _registered[oldest]
                _transient_count -= 1
        forms = {form for secret in _registered for form in _forms(secret)}
        _registered_forms = tuple(sorted(forms, key=len, reverse=True))
        _registry_version += 1
    return True


def registry_version() -> int:
    """A number that grows whenever :func:`register_secret` adds (or forgets) a value.

    A cache of redacted text (the event log memoises short strings) is stale once it changes.
    """
    return _registry_version


def registered_secrets() -> tuple[str, ...]:
    """The values :func:`register_secret` keeps, least recently registered first."""
    with _registry_lock:
        return tuple(_registered)


# -- public API ----------------------------------------------------------------------------------


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (``token``, ``password``, ``api_key``, ``Cookie``, ...).

    Args:
        key: a mapping key, e.g. a JSON object member name or an HTTP header name.
    """
    return bool(_SECRET_KEY.search(key))


def _lower(text: str) -> str:
    """``text`` with ASCII letters lower-cased, always of the same length as ``text``."""
    lower = text.lower()
    return lower if len(lower) == len(text) else text.translate(_ASCII_LOWER)


def _sub_lower(pattern: re.Pattern[str], text: str, lower: str) -> str:
    """Replace each match of ``pattern`` in ``lower`` (the same length as ``text``) by the
    original text of its group 1 followed by ``[REDACTED]``."""
    pieces: list[str] = []
    last = 0
    for match in pattern.finditer(lower):
        pieces.append(text[last : match.end(1)])
        pieces.append(REDACTED)
        last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


@lru_cache(maxsize=64)
def _keep_pattern(keep: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(name) for name in sorted(set(keep), key=len, reverse=True)))


def _mask_forms(text: str, forms: tuple[str, ...], keep: tuple[str, ...]) -> str:
    """Replace each of ``forms`` (longest first) in ``text``; a form that is part of a name in
    ``keep`` is replaced only outside the occurrences of those names. A longer secret that
    contains a kept name is itself a form and masked whole before that."""
    for form in forms:
        if form not in text:
            continue
        if not keep or not any(form in name for name in keep):
            text = text.replace(form, REDACTED)
            continue
        pieces: list[str] = []
        last = 0
        for match in _keep_pattern(keep).finditer(text):
            pieces.append(text[last : match.start()].replace(form, REDACTED))
            pieces.append(match.group())
            last = match.end()
        pieces.append(text[last:].replace(form, REDACTED))
        text = "".join(pieces)
    return text


def redact_text(text: str, known_secrets: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> str:
    """Mask secrets in ``text`` (see the module docstring for the rules); names stay visible.

    Args:
        text: any text (a message, a stderr tail, a log line, an event string).
        known_secrets: exact secret values to mask in addition to the registered ones and the
            pattern rules (values :func:`is_maskable` refuses are ignored).
        keep: identifiers that are never masked by an exact secret value, e.g. connector names
            in an event log (a secret equal to part of a name would otherwise hide which
            server an event is about).

    Returns:
        The text with each secret value replaced by ``[REDACTED]``; ``text`` itself when
        nothing matched. Linear in ``len(text)``; a rule's regex runs only when a substring
        test says it could match.
    """
    if known_secrets:
        text = _mask_forms(text, _known_forms(tuple(known_secrets)), keep)
    text = _mask_forms(text, _registered_forms, keep)
    lower = _lower(text)
    if _TRIGGER.search(lower) is None:
        return text
    for pattern, hints in _LOWER_RULES:
        if any(hint in lower for hint in hints):
            replaced = _sub_lower(pattern, text, lower)
            if replaced is not text:
                text, lower = replaced, _lower(replaced)
    if any(hint in text for hint in _SHAPE_HINTS):
        text = _SHAPES.sub(REDACTED, text)
    return text


def redact_value(value: Any, known_secrets: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Any:
    """Redact a JSON-like value: secret-named keys lose their values, strings are scanned.

    Args:
        value: a JSON-like value (dicts, lists, tuples, strings, numbers, None); other leaves are
            returned as they are.
        known_secrets, keep: as for :func:`redact_text`.

    Returns:
        A new value (tuples become lists); the input is not modified. Keys stay as they are; a
        secret-named key's non-empty value becomes ``"[REDACTED]"``.
    """
    if isinstance(value, str):
        return redact_text(value, known_secrets, keep)
    if isinstance(value, dict):
        return {
            k: (
                REDACTED
                if isinstance(k, str) and is_secret_key(k) and v not in (None, "", {}, [])
                else redact_value(v, known_secrets, keep)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, known_secrets, keep) for v in value]
    return value


def redact_known(value: Any, known_secrets: tuple[str, ...] = ()) -> Any:
    """Mask only exact secret values (``known_secrets`` and registered ones) in a JSON-like value.

    For data that must otherwise stay as it is, such as a server's tool catalog (descriptions,
    schemas): no pattern rule runs and no key loses its value, but a credential value the server
    echoed is never stored or shown.

    Args:
        value: a JSON-like value; strings anywhere in it (dict keys included) are masked.
        known_secrets: as for :func:`redact_text`.

    Returns:
        ``value`` itself when nothing matched, else a new value (tuples become lists).
    """
    forms = (_known_forms(tuple(known_secrets)) if known_secrets else ()) + _registered_forms
    if not forms:
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            for form in forms:
                if form in item:
                    item = item.replace(form, REDACTED)
            return item
        if isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    masked = walk(value)
    return value if masked == value else masked


class RedactingFilter(logging.Filter):
    """A ``logging.Filter`` that redacts each record before a handler formats it.

    Renders the message (``msg % args``), redacts it and stores it back with ``args`` cleared,
    so no handler can render the raw arguments again; a traceback (``exc_info``) and
    ``stack_info`` are rendered and redacted the same way (``exc_info`` is cleared, the redacted
    text is kept in ``exc_text``, which ``logging.Formatter`` prints). Attach it to a handler
    (``handler.addFilter(RedactingFilter())``): a handler filter sees records propagated from
    every logger, a logger filter only its own. Never drops a record.

    Args:
        known_secrets: extra exact values to mask (registered ones are always masked).
    """

    def __init__(self, known_secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.known_secrets = known_secrets

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep what there is, redacted
            message = f"{record.msg} {record.args!r}"
        record.msg = redact_text(str(message), self.known_secrets)
        record.args = None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text, self.known_secrets)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info, self.known_secrets)
        return True


def redact_url(url: str) -> str:
    """``url`` with the password of its userinfo masked, for logs and status output
    (``redis://:pw@host:6379/0`` -> ``redis://:[REDACTED]@host:6379/0``); a URL without one, or
    that does not parse, is returned with :func:`redact_text` applied. Never raises."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return redact_text(url)
    if not password:
        return redact_text(url)
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:{REDACTED}@{host}"))
