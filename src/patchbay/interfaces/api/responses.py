"""The JSON response every route answers with: every string redacted on the way out.

No route puts a secret in a response on purpose (contracts have no field for one); this is the same
last line of defence the CLI's ``--json`` output has: every string value is passed through
:func:`~patchbay.core.redaction.redact_text` (patterns and registered credential values), keys stay
as they are (field names such as ``auth_state`` are not secrets). Lone surrogates, which JSON text
cannot carry in UTF-8, become U+FFFD.

Two routes render their body themselves with :func:`render_redacted`, so nothing is skipped but
FastAPI's validating the returned model again: the tool call (its result is typed already; a
tool's own output is redacted nowhere before this) and the connector list
(:class:`~patchbay.interfaces.api.listing.ConnectorListing`, which keeps each entry's redacted
bytes only while the redaction registry's version is the one they were redacted under). Neither
redacts less than this class would.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.responses import JSONResponse

from patchbay.core.redaction import redact_text

__all__ = ["RedactedJSONResponse", "redact_strings", "render_redacted"]

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def redact_strings(value: Any) -> Any:
    """``value`` (JSON-like) with every string value redacted and made encodable; keys kept."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", redact_text(value))
    if isinstance(value, dict):
        return {
            _SURROGATE.sub("\ufffd", key) if isinstance(key, str) else key: redact_strings(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_strings(item) for item in value]
    return value


def render_redacted(content: Any) -> bytes:
    """``content`` (JSON-like) as the compact UTF-8 JSON text every response body is, its strings
    redacted (:func:`redact_strings`).

    Raises:
        ValueError: NaN or Infinity in ``content``.
    """
    return json.dumps(redact_strings(content), ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
        "utf-8"
    )


class RedactedJSONResponse(JSONResponse):
    """``JSONResponse`` whose strings are redacted (:func:`redact_strings`); NaN/Infinity refused."""

    def render(self, content: Any) -> bytes:
        return render_redacted(content)
