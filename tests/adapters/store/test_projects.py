"""Projects (patchbay.adapters.store.projects): one row per canonical workspace path, created
idempotently, deleted with only their own grants. On SQLite, and on PostgreSQL where a test takes
``any_repo``."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from patchbay.adapters.store import Repository
from patchbay.adapters.store.tables import mcp_project_tool_grants
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.models import StdioTarget

STDIO = StdioTarget(command="mcp-server-time", args=("--local-timezone", "UTC"), cwd="tools")


def _count(repo: Repository, table) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_deleting_a_project_cascades_only_its_grants(any_repo: Repository, tmp_path: Path) -> None:
    connector = any_repo.connectors.create("time", "Time", STDIO)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    doomed, kept = any_repo.projects.ensure(tmp_path / "a"), any_repo.projects.ensure(tmp_path / "b")
    any_repo.grants.set_global(connector.connector_id, "t", "ask")
    any_repo.grants.set_for_project(doomed.project_id, connector.connector_id, "t", "allow")
    any_repo.grants.set_for_project(kept.project_id, connector.connector_id, "t", "deny")

    any_repo.projects.delete(doomed.project_id)

    assert _count(any_repo, mcp_project_tool_grants) == 1
    assert [g.decision for g in any_repo.grants.list_for_project(kept.project_id)] == ["deny"]
    assert [g.decision for g in any_repo.grants.list_global()] == ["ask"]
    assert any_repo.connectors.get(connector.connector_id).revision == 1
    with pytest.raises(NotFoundError):
        any_repo.projects.get(doomed.project_id)
    with pytest.raises(NotFoundError):
        any_repo.projects.delete(doomed.project_id)


def test_a_symlink_and_its_target_are_the_same_project(repo: Repository, tmp_path: Path) -> None:
    real = tmp_path / "workspace"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)

    via_link = repo.projects.ensure(link)
    via_real = repo.projects.ensure(str(real))
    via_dotdot = repo.projects.ensure(f"{real}/sub/..")

    assert via_link == via_real == via_dotdot == repo.projects.get(via_real.project_id)
    assert via_real.path == os.path.realpath(real) and via_real.project_id.startswith("prj_")
    assert repo.projects.ensure(tmp_path).project_id != via_real.project_id
    assert [p.path for p in repo.projects.list_all()] == sorted([str(tmp_path.resolve()), str(real.resolve())])
    with pytest.raises(ConfigError):
        repo.projects.ensure("")


def test_ensure_project_is_idempotent_under_concurrency(any_repo: Repository, tmp_path: Path) -> None:
    barrier = threading.Barrier(8)

    def ensure(_: int) -> str:
        barrier.wait()
        return any_repo.projects.ensure(tmp_path).project_id

    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(ensure, range(8)))

    assert len(ids) == 1
    assert [p.project_id for p in any_repo.projects.list_all()] == list(ids)
