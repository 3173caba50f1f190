"""Store fixtures: a migrated SQLite repository per test, and the same on PostgreSQL.

``repo`` is the repository on the store of the run (``--store``: SQLite, or this test's fresh
PostgreSQL database); ``any_repo`` runs a test on both stores (only on PostgreSQL with
``--store=postgres``, whose SQLite side the default run covers). PostgreSQL:
:mod:`tests.support.postgres` (its own schema or database per test, dropped afterwards; the
PostgreSQL variants fail under ``CI`` and are skipped elsewhere when the server is unreachable).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from patchbay.adapters.store import Repository, create_engine_for, upgrade_to_head
from tests.support.postgres import postgres_schema


def assert_sqlite_consistent(engine: Engine) -> None:
    """``PRAGMA integrity_check`` says ok and ``PRAGMA foreign_key_check`` finds nothing."""
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalars().all() == ["ok"]
        assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store' / 'patchbay.db'}"


@pytest.fixture
def sqlite_repo(sqlite_url: str) -> Iterator[Repository]:
    engine = create_engine_for(sqlite_url)
    upgrade_to_head(engine)
    repo = Repository(engine)
    yield repo
    assert_sqlite_consistent(engine)
    repo.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_schema() as url:
        yield url


@pytest.fixture
def postgres_repo(postgres_url: str) -> Iterator[Repository]:
    engine = create_engine_for(postgres_url)
    upgrade_to_head(engine)
    repo = Repository(engine)
    yield repo
    repo.close()


@pytest.fixture
def repo(store_url: str | None, sqlite_url: str) -> Iterator[Repository]:
    """A migrated repository on the run's store (``--store``), checked for consistency on SQLite."""
    engine = create_engine_for(store_url or sqlite_url)
    upgrade_to_head(engine)
    repository = Repository(engine)
    yield repository
    if store_url is None:
        assert_sqlite_consistent(engine)
    repository.close()


@pytest.fixture(params=["sqlite", "postgres"])
def any_repo(request: pytest.FixtureRequest, store_backend: str) -> Repository:
    """The repository on SQLite and on PostgreSQL (with ``--store=postgres`` the SQLite side is
    skipped: the default run has it)."""
    if store_backend == "postgres" and request.param == "sqlite":
        pytest.skip("sqlite only: the default --store=sqlite run covers this side")
    return request.getfixturevalue(f"{request.param}_repo")
