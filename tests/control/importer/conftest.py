"""Importer fixtures: a fake home directory, and a way to place the sample host files of
tests/fixtures/import_configs/ (``__WORKSPACE__`` becomes the workspace). The data home
(``service``) and the workspace are tests/conftest.py's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "import_configs"


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
