"""Shared fixtures: the anyio backend, an isolated data home with the venv on PATH, and a connector
service on its own data home with an empty workspace beside it (tests that need other ones define
their own ``service``/``workspace``, which take precedence).

``--store=sqlite|postgres`` (default sqlite) picks the canonical store every test's ``Settings``
(and every ``patchbay`` process a test starts) opens: with ``postgres`` each test gets a fresh
database of the machine's PostgreSQL (:class:`tests.support.postgres.PostgresDatabases`) through
``PATCHBAY_DATABASE_URL``, and tests marked ``sqlite_only`` are skipped with their reason."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.settings import Settings
from tests.support.postgres import PostgresDatabases

VENV_BIN = Path(sys.executable).parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="canonical store of the tests: a SQLite file per data home (default), or a fresh "
        "database per test on the PostgreSQL at PATCHBAY_TEST_POSTGRES_URL",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): inherently SQLite (files, pragmas, JSONL events); skipped with --store=postgres",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--store") != "postgres":
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "SQLite only")
            item.add_marker(pytest.mark.skip(reason=f"sqlite only: {reason}"))


@pytest.fixture(scope="session")
def store_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgres``: the ``--store`` option of this run."""
    return str(request.config.getoption("--store"))


@pytest.fixture(scope="session")
def _postgres_databases(store_backend: str) -> Iterator[PostgresDatabases | None]:
    if store_backend != "postgres":
        yield None
        return
    databases = PostgresDatabases()
    yield databases
    databases.close()


@pytest.fixture
def store_url(_postgres_databases: PostgresDatabases | None) -> Iterator[str | None]:
    """This test's PostgreSQL database URL with ``--store=postgres`` (fresh, at head, dropped
    afterwards with the event engines made on it), else None (each data home's SQLite file)."""
    if _postgres_databases is None:
        yield None
        return
    with _postgres_databases.open() as url:
        yield url
        _dispose_event_engine(url)


def _dispose_event_engine(url: str) -> None:
    from patchbay.runtime.events import database

    with database._engines_lock:
        engine = database._engines.pop(url, None)
    if engine is not None:
        engine.dispose()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _no_builtin_seeding() -> Iterator[None]:
    """A fresh data home holds no built-in connector unless a test turns seeding on: set for the
    whole session, so module-scoped servers (set up before any function fixture) see it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATCHBAY_BUILTINS", "off")
        yield


@pytest.fixture(autouse=True)
def _isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, store_url: str | None
) -> None:
    """No test reads or writes the real user data home; the venv's console scripts are on PATH; no
    built-in seeding (``PATCHBAY_BUILTINS``) unless the test turns it on; the store is the data
    home's SQLite file, or this test's PostgreSQL database (``--store=postgres``)."""
    monkeypatch.setenv("PATCHBAY_HOME", str(tmp_path_factory.mktemp("patchbay-home")))
    monkeypatch.setenv("PATCHBAY_BUILTINS", "off")
    if store_url is None:
        monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("PATCHBAY_DATABASE_URL", store_url)
    path = os.environ.get("PATH", "")
    if str(VENV_BIN) not in path.split(os.pathsep):
        monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{path}")


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    """The control plane on a fresh data home ``<tmp_path>/home`` (a real store: SQLite, or this
    test's PostgreSQL database with ``--store=postgres``)."""
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory ``<tmp_path>/ws``, as a canonical path."""
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()
