"""``patchbay import preview|commit``: legacy MCP config import.

``preview`` reads the standard locations of the workspace and the home directory (or the files
and host keywords named) and reports every server definition; it starts nothing and writes
nothing. ``commit`` scans again and imports only the definitions named with ``--select``, in one
transaction. Plaintext values are never printed (only ``configured: true``); with ``--json``
the preview is the :class:`~patchbay.control.importer.ImportPreview` document.

Exit status: 0; 1 when a scanned file is malformed (line and column reported), unreadable or
missing (a preview still prints everything it could read), or on any error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from patchbay.control.importer import HOST_KEYWORDS
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    error_line,
    handle_errors,
    out_console,
    safe_text,
    state,
)

if TYPE_CHECKING:  # the report models load only when a command of this group runs
    from patchbay.control.importer import ImportPreview, PreviewEntry

app = typer.Typer(
    help="Import MCP servers from legacy config files: preview first, then commit the ones you select.",
    no_args_is_help=True,
)

_KEYWORDS = ", ".join(HOST_KEYWORDS)
PATHS_ARGUMENT = typer.Argument(
    None,
    help=f"Files, or host keywords ({_KEYWORDS}), to read instead of the standard locations.",
    show_default=False,
)
PROJECT_OPTION = typer.Option(Path("."), "--project", help="Workspace whose files are read and that cwd must stay in.")
HOME_OPTION = typer.Option(
    None, "--user-home", help="Home directory for ~ and user-level files (default: the current user's)."
)
INPUT_OPTION = typer.Option(
    None, "--input", metavar="ID=VAR", help="Map a VS Code ${input:ID} to the environment variable VAR (repeat)."
)
RENAME_OPTION = typer.Option(
    None, "--rename", metavar="OLD=NEW", help="Import the definition named OLD as connector NEW (repeat)."
)


PLAIN_OPTION = typer.Option(
    None,
    "--plain",
    metavar="[ENTRY:]FIELD",
    help="Keep a literal value (e.g. env.NODE_ENV) as a plain setting, not a credential (repeat).",
)
SECRET_OPTION = typer.Option(
    None,
    "--secret",
    metavar="[ENTRY:]FIELD",
    help="Store a literal value (e.g. env.REGION_KEY) as a managed credential, not a plain setting (repeat).",
)


def _classify(plain: list[str] | None, secret: list[str] | None) -> dict[str, str]:
    out = {field: "plain" for field in plain or []}
    for field in secret or []:
        if field in out:
            raise ConfigError("classify", f"{field[:80]!r} is given as both --plain and --secret")
        out[field] = "credential"
    return out


def _pairs(field: str, items: list[str] | None, shape: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise ConfigError(field, f"must be {shape}, got {item[:80]!r}")
        if key in out:
            raise ConfigError(field, f"{key!r} is given twice")
        out[key] = value
    return out


def _home(user_home: Path | None) -> Path:
    return user_home.absolute() if user_home is not None else Path.home()


def _exit_for(report: ImportPreview) -> None:
    if not report.ok:
        raise typer.Exit(1)


@app.command("preview")
@handle_errors
def preview(
    paths: list[str] = PATHS_ARGUMENT,
    project: Path = PROJECT_OPTION,
    user_home: Path | None = HOME_OPTION,
    input_: list[str] = INPUT_OPTION,
    rename: list[str] = RENAME_OPTION,
    diff: bool = typer.Option(False, "--diff", help="Print each entry's normalised diff."),
    plain: list[str] = PLAIN_OPTION,
    secret: list[str] = SECRET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Show what importing would do, entry by entry; nothing is started, run or written."""
    from patchbay.control.importer import preview_import  # loads the connector service: only here

    report = preview_import(
        state.service(),
        workspace=project,
        home=_home(user_home),
        paths=paths or [],
        inputs=_pairs("input", input_, "ID=VAR"),
        renames=_pairs("rename", rename, "OLD=NEW"),
        classify=_classify(plain, secret),
    )
    if as_json:
        emit_json(report.model_dump(mode="json"))
        _exit_for(report)
        return
    for file in report.files:
        if file.status == "absent":
            continue
        if file.error is not None:
            details = file.error.get("details", {})
            where = f" (line {details['line']}, column {details['column']})" if "line" in details else ""
            error_line(file.error["code"], f"{file.label}: {file.status}{where}: {file.error['message']}")
        else:
            out_console.print(Text(safe_text(f"{file.path}: {file.entries} definition(s)")))
        for warning in file.warnings:
            out_console.print(Text(safe_text(f"  warning: {warning}")))
    if not report.entries:
        out_console.print(Text("no MCP server definitions found"))
    for entry in report.entries:
        _print_entry(entry, diff)
    _exit_for(report)


def _status(entry: PreviewEntry) -> str:
    if entry.shadowed_by is not None:
        return f"shadowed by {entry.shadowed_by.path} (precedence {entry.shadowed_by.precedence})"
    if entry.conflict is not None:
        return f"conflicts with connector {entry.conflict.connector}"
    if entry.problems:
        return "not importable"
    return "importable, " + ("lossless" if entry.lossless else "with losses")


def _print_entry(entry: PreviewEntry, diff: bool) -> None:
    lines = [f"{entry.name} → {entry.import_name or '?'}  [{_status(entry)}]"]
    source = entry.source
    lines.append(f"  source: {source.path} ({source.scope}, {source.root_key}, precedence {source.precedence})")
    lines.append(f"  transport: {entry.transport or '?'} ({entry.transport_spelling or 'unknown'})")
    target = entry.target or {}
    if "command" in target:
        cwd = target.get("cwd") or "<workspace>"
        lines.append(f"  command: {' '.join([target['command'], *target.get('args', [])])}  (cwd: {cwd})")
    elif "url" in target:
        lines.append(f"  url: {target['url']}")
    elif "socket_path" in target:
        lines.append(f"  socket: {target['socket_path']}")
    for b in entry.bindings:
        place = "bearer" if b.delivery == "bearer" else f"{b.delivery} {b.name}"
        if b.source == "environment":
            what = f"environment variable {b.variable}"
            what += " (with its default)" if b.has_default else ""
        elif b.source == "plain":
            what = "plain setting (not a secret), kept in the connector's config; --secret FIELD to store it as a credential"
        elif b.source == "managed":
            what = "plaintext value (configured: true), stored as a managed credential"
            what += " (suspected secret)" if b.sensitive else "; --plain FIELD to keep it as a plain setting"
        else:
            what = f"{b.source}, cannot be imported as written"
        lines.append(f"  {place} ← {what}")
    for helper in entry.helpers:
        lines.append(f"  helper at {helper.field} would run {helper.program!r} (not run)")
    for path in entry.outside_workspace:
        lines.append(f"  outside the workspace: {path.field} {path.path}")
    for issue in entry.problems:
        lines.append(f"  problem [{issue.code}] at {issue.field} — {issue.message}")
    for issue in entry.losses:
        lines.append(f"  loss [{issue.code}] at {issue.field} — {issue.message}")
    if diff:
        lines.extend(f"  {line}" for line in entry.diff)
    for line in lines:
        out_console.print(Text(safe_text(line)))  # names and paths come from the file: escapes made visible


def _select_hint(exc: NotFoundError, names: list[str], paths: list[str]) -> NotFoundError:
    """``exc``, or -- when the missing file is a bare word after ``--select A`` (``--select A B``
    takes ``B`` for a file to read) -- the same error saying how to select several definitions."""
    missing = str(exc.details.get("path") or "")
    words = [p for p in paths if "/" not in p and p not in HOST_KEYWORDS]
    if not names or not missing or Path(missing).name not in words:
        return exc
    return NotFoundError(
        f"{missing}: no such file (the words after the options are files to read); to import several "
        f"definitions write --select {','.join([*names, *words])} or repeat --select",
        details=exc.details,
    )


@app.command("commit")
@handle_errors
def commit(
    paths: list[str] = PATHS_ARGUMENT,
    select: list[str] = typer.Option(
        None, "--select", metavar="NAME[,NAME...]", help="Definitions to import: NAME,NAME or repeat --select."
    ),
    rename: list[str] = RENAME_OPTION,
    input_: list[str] = INPUT_OPTION,
    references_only: bool = typer.Option(
        False, "--references-only", help="Refuse plaintext values instead of storing them as managed credentials."
    ),
    disabled: bool = typer.Option(False, "--disabled", help="Import the connectors disabled."),
    project: Path = PROJECT_OPTION,
    user_home: Path | None = HOME_OPTION,
    plain: list[str] = PLAIN_OPTION,
    secret: list[str] = SECRET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Import the selected definitions as connectors, all or none (the files are read again)."""
    from patchbay.control.importer import commit_import  # loads the connector service: only here

    names = [name.strip() for item in select or [] for name in item.split(",") if name.strip()]
    try:
        result = commit_import(
            state.service(),
            select=names,
            workspace=project,
            home=_home(user_home),
            paths=paths or [],
            inputs=_pairs("input", input_, "ID=VAR"),
            renames=_pairs("rename", rename, "OLD=NEW"),
            references_only=references_only,
            enabled=False if disabled else None,
            classify=_classify(plain, secret),
        )
    except NotFoundError as exc:
        raise _select_hint(exc, names, paths or []) from exc
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    for item in result.imported:
        out_console.print(Text(safe_text(f"{item.connector}: imported ({item.transport}) from {item.source}")))
        for view in item.bindings:
            place = "bearer" if view["delivery"] == "bearer" else f"{view['delivery']} {view['name']}"
            if view["source"] == "plain":
                out_console.print(Text(safe_text(f"  {place} = {view['plain']!r} (plain setting)")))
                continue
            source = f"environment variable {view['variable']}" if view["source"] == "environment" else "stored value"
            out_console.print(Text(f"  {place} ← {view['ref']} ({source})"))
