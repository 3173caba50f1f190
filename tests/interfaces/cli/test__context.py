"""patchbay.interfaces.cli._context, the CLI's context and output.

Sections, in this order:

- Untrusted text in the output: What the CLI prints of untrusted text: no terminal control
  sequences, one-line errors.
- The data home the CLI creates: A data home the CLI creates (``--home`` / ``PATCHBAY_HOME``) is
  private, like the default one.
- After a committed mutation: a workspace whose snapshot could not be re-written is a warning."""

from __future__ import annotations

import stat
from pathlib import Path

from typer.testing import CliRunner

from patchbay.control.connectors import ConnectorService
from patchbay.control.projection import LOCK_FILE
from patchbay.interfaces.cli import app
from patchbay.interfaces.cli._context import one_line, safe_text
from patchbay.runtime.snapshot import snapshot_path

# --- Untrusted text in the output ---


def test_terminal_escape_sequences_from_a_server_are_made_visible() -> None:
    text = "red \x1b[31malert\x1b[0m title \x1b]0;pwned\x07 done\nnext\tcol"
    shown = safe_text(text)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b[31malert" in shown
    assert "\nnext\tcol" in shown


def test_error_messages_become_one_bounded_line() -> None:
    message = "1 validation error\ntimezone\n  Field required " + "x" * 1000
    line = one_line(message)
    assert "\n" not in line and line.startswith("1 validation error timezone Field required")
    assert len(line) == 500 and line.endswith("…")


# --- The data home the CLI creates ---


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_home_named_by_patchbay_home_is_created_0700(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    result = CliRunner().invoke(app, ["connector", "list"], env={"PATCHBAY_HOME": str(home)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert mode(home) == 0o700


# --- After a committed mutation ---


def test_a_workspace_whose_snapshot_was_not_written_is_a_warning_not_a_failure(
    service: ConnectorService, workspace: Path, tmp_path: Path
) -> None:
    service.queries.project(workspace)
    service.add("first", service.stdio_target("true", [], cwd=None, workspace=workspace))
    lock = snapshot_path(workspace).parent / LOCK_FILE
    lock.unlink()
    lock.symlink_to(tmp_path / "elsewhere")  # planted by the workspace's owner
    result = CliRunner().invoke(
        app, ["--home", str(service.settings.home), "connector", "add", "second", "--", "true"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output  # the change is committed
    assert service.get("second").name == "second"
    assert f"warning: the runtime snapshot of {workspace} was not written" in " ".join(result.output.split())
    assert not snapshot_path(workspace).exists()
