"""JSON array answers and the connector-side paging of them.

Some sources (Reactome's mappings, Ensembl REST) answer a whole list at once; a built-in then pages
that list itself, with an explicit ``next_offset``, so one result stays compact.
"""

from __future__ import annotations

import json
from typing import Any

from patchbay.connectors._http import Fetched
from patchbay.core.errors import ErrorCode, SourceError

__all__ = ["json_array", "page_of"]


def json_array(fetched: Fetched, source: str) -> list[dict[str, Any]]:
    """``fetched``'s body as a JSON array, keeping its object items only.

    Raises:
        SourceError: ``source_bad_response``: not JSON, or not an array.
    """
    try:
        data = json.loads(fetched.body)
    except ValueError:
        data = None
    if not isinstance(data, list):
        raise SourceError(
            f"{source} answered with something that is not a JSON array",
            code=ErrorCode.SOURCE_BAD_RESPONSE,
            details={"source": source, "status": fetched.status},
        )
    return [item for item in data if isinstance(item, dict)]


def page_of(items: list[dict[str, Any]], offset: int, page_size: int) -> tuple[list[dict[str, Any]], int | None]:
    """``(items[offset:offset + page_size], next_offset)``; ``next_offset`` is None on the last page.

    Args:
        items: the whole list the source answered.
        offset: the index of the first item (≥ 0).
        page_size: items per page (≥ 1).
    """
    page = items[offset : offset + page_size]
    following = offset + page_size
    return page, following if following < len(items) else None
