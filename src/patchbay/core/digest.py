"""Digests of JSON values: what binds an approval to the exact call it was asked for.

A digest is the SHA-256 (lower-case hex) of the value's canonical JSON: keys sorted, no
whitespace, non-ASCII kept as UTF-8. Equal values give equal digests whatever their key order;
a value JSON cannot encode is encoded by its ``repr`` (a digest never raises).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "json_digest"]


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON text (sorted keys, ``","``/``":"`` separators, UTF-8)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def json_digest(value: Any) -> str:
    """SHA-256 (64 lower-case hex chars) of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
