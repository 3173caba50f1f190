"""``patchbay gateway install|uninstall|restore HOST``: write (or remove) the one host config entry
that spawns ``patchbay gateway --stdio`` for a workspace, or put a backup of the host's file back.

HOST is taken in any case (``Claude-Desktop``) and shown by its canonical name. The change is
previewed first (the file and a unified diff); it is written after a confirmation on a terminal,
or with ``--yes``; ``--dry-run`` only previews. The file is backed up beside itself
(``<file>.patchbay-backup-<UTC time>``, so a project's file has its backup in the workspace) before
it is replaced, the backup's path is printed, and nothing but the entry changes
(:mod:`patchbay.control.gateway_install`). ``restore`` writes the newest backup (or ``--backup
PATH``) back, backing up the current file first.
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
    from patchbay.control.gateway_install import HostConfigFile, InstallPlan

__all__ = ["install", "restore", "uninstall"]

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


def _restore_command(plan: InstallPlan, *, project: Path, user: bool, file: Path | None) -> str:
    """The ``gateway restore`` command that puts back a backup of ``plan``'s file."""
    where = f" --file {file}" if file is not None else ""
    if file is None and user and plan.file.host != "claude-desktop":
        where = " --user"
    elif file is None and plan.file.scope == "project":
        where = f" --project {project}"
    return f"patchbay gateway restore {plan.file.host}{where}"


def _show_and_write(plan: InstallPlan, *, yes: bool, dry_run: bool, as_json: bool, restore: str = "") -> None:
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
                "name": plan.name or None,
                "action": plan.action,
                "entry": plan.entry,
                "diff": plan.diff(),
                "written": written,
                "backup": None if backup is None else str(backup),
                "restored_from": None if plan.source is None else str(plan.source),
            }
        )
        return
    if plan.action == "unchanged":
        out_console.print(f"{plan.file.host}: {plan.file.path}: nothing to change")
    elif written:
        source = f" from {plan.source}" if plan.source is not None else ""
        out_console.print(f"{plan.file.host}: wrote {plan.file.path}{source}")
        if backup is not None:
            out_console.print(
                f"  backup of the previous file: {backup}" + (f" (put it back: {restore})" if restore else "")
            )
        if plan.file.host == "claude-code" and plan.action != "remove":
            out_console.print("Claude Code asks once before it starts a server of a project's .mcp.json.")
    else:
        out_console.print("dry run: nothing written")


def _print_plan(plan: InstallPlan) -> None:
    if plan.action == "unchanged":
        return  # said once, after: "nothing to change"
    if plan.source is not None:
        err_console.print(f"{plan.file.host}: restore {plan.file.path} from {plan.source}")
    else:
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


def _host_file(host: str, workspace: Path, *, user: bool, file: Path | None) -> HostConfigFile:
    """The host's config file for ``workspace`` (``--user``: its user-level one; ``--file``: that
    file instead). Raises ConfigError (``invalid_config``) for an unknown host."""
    from patchbay.control.gateway_install import host_config_file

    target = host_config_file(host, project=workspace, home=Path.home(), user=user)
    return target if file is None else dataclasses.replace(target, path=file.expanduser().resolve())


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
    from patchbay.control.gateway_install import gateway_entry, plan_install

    if mode not in _MODES:
        raise ValidationError(f"unknown mode {mode!r}; use one of {', '.join(_MODES)}", details={"field": "mode"})
    workspace = _workspace(project)
    target = _host_file(host, workspace, user=user, file=file)
    entry = gateway_entry(target, _patchbay_command(), project=workspace, mode=mode, data_home=_data_home())
    if os.environ.get("PATCHBAY_DATABASE_URL") and not as_json:
        err_console.print(
            "note: the host does not see PATCHBAY_DATABASE_URL; the gateway it starts uses the data home's database"
        )
    plan = plan_install(target, entry, name=name)
    restore = _restore_command(plan, project=workspace, user=user, file=file)
    _show_and_write(plan, yes=yes, dry_run=dry_run, as_json=as_json, restore=restore)


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
    """Remove the Patchbay gateway's entry from an MCP host's config (backed up first). To put
    the whole file back as it was before an install, use `gateway restore HOST`."""
    from patchbay.control.gateway_install import plan_uninstall

    workspace = _workspace(project)
    target = _host_file(host, workspace, user=user, file=file)
    plan = plan_uninstall(target, name=name)
    restore = _restore_command(plan, project=workspace, user=user, file=file)
    _show_and_write(plan, yes=yes, dry_run=dry_run, as_json=as_json, restore=restore)


@handle_errors
def restore(
    host: str = typer.Argument(..., help=_HOST_HELP),
    project: Path = typer.Option(Path("."), "--project", help="The workspace whose file was backed up."),
    user: bool = typer.Option(False, "--user", help="The host's user-level file."),
    file: Path | None = typer.Option(None, "--file", help="This file instead of the host's standard one."),
    backup: Path | None = typer.Option(
        None, "--backup", help="The backup to put back (one beside the file; default: the newest)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only preview the change."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Put a backup of a host's config file back: the newest `<file>.patchbay-backup-<UTC time>`
    beside it (or `--backup PATH`). The whole file becomes the backup (the diff shows what that
    undoes); the current file is backed up first. `--json` names the backup (`restored_from`)."""
    from patchbay.control.gateway_install import plan_restore

    workspace = _workspace(project)
    target = _host_file(host, workspace, user=user, file=file)
    plan = plan_restore(target, None if backup is None else backup.expanduser().resolve())
    again = _restore_command(plan, project=workspace, user=user, file=file)
    _show_and_write(plan, yes=yes, dry_run=dry_run, as_json=as_json, restore=again)
