"""``patchbay credential list | show | set | rm``: the credential store, never a value.

Output names a credential's id, kind, source (``managed`` or ``environment`` with the variable's
NAME), owner, where it is bound, whether it is configured and when it was last used -- never the
value, in text or ``--json``. Credentials are created by ``patchbay connector add/set
--env/--header/--bearer``; here they are inspected, rotated (``set --value-stdin`` keeps the value
out of the shell history), shared and removed.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from patchbay.core.errors import ConfigError
from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, handle_errors, out_console, state

app = typer.Typer(help="Inspect, rotate, share and remove stored credentials (never printed).", no_args_is_help=True)


def _when(ms: int | None) -> str:
    if not ms:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def _source(view: dict[str, Any]) -> str:
    return f"environment {view['variable']}" if view["source"] == "environment" else "managed"


def _state(view: dict[str, Any]) -> str:
    if not view["configured"]:
        return "not configured"
    return "configured" if view["available"] else "configured, unavailable"


def _places(view: dict[str, Any]) -> str:
    from patchbay.control.credentials import describe_use  # loads the store: only when listing

    return ", ".join(f"{b['connector']} {describe_use(view['id'], b)}" for b in view["bound_as"]) or "-"


@app.command("list")
@handle_errors
def list_(
    connector: str | None = typer.Option(None, "--connector", help="Only those this connector owns or was shared."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List stored credentials: id, kind, source, owner, where bound, state, last use."""
    views = state.service().credentials.list_views(connector)
    if as_json:
        emit_json({"items": views})
        return
    if not views:
        out_console.print(Text("no stored credentials; add one with: patchbay connector set NAME --env KEY=VALUE"))
        return
    table = Table("id", "kind", "source", "owner", "bound as", "state", "last used")
    for view in views:
        table.add_row(
            view["id"],
            view["kind"],
            _source(view),
            view["owner"] or "(removed)",
            _places(view),
            _state(view),
            _when(view["last_used_at"]),
        )
    out_console.print(table)


@app.command("show")
@handle_errors
def show(credential_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JSON_OPTION) -> None:
    """Show one credential (never its value)."""
    view = state.service().credentials.show_view(credential_id)
    if as_json:
        emit_json({"item": view})
        return
    _print(view)


def _print(view: dict[str, Any]) -> None:
    rows = [
        ("id", view["id"]),
        ("kind", view["kind"]),
        ("source", _source(view)),
        ("state", _state(view)),
        ("owner", f"{view['owner'] or '(removed)'} ({view['owner_id']})"),
        ("shared with", ", ".join(view["shared_with"]) or "-"),
        ("bound as", _places(view)),
        ("created", _when(view["created_at"])),
        ("updated", _when(view["updated_at"])),
        ("last used", _when(view["last_used_at"])),
    ]
    for key, value in rows:
        out_console.print(Text(f"{key:>12}  {value}"))


@app.command("set")
@handle_errors
def set_(
    credential_id: str = typer.Argument(..., metavar="ID"),
    value: str | None = typer.Option(None, "--value", help="A new stored value (prefer --value-stdin)."),
    value_stdin: bool = typer.Option(False, "--value-stdin", help="Read the new value from stdin (one line)."),
    variable: str | None = typer.Option(None, "--variable", help="Read it from Patchbay's $VARIABLE instead."),
    share: list[str] = typer.Option(None, "--share", metavar="CONNECTOR", help="Let this connector bind it too."),
    unshare: list[str] = typer.Option(None, "--unshare", metavar="CONNECTOR", help="Take a share back."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Rotate a credential's value (or point it at an environment variable), or share it."""
    if value_stdin:
        if value is not None:
            raise ConfigError("value", "give --value or --value-stdin, not both")
        value = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if value is None and variable is None and not share and not unshare:
        raise ConfigError("value", "nothing to change: give --value-stdin, --value, --variable, --share or --unshare")
    view = state.service().credentials.update(
        credential_id, value=value, variable=variable, share=share or (), unshare=unshare or ()
    )
    if as_json:
        emit_json({"item": view})
        return
    out_console.print(Text(f"{view['id']}: updated ({_source(view)}, {_state(view)})"))


@app.command("rm")
@handle_errors
def rm(
    credential_id: str = typer.Argument(..., metavar="ID"),
    force: bool = typer.Option(False, "--force", help="Remove it even while bound (its connectors then need auth)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove a stored credential."""
    view = state.service().credentials.remove(credential_id, force=force)
    if as_json:
        emit_json({"removed": view["id"], "bound_as": view["bound_as"]})
        return
    out_console.print(Text(f"{view['id']}: removed"))
    if view["bound_as"]:
        out_console.print(Text(f"now unresolvable (auth_required until rebound): {_places(view)}"))
