"""Reading a gateway's governed error result the way a host does."""

from __future__ import annotations

from typing import Any

from patchbay.interfaces.gateway.results import ERROR_META_KEY


def error_of(result: Any) -> dict[str, Any]:
    """The ``{"code", "message", ...}`` of a governed error result: from ``_meta``, and the same
    object as ``structuredContent["error"]`` when the tool declares no ``outputSchema``."""
    assert result.is_error
    assert result.meta is not None
    error: dict[str, Any] = result.meta[ERROR_META_KEY]
    if result.structured_content is not None:
        assert result.structured_content == {"error": error}
    return error
