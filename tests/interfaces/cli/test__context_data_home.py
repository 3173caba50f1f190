"""A data home the CLI creates (``--home`` / ``PATCHBAY_HOME``) is private, like the default one."""

from __future__ import annotations

import stat
from pathlib import Path

from typer.testing import CliRunner

from patchbay.interfaces.cli import app


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_home_named_by_patchbay_home_is_created_0700(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    result = CliRunner().invoke(app, ["connector", "list"], env={"PATCHBAY_HOME": str(home)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert mode(home) == 0o700
