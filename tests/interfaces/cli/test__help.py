"""``patchbay --version`` and the help output: plain metavars, one-line command summaries; what
starting the CLI loads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import patchbay
from patchbay.interfaces.cli import app


def invoke(*args: str) -> str:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_version_prints_the_package_version() -> None:
    assert invoke("--version").strip() == f"patchbay {patchbay.__version__}"


def test_flags_show_no_placeholder_and_values_show_a_plain_metavar() -> None:
    serve = invoke("serve", "--help")
    assert not re.search(r"<(bool|str|int|path|float)", serve)  # Typer's type placeholders
    assert re.search(r"--port\s+PORT\b", serve) and re.search(r"--host\s+HOST\b", serve)
    assert re.search(r"--json\s+Print machine-readable", serve)
    assert re.search(r"--help\s+Show this message", serve)
    for args in (["--help"], ["connector", "--help"], ["grant", "--help"], ["call", "--help"]):
        assert "<bool>" not in invoke(*args) and "<str>" not in invoke(*args), args


def test_a_command_list_shows_each_summary_on_one_logical_line() -> None:
    listing = invoke("connector", "--help")
    line = next(line for line in listing.splitlines() if re.match(r"\W*set\s", line))
    assert "runtime options and credential bindings" in line


def test_grant_project_help_says_it_sets_a_project_grant() -> None:
    text = " ".join(invoke("grant", "--help").split())
    assert "Show decisions" not in text
    assert "Set the grant in this workspace's project" in text


_LOADED_AFTER = """
import json, sys
from patchbay.interfaces.cli import main
sys.argv = ["patchbay", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in ("mcp", "fastapi", "uvicorn", "alembic", "json5") if m in sys.modules)), file=sys.stderr)
"""
"""Runs the CLI's entry point with the arguments given, then names which heavy packages it loaded."""


def _heavy_modules_loaded(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_AFTER, *args], capture_output=True, text=True, timeout=120, check=True
    )
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "args",
    [("--help",), ("connector", "--help"), ("connector", "list"), ("connector", "list", "--json")],
    ids=" ".join,
)
def test_commands_that_need_no_server_load_neither_the_sdk_nor_the_web_stack(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    home = str(tmp_path / "home")
    _heavy_modules_loaded("--home", home, "connector", "list")  # creates the store: migrations run once
    assert _heavy_modules_loaded("--home", home, *args) == []
