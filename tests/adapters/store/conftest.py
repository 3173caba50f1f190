"""Store fixtures: a migrated SQLite repository per test, and the same on PostgreSQL.

PostgreSQL runs at ``PATCHBAY_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``, trust auth). Each test gets its own schema
(through libpq's ``options=-csearch_path=...``), dropped afterwards. When the server is not
reachable the PostgreSQL variants fail under ``CI`` and are skipped elsewhere.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from patchbay.adapters.store import Repository, create_engine_for, upgrade_to_head

POSTGRES_URL = os.environ.get("PATCHBAY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


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
    admin = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
    schema = f"patchbay_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as exc:
        admin.dispose()
        message = f"PostgreSQL not reachable at {POSTGRES_URL}: {exc.orig}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def postgres_repo(postgres_url: str) -> Iterator[Repository]:
    engine = create_engine_for(postgres_url)
    upgrade_to_head(engine)
    repo = Repository(engine)
    yield repo
    repo.close()


@pytest.fixture(params=["sqlite", "postgres"])
def any_repo(request: pytest.FixtureRequest) -> Repository:
    """The repository on SQLite and on PostgreSQL."""
    return request.getfixturevalue(f"{request.param}_repo")
