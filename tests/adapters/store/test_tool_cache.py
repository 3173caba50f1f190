"""The tool cache (patchbay.adapters.store.tool_cache): each connector's catalog replaced whole, and
the summaries that follow it. On SQLite, and on PostgreSQL where a test takes ``any_repo``."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from patchbay.adapters.store import Repository
from patchbay.adapters.store.tables import mcp_tool_cache
from patchbay.adapters.store.tool_cache import CacheSummary
from patchbay.core.errors import NotFoundError
from patchbay.core.models import ResourceSummary, StdioTarget, ToolCacheEntry, ToolSummary

STDIO = StdioTarget(command="mcp-server-time", args=("--local-timezone", "UTC"), cwd="tools")


def _count(repo: Repository, table) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_tool_cache_round_trips_and_is_replaced_whole(repo: Repository) -> None:
    connector = repo.connectors.create("time", "Time", STDIO)
    first = ToolCacheEntry(
        connector_id=connector.connector_id,
        config_revision=1,
        fingerprint="sha256:aaa",
        tools=(
            ToolSummary(
                name="get_time",
                description="Now",
                input_schema={"type": "object", "properties": {"tz": {"type": "string"}}},
                annotations={"readOnlyHint": True},
            ),
        ),
        resources=(ResourceSummary(uri="file:///r", name="r", mime_type="text/plain"),),
        server_info={"name": "time", "version": "1.0"},
        fetched_at=1_700_000_000_000,
        expires_at=1_700_086_400_000,
    )
    assert repo.tool_cache.replace(first) == first
    assert repo.tool_cache.get(connector.connector_id) == first

    second = ToolCacheEntry(connector_id=connector.connector_id, config_revision=2, fingerprint="sha256:bbb")
    repo.tool_cache.replace(second)
    assert repo.tool_cache.get(connector.connector_id) == second
    assert _count(repo, mcp_tool_cache) == 1
    with pytest.raises(NotFoundError):
        repo.tool_cache.replace(second.model_copy(update={"connector_id": "con_missing"}))


def test_tool_cache_summaries_follow_every_replacement(any_repo: Repository) -> None:
    kept = any_repo.connectors.create("time", "Time", STDIO)
    other = any_repo.connectors.create("git", "Git", STDIO)
    assert any_repo.tool_cache.summaries() == {}
    tools = tuple(ToolSummary(name=f"t{i}") for i in range(3))
    any_repo.tool_cache.replace(
        ToolCacheEntry(connector_id=kept.connector_id, config_revision=1, fingerprint="f1", tools=tools)
    )
    any_repo.tool_cache.replace(ToolCacheEntry(connector_id=other.connector_id, config_revision=1, fingerprint="f2"))
    any_repo.tool_cache.replace(
        ToolCacheEntry(connector_id=kept.connector_id, config_revision=2, fingerprint="f3", tools=tools[:1])
    )

    assert any_repo.tool_cache.summaries() == {
        kept.connector_id: CacheSummary(config_revision=2, fingerprint="f3", tool_count=1),
        other.connector_id: CacheSummary(config_revision=1, fingerprint="f2", tool_count=0),
    }
    any_repo.connectors.delete(other.connector_id)
    assert set(any_repo.tool_cache.summaries()) == {kept.connector_id}
