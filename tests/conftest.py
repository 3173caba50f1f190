"""Shared fixtures: the anyio backend, an isolated data home, and the project's peer paths."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
NODE_MODULES = REPO / "node_modules"
EVERYTHING_ENTRY = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real user data home; the venv's console scripts are on PATH."""
    monkeypatch.setenv("PATCHBAY_HOME", str(tmp_path_factory.mktemp("patchbay-home")))
    monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    path = os.environ.get("PATH", "")
    if str(VENV_BIN) not in path.split(os.pathsep):
        monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{path}")


def require_peers() -> None:
    """Fail (in CI) or skip (elsewhere) when the npm peers are not installed."""
    if EVERYTHING_ENTRY.exists():
        return
    message = f"npm peers missing ({EVERYTHING_ENTRY}); run `npm ci` in {REPO}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
