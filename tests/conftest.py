"""Shared fixtures: the anyio backend, an isolated data home with the venv on PATH, and a connector
service on its own data home with an empty workspace beside it (tests that need other ones define
their own ``service``/``workspace``, which take precedence)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.settings import Settings

VENV_BIN = Path(sys.executable).parent


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
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real user data home; the venv's console scripts are on PATH; no
    built-in seeding (``PATCHBAY_BUILTINS``) unless the test turns it on."""
    monkeypatch.setenv("PATCHBAY_HOME", str(tmp_path_factory.mktemp("patchbay-home")))
    monkeypatch.setenv("PATCHBAY_BUILTINS", "off")
    monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    path = os.environ.get("PATH", "")
    if str(VENV_BIN) not in path.split(os.pathsep):
        monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{path}")


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    """The control plane on a fresh data home ``<tmp_path>/home`` (a real SQLite store)."""
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory ``<tmp_path>/ws``, as a canonical path."""
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()
