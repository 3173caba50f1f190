"""Shared fixtures: the anyio backend and an isolated data home with the venv on PATH."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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
