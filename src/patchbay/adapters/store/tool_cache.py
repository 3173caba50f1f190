"""The tool cache: each connector's last fetched catalog, replaced whole.

Each row also keeps its catalog's tool count, written with the catalog, so listing connectors
never parses a catalog just to count it.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import select

from patchbay.adapters.store._rows import cache_columns, tool_cache_from_row
from patchbay.adapters.store._transactions import Transactions, upsert
from patchbay.adapters.store.connectors import require_connector
from patchbay.adapters.store.tables import mcp_tool_cache
from patchbay.core.errors import ConfigError
from patchbay.core.models import ToolCacheEntry

__all__ = ["CacheSummary", "ToolCacheStore"]

_C = mcp_tool_cache.c


class CacheSummary(NamedTuple):
    """What a connector list needs of a cached catalog, without parsing it."""

    config_revision: int
    """The connector revision the catalog was fetched at."""
    fingerprint: str
    """The config fingerprint the catalog was fetched with."""
    tool_count: int
    """How many tools the catalog holds."""


class ToolCacheStore:
    """The cached catalogs of the canonical store (``Repository.tool_cache``).

    Usage::

        repo.tool_cache.replace(entry)
        entry = repo.tool_cache.get(connector_id)    # None when nothing is cached
    """

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def replace(self, entry: ToolCacheEntry) -> ToolCacheEntry:
        """Store ``entry`` as the connector's whole cached catalog, replacing any previous one.

        Raises:
            ConfigError: ``invalid_config`` when ``entry`` is not a ``ToolCacheEntry``.
            NotFoundError: ``not_found`` for an unknown connector.
        """
        if not isinstance(entry, ToolCacheEntry):
            raise ConfigError("entry", "must be a ToolCacheEntry")
        values = cache_columns(entry)
        with self._tx.write() as conn:
            require_connector(conn, entry.connector_id)
            stmt = upsert(conn, mcp_tool_cache).values(values)
            replace = {k: stmt.excluded[k] for k in values if k != "connector_id"}
            conn.execute(stmt.on_conflict_do_update(index_elements=["connector_id"], set_=replace))
        return entry

    def get(self, connector_id: str) -> ToolCacheEntry | None:
        """The cached catalog, or None when there is none (fingerprint checks are the caller's)."""
        with self._tx.read() as conn:
            row = conn.execute(select(mcp_tool_cache).where(_C.connector_id == connector_id)).mappings().first()
        return None if row is None else tool_cache_from_row(row)

    def summaries(self) -> dict[str, CacheSummary]:
        """Every cached catalog's :class:`CacheSummary` by connector id: one query that reads no
        catalog text."""
        query = select(_C.connector_id, _C.config_revision, _C.fingerprint, _C.tool_count)
        with self._tx.read() as conn:
            return {row[0]: CacheSummary(row[1], row[2], row[3]) for row in conn.execute(query)}

    def stamps(self) -> dict[str, tuple[int, str, int, int]]:
        """What identifies each cached catalog without reading it, by connector id:
        ``(config_revision, fingerprint, fetched_at, expires_at)``; a stamp that differs from an
        earlier reading means the catalog was replaced since. One query over the summary index
        (no catalog text is read)."""
        query = select(_C.connector_id, _C.config_revision, _C.fingerprint, _C.fetched_at, _C.expires_at)
        with self._tx.read() as conn:
            return {row[0]: (row[1], row[2], row[3], row[4]) for row in conn.execute(query)}
