"""Several instances on one PostgreSQL store: each writer has its own engine (its own connections),
as separate ``patchbay serve`` processes do. A stale revision has exactly one winner, and project
grant upserts of one key (with the project's first use) are idempotent under concurrency."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import func, select

from patchbay.adapters.store import Repository, create_engine_for, upgrade_to_head
from patchbay.adapters.store.tables import mcp_project_tool_grants, projects
from patchbay.core.errors import RevisionConflictError
from patchbay.core.models import StdioTarget

WRITERS = 20
STDIO = StdioTarget(command="mcp-server-time")
_T = TypeVar("_T")


@pytest.fixture
def instances(postgres_url: str) -> Iterator[list[Repository]]:
    """:data:`WRITERS` repositories on one migrated PostgreSQL schema, one engine each."""
    first = create_engine_for(postgres_url)
    upgrade_to_head(first)
    first.dispose()
    repos = [Repository(create_engine_for(postgres_url)) for _ in range(WRITERS)]
    yield repos
    for repo in repos:
        repo.close()


def _all_at_once(repos: list[Repository], attempt: Callable[[int, Repository], _T]) -> list[_T]:
    """Run ``attempt(i, repos[i])`` in one thread per repository, released together."""
    barrier = threading.Barrier(len(repos), timeout=30)

    def run(i: int) -> _T:
        barrier.wait()
        return attempt(i, repos[i])

    with ThreadPoolExecutor(len(repos)) as pool:
        return list(pool.map(run, range(len(repos))))


def _count(repo: Repository, table) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_twenty_updates_from_separate_engines_with_one_revision_have_one_winner(instances: list[Repository]) -> None:
    created = instances[0].connectors.create("time", "Time", STDIO)
    for repo in instances:  # every engine has a live connection before the race starts
        assert repo.connectors.get(created.connector_id).revision == 1

    def attempt(i: int, repo: Repository) -> str:
        try:
            repo.connectors.update(created.connector_id, 1, description=f"writer {i}")
        except RevisionConflictError as exc:
            assert exc.code == "revision_conflict"
            return "conflict"
        return f"won {i}"

    outcomes = _all_at_once(instances, attempt)

    winners = [o for o in outcomes if o != "conflict"]
    assert len(winners) == 1 and outcomes.count("conflict") == WRITERS - 1, outcomes
    final = instances[-1].connectors.get(created.connector_id)
    assert final.revision == 2
    assert final.description == f"writer {winners[0].removeprefix('won ')}"


def test_concurrent_project_grant_upserts_of_one_key_leave_one_row(instances: list[Repository], tmp_path: Path) -> None:
    connector = instances[0].connectors.create("time", "Time", STDIO)
    workspace = tmp_path / "ws"

    def attempt(i: int, repo: Repository) -> tuple[str, str]:
        project = repo.projects.ensure(workspace)  # the project's first use races too
        grant = repo.grants.set_for_project(project.project_id, connector.connector_id, "get_time", "allow")
        return project.project_id, grant.decision

    outcomes = _all_at_once(instances, attempt)

    assert len({project_id for project_id, _ in outcomes}) == 1
    assert {decision for _, decision in outcomes} == {"allow"}
    assert _count(instances[0], projects) == 1 and _count(instances[0], mcp_project_tool_grants) == 1
    [grant] = instances[0].grants.list_for_project(outcomes[0][0])
    assert (grant.connector_id, grant.tool_name, grant.decision) == (connector.connector_id, "get_time", "allow")

    # Then one writer per decision, all at once: one row, holding one of the decisions written.
    decisions = ["allow", "ask", "deny"]

    def change(i: int, repo: Repository) -> str:
        decision = decisions[i % len(decisions)]
        repo.grants.set_for_project(outcomes[0][0], connector.connector_id, "get_time", decision)
        return decision

    written = _all_at_once(instances, change)
    assert _count(instances[0], mcp_project_tool_grants) == 1
    [grant] = instances[0].grants.list_for_project(outcomes[0][0])
    assert grant.decision in written
