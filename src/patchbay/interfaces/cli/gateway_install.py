"""``patchbay gateway install|uninstall HOST``: write (or remove) the one host config entry that
spawns ``patchbay gateway --stdio`` for a workspace.

The change is previewed first (the file and a unified diff); it is written after a confirmation
on a terminal, or with ``--yes``; ``--dry-run`` only previews. The file is backed up beside
itself before it is replaced, and nothing but the entry changes
(:mod:`patchbay.control.gateway_install`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.syntax import Syntax

from patchbay.core.errors import ConfigError, ValidationError
from patchbay.core.settings import default_home
from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, err_console, handle_errors, out_console, state

if TYPE_CHECKING:
    from patchbay.control.gateway_install import InstallPlan

__all__ = ["install", "uninstall"]

_HOST_HELP = "The MCP host: claude-desktop, claude-code, cursor, vscode."
"""Names :data:`patchbay.control.gateway_install.GATEWAY_HOSTS` (loaded only when a command runs:
editing JSONC loads json-five, which `patchbay --help` must not pay for)."""
_MODES = ("auto", "proxy", "direct")


def _patchbay_command() -> list[str]:
    """How a host runs this very ``patchbay``: the entry point beside this interpreter (its
    virtualenv), else the one on PATH; always an absolute path."""
    beside = Path(sys.executable).with_name("patchbay")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("patchbay")
    if found is None:
        raise ConfigError("command", "cannot find the patchbay executable to write into the host's file")
    return [str(Path(found).resolve())]


def _data_home() -> Path | None:
    """The data home to pass as ``--home``: only one other than the default (a host spawns the
    gateway without this shell's ``PATCHBAY_HOME``)."""
    home = state.settings.home
    return home.resolve() if home.resolve() != default_home().resolve() else None


def _show_and_write(plan: InstallPlan, *, yes: bool, dry_run: bool, as_json: bool) -> None:
    from patchbay.control.gateway_install import apply_plan

    written, backup = False, None
    if plan.action != "unchanged" and not dry_run:
        if not yes:
            if as_json or not sys.stdin.isatty():
                if not as_json:
                    _print_plan(plan)
                raise ValidationError(
                    "not written: pass --yes to write this change (or --dry-run to only preview it)",
                    details={"field": "yes", "path": str(plan.file.path)},
                )
            _print_plan(plan)
            if not typer.confirm(f"Write {plan.file.path}?", default=False, err=True):
                err_console.print("not written")
                raise typer.Exit(1)
        elif not as_json:
            _print_plan(plan)
        backup = apply_plan(plan)
        written = True
    elif not as_json:
        _print_plan(plan)
    if as_json:
        emit_json(
            {
                "host": plan.file.host,
                "path": str(plan.file.path),
                "scope": plan.file.scope,
                "name": plan.name,
                "action": plan.action,
                "entry": plan.entry,
                "diff": plan.diff(),
                "written": written,
                "backup": None if backup is None else str(backup),
            }
        )
        return
    if plan.action == "unchanged":
        out_console.print(f"{plan.file.path}: nothing to change")
    elif written:
        out_console.print(f"wrote {plan.file.path}" + (f" (backup: {backup})" if backup else ""))
        if plan.file.host == "claude-code" and plan.action != "remove":
            out_console.print("Claude Code asks once before it starts a server of a project's .mcp.json.")
    else:
        out_console.print("dry run: nothing written")


def _print_plan(plan: InstallPlan) -> None:
    if plan.action == "unchanged":
        return  # said once, after: "nothing to change"
    err_console.print(f"{plan.file.host}: {plan.action} entry {plan.name!r} in {plan.file.path}")
    out_console.print(Syntax(plan.diff(), "diff", theme="ansi_dark", background_color="default"))


def _workspace(project: Path) -> Path:
    path = project.expanduser().resolve()
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError("project", f"{path!r} is not a UTF-8 path; a host's config file cannot name it") from None
    if not path.exists():
        raise ConfigError("project", f"{path} does not exist")
    if not path.is_dir():
        raise ConfigError("project", f"{path} is not a directory")
    return path


@handle_errors
def install(
    host: str = typer.Argument(..., help=_HOST_HELP),
    project: Path = typer.Option(Path("."), "--project", help="The workspace the host's gateway serves."),
    user: bool = typer.Option(
        False, "--user", help="The host's user-level file (Cursor, VS Code: serves the open workspace)."
    ),
    file: Path | None = typer.Option(None, "--file", help="Write this file instead of the host's standard one."),
    name: str = typer.Option("patchbay", "--name", help="The entry's name in the host's file."),
    mode: str = typer.Option("auto", "--mode", help="The gateway's mode: auto, proxy or direct."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only preview the change."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Add the Patchbay gateway to an MCP host's config: one entry that runs `patchbay gateway
    --stdio` for this workspace. Previews the change, backs the file up, touches no other entry."""
    from patchbay.control.gateway_install import gateway_entry, host_config_file, plan_install

    if mode not in _MODES:
        raise ValidationError(f"unknown mode {mode!r}; use one of {', '.join(_MODES)}", details={"field": "mode"})
    workspace = _workspace(project)
    target = host_config_file(host, project=workspace, home=Path.home(), user=user)
    if file is not None:
        target = dataclasses.replace(target, path=file.expanduser().resolve())
    entry = gateway_entry(target, _patchbay_command(), project=workspace, mode=mode, data_home=_data_home())
    if os.environ.get("PATCHBAY_DATABASE_URL") and not as_json:
        err_console.print(
            "note: the host does not see PATCHBAY_DATABASE_URL; the gateway it starts uses the data home's database"
        )
    _show_and_write(plan_install(target, entry, name=name), yes=yes, dry_run=dry_run, as_json=as_json)


@handle_errors
def uninstall(
    host: str = typer.Argument(..., help=_HOST_HELP),
    project: Path = typer.Option(Path("."), "--project", help="The workspace whose file holds the entry."),
    user: bool = typer.Option(False, "--user", help="The host's user-level file."),
    file: Path | None = typer.Option(None, "--file", help="This file instead of the host's standard one."),
    name: str = typer.Option("patchbay", "--name", help="The entry's name in the host's file."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only preview the change."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove the Patchbay gateway's entry from an MCP host's config (backed up first)."""
    from patchbay.control.gateway_install import host_config_file, plan_uninstall

    target = host_config_file(host, project=_workspace(project), home=Path.home(), user=user)
    if file is not None:
        target = dataclasses.replace(target, path=file.expanduser().resolve())
    _show_and_write(plan_uninstall(target, name=name), yes=yes, dry_run=dry_run, as_json=as_json)
