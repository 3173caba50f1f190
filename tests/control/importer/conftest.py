"""Importer fixtures: an isolated data home, a workspace, a fake home directory, and a way to place
the sample host files of tests/fixtures/import_configs/ (``__WORKSPACE__`` becomes the workspace)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.settings import Settings

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "import_configs"


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    settings = Settings(home=tmp_path / "data")
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "fakehome"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def place(workspace: Path) -> Callable[[str, Path], Path]:
    """Copy sample ``name`` to ``dest`` (parents created) with ``__WORKSPACE__`` replaced."""

    def put(name: str, dest: Path) -> Path:
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = (SAMPLES / name).read_text(encoding="utf-8").replace("__WORKSPACE__", str(workspace))
        dest.write_text(text, encoding="utf-8")
        return dest

    return put
