"""``patchbay connector ...``: add, list, show, enable, disable, remove."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, HttpTarget, SocketTarget, StdioTarget
from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, handle_errors, out_console, state

app = typer.Typer(help="Register and manage MCP connectors.", no_args_is_help=True)


def connector_dict(connector: Connector) -> dict[str, Any]:
    """The public shape of a connector (no secret values exist on it)."""
    data = connector.model_dump(mode="json")
    data["transport"] = connector.transport
    return data


def describe_target(connector: Connector) -> str:
    target = connector.target
    if isinstance(target, StdioTarget):
        line = " ".join([target.command, *target.args])
        return f"{line}  (cwd: {target.cwd or '<workspace>'})"
    if isinstance(target, HttpTarget):
        return target.url
    if isinstance(target, SocketTarget):
        return target.path
    return "?"  # pragma: no cover


@app.command("add")
@handle_errors
def add(
    name: str = typer.Argument(..., help="Connector name: lower-case letters, digits, hyphens."),
    command: list[str] = typer.Argument(None, help="After `--`: the command and its arguments (stdio)."),
    url: str | None = typer.Option(None, "--url", help="Remote server URL (Streamable HTTP or SSE)."),
    transport: str = typer.Option("streamable_http", "--transport", help="streamable_http or sse (with --url)."),
    socket: str | None = typer.Option(None, "--socket", help="Unix socket path (absolute or ~)."),
    cwd: str | None = typer.Option(None, "--cwd", help="Working directory inside the workspace (stdio)."),
    project: Path = typer.Option(Path("."), "--project", help="Workspace that --cwd is checked against."),
    description: str = typer.Option("", "--description"),
    enable: bool = typer.Option(True, "--enable/--disabled", help="Add enabled (default) or disabled."),
    exist_ok: bool = typer.Option(False, "--exist-ok", help="Succeed without change if it exists with the same target."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Add a connector: `add NAME -- CMD [ARGS...]`, `add NAME --url URL`, or `add NAME --socket PATH`."""
    service = state.service()
    given = [bool(command), url is not None, socket is not None]
    if sum(given) != 1:
        raise ConfigError("transport", "give exactly one of: -- COMMAND [ARGS...], --url URL, --socket PATH")
    if command:
        target = service.stdio_target(command[0], list(command[1:]), cwd=cwd, workspace=project)
    elif cwd is not None:
        raise ConfigError("cwd", "only a local command (stdio) connector has a working directory")
    elif url is not None:
        target = service.remote_target(url, transport)
    else:
        target = service.socket_target(socket or "")
    connector, created = service.add(name, target, description=description, enabled=enable, exist_ok=exist_ok)
    if as_json:
        emit_json({"connector": connector_dict(connector), "created": created})
        return
    verb = "added" if created else "already present"
    out_console.print(Text(f"{connector.name}: {verb} ({connector.transport}: {describe_target(connector)})"))


@app.command("list")
@handle_errors
def list_(as_json: bool = JSON_OPTION) -> None:
    """List connectors."""
    connectors = state.service().list()
    if as_json:
        emit_json({"connectors": [connector_dict(c) for c in connectors]})
        return
    if not connectors:
        out_console.print(Text("no connectors; add one with: patchbay connector add NAME -- COMMAND [ARGS...]"))
        return
    table = Table("name", "enabled", "transport", "target", "approval")
    for c in connectors:
        table.add_row(c.name, "yes" if c.settings.enabled else "no", c.transport, describe_target(c), c.settings.approval_mode)
    out_console.print(table)


@app.command("show")
@handle_errors
def show(name: str, as_json: bool = JSON_OPTION) -> None:
    """Show one connector."""
    service = state.service()
    connector = service.get(name)
    _, cache = service.cached_catalog(connector)
    if as_json:
        emit_json({"connector": connector_dict(connector), "cache": cache})
        return
    s = connector.settings
    rows = [
        ("name", connector.name),
        ("id", connector.connector_id),
        ("transport", connector.transport),
        ("target", describe_target(connector)),
        ("enabled", "yes" if s.enabled else "no"),
        ("approval mode", s.approval_mode),
        ("include tools", ", ".join(s.include_tools) or "-"),
        ("exclude tools", ", ".join(s.exclude_tools) or "-"),
        ("description", connector.description or "-"),
        ("revision", f"{connector.revision} (settings {s.revision})"),
        ("tool cache", cache),
    ]
    for key, value in rows:
        out_console.print(Text(f"{key:>14}: {value}"))


@app.command("set")
@handle_errors
def set_(
    name: str,
    approval_mode: str | None = typer.Option(None, "--approval-mode", help="ask, custom or allow_all."),
    include: list[str] = typer.Option(None, "--include", help="Glob of tools to show (repeat); replaces the list."),
    exclude: list[str] = typer.Option(None, "--exclude", help="Glob of tools to hide (repeat); replaces the list."),
    no_include: bool = typer.Option(False, "--no-include", help="Clear the include list (all tools visible)."),
    no_exclude: bool = typer.Option(False, "--no-exclude", help="Clear the exclude list."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Change a connector's global settings: approval mode, include/exclude tool globs."""
    connector = state.service().update_settings(
        name,
        approval_mode=approval_mode,
        include_tools=[] if no_include else (include or None),
        exclude_tools=[] if no_exclude else (exclude or None),
    )
    if as_json:
        emit_json({"connector": connector_dict(connector)})
        return
    s = connector.settings
    out_console.print(
        Text(
            f"{connector.name}: approval {s.approval_mode}; include {', '.join(s.include_tools) or '-'}; "
            f"exclude {', '.join(s.exclude_tools) or '-'}"
        )
    )


def _set_enabled(name: str, enabled: bool, as_json: bool) -> None:
    connector = state.service().set_enabled(name, enabled)
    if as_json:
        emit_json({"connector": connector_dict(connector)})
    else:
        out_console.print(f"{connector.name}: {'enabled' if enabled else 'disabled'}")


@app.command("enable")
@handle_errors
def enable_(name: str, as_json: bool = JSON_OPTION) -> None:
    """Enable a connector globally (every workspace's runtime sees it)."""
    _set_enabled(name, True, as_json)


@app.command("disable")
@handle_errors
def disable(name: str, as_json: bool = JSON_OPTION) -> None:
    """Disable a connector globally (no runtime can reach it)."""
    _set_enabled(name, False, as_json)


@app.command("remove")
@handle_errors
def remove(name: str, as_json: bool = JSON_OPTION) -> None:
    """Remove a connector with its grants and cached tools."""
    connector = state.service().remove(name)
    if as_json:
        emit_json({"removed": connector.name, "connector_id": connector.connector_id})
    else:
        out_console.print(f"{connector.name}: removed")
