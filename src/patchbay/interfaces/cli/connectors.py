"""``patchbay connector ...``: add, list, show, set, enable, disable, remove.

``add`` and ``set`` take the per-connector runtime options (seed 000 §3, §3.1; seed 003 §5.1):
lifecycle, timeouts, restart policy, for local commands resource limits and for remote ones
``--allow-private`` (the egress guard refuses private addresses otherwise). Values are parsed
here only as far as text → number; every rule is the service's (``invalid_config`` naming the field).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, HttpTarget, RuntimeOptions, SocketTarget, StdioTarget
from patchbay.interfaces.cli._bindings import (
    BEARER_OPTION,
    ENV_OPTION,
    HEADER_OPTION,
    UNSET_OPTION,
    binding_rows,
    binding_specs,
)
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


# -- runtime options -------------------------------------------------------------------------

_PANEL = "Runtime options"
LIFECYCLE_OPTION = typer.Option(
    None,
    "--lifecycle",
    metavar="MODE",
    help="lazy (default: connect on first use), eager or keep_alive.",
    rich_help_panel=_PANEL,
)
IDLE_TIMEOUT_OPTION = typer.Option(
    None,
    "--idle-timeout",
    metavar="SECONDS",
    help="Close an unused lazy/eager connection after this.",
    rich_help_panel=_PANEL,
)
REQUEST_TIMEOUT_OPTION = typer.Option(
    None,
    "--request-timeout",
    metavar="SECONDS",
    help="Fail a call silent this long (progress resets it).",
    rich_help_panel=_PANEL,
)
MAX_CALL_OPTION = typer.Option(
    None, "--max-call-seconds", metavar="SECONDS", help="Hard cap on one call, progress or not.", rich_help_panel=_PANEL
)
RESTART_OPTION = typer.Option(
    None,
    "--restart/--no-restart",
    help="Restart a crashed server (default) or give up at once.",
    rich_help_panel=_PANEL,
)
RESTART_BASE_OPTION = typer.Option(
    None,
    "--restart-base",
    metavar="SECONDS",
    help="Delay before the first restart; doubles each time.",
    rich_help_panel=_PANEL,
)
RESTART_CAP_OPTION = typer.Option(
    None, "--restart-cap", metavar="SECONDS", help="Longest delay between restarts.", rich_help_panel=_PANEL
)
MAX_RESTARTS_OPTION = typer.Option(
    None, "--max-restarts", metavar="N", help="Restarts before a crash is permanent (0-100).", rich_help_panel=_PANEL
)
LIMIT_MEMORY_OPTION = typer.Option(
    None,
    "--limit-memory",
    metavar="SIZE",
    help="Address-space limit (stdio): bytes or 512M, 2G (binary).",
    rich_help_panel=_PANEL,
)
LIMIT_CPU_OPTION = typer.Option(
    None, "--limit-cpu", metavar="SECONDS", help="CPU-time limit of the server process (stdio).", rich_help_panel=_PANEL
)
LIMIT_OPEN_FILES_OPTION = typer.Option(
    None,
    "--limit-open-files",
    metavar="N",
    help="Open-file limit of the server process (stdio).",
    rich_help_panel=_PANEL,
)

ALLOW_PRIVATE_OPTION = typer.Option(
    None,
    "--allow-private/--no-allow-private",
    help="Remote only: let requests reach loopback/private/link-local addresses (refused by default).",
    rich_help_panel=_PANEL,
)

_SIZE = re.compile(r"^\s*(\d+)\s*(?:([kmgt])(?:i?b)?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
#: ``--reset`` names: the option flag without ``--`` → (option key, key inside its section or None).
_RESETS: dict[str, tuple[str, str | None]] = {
    "lifecycle": ("lifecycle", None),
    "idle-timeout": ("idle_timeout", None),
    "request-timeout": ("request_timeout", None),
    "max-call-seconds": ("max_call_seconds", None),
    "restart": ("restart", None),
    "restart-base": ("restart", "base_delay"),
    "restart-cap": ("restart", "max_delay"),
    "max-restarts": ("restart", "max_restarts"),
    "limits": ("limits", None),
    "limit-memory": ("limits", "address_space_bytes"),
    "limit-cpu": ("limits", "cpu_seconds"),
    "limit-open-files": ("limits", "open_files"),
    "allow-private": ("allow_private", None),
}


def parse_size(field: str, text: str) -> int:
    """Bytes from ``"1048576"``, ``"512K"``, ``"512M"``, ``"2G"``, ``"1T"`` (binary units; ``KiB``/``KB`` too).

    Raises:
        ConfigError: ``invalid_config`` naming ``field`` for anything else.
    """
    match = _SIZE.match(text)
    if match is None:
        raise ConfigError(field, f"must be bytes or a whole number with K, M, G or T (binary, 1K = 1024); got {text!r}")
    return int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]


def _number(field: str, text: str | None, kind: type[int] | type[float]) -> int | float | None:
    if text is None:
        return None
    try:
        return kind(text.strip())
    except ValueError:
        noun = "a whole number" if kind is int else "a number of seconds"
        raise ConfigError(field, f"must be {noun}; got {text!r}") from None


def runtime_changes(
    *,
    lifecycle: str | None = None,
    idle_timeout: str | None = None,
    request_timeout: str | None = None,
    max_call_seconds: str | None = None,
    restart: bool | None = None,
    restart_base: str | None = None,
    restart_cap: str | None = None,
    max_restarts: str | None = None,
    limit_memory: str | None = None,
    limit_cpu: str | None = None,
    limit_open_files: str | None = None,
    allow_private: bool | None = None,
    reset: list[str] | None = None,
) -> dict[str, Any]:
    """The ``update_runtime_options`` changes for the given flags (text as typed); ``{}`` if none.

    ``reset`` names options to put back to their default (``_RESETS`` keys); a reset and a value
    for the same option are refused.

    Raises:
        ConfigError: ``invalid_config`` naming the field for text that is no number or size, or an
            unknown/conflicting ``--reset``.
    """
    top: dict[str, Any] = {
        "lifecycle": lifecycle,
        "idle_timeout": _number("idle_timeout", idle_timeout, float),
        "request_timeout": _number("request_timeout", request_timeout, float),
        "max_call_seconds": _number("max_call_seconds", max_call_seconds, float),
        "allow_private": allow_private,
    }
    sections: dict[str, dict[str, Any]] = {
        "restart": {
            "enabled": restart,
            "base_delay": _number("restart.base_delay", restart_base, float),
            "max_delay": _number("restart.max_delay", restart_cap, float),
            "max_restarts": _number("restart.max_restarts", max_restarts, int),
        },
        "limits": {
            "address_space_bytes": None
            if limit_memory is None
            else parse_size("limits.address_space_bytes", limit_memory),
            "cpu_seconds": _number("limits.cpu_seconds", limit_cpu, int),
            "open_files": _number("limits.open_files", limit_open_files, int),
        },
    }
    changes: dict[str, Any] = {k: v for k, v in top.items() if v is not None}
    for key, section in sections.items():
        given = {k: v for k, v in section.items() if v is not None}
        if given:
            changes[key] = given
    values = {k: dict(v) if isinstance(v, dict) else v for k, v in changes.items()}
    for name in reset or []:
        if name not in _RESETS:
            raise ConfigError("reset", f"unknown option {name!r}; one of: {', '.join(_RESETS)}")
        key, sub = _RESETS[name]
        if (sub is None and key in values) or (sub is not None and sub in values.get(key, {})):
            raise ConfigError(key if sub is None else f"{key}.{sub}", f"given both a value and --reset {name}")
        if sub is None:
            changes[key] = None
        elif changes.get(key, {}) is not None:
            changes.setdefault(key, {})[sub] = None
    return changes


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _size(value: int) -> str:
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value % factor == 0:
            return f"{value // factor} {unit}"
    return f"{value} bytes"


def runtime_rows(connector: Connector, options: RuntimeOptions) -> list[tuple[str, str]]:
    """``show`` rows of the effective options; values not set on the connector say ``(default)``."""
    stored = connector.runtime_config

    def mark(key: str, text: str) -> str:
        return text if key in stored else f"{text} (default)"

    idle = options.idle_timeout
    if options.lifecycle == "keep_alive":
        idle_text = "never (keep_alive)"
    else:
        idle_text = mark("idle_timeout", "never" if not idle or not math.isfinite(idle) else _seconds(idle))
    r = options.restart
    restart = (
        f"on: {_seconds(r.base_delay)} doubling up to {_seconds(r.max_delay)}, at most {r.max_restarts} restarts"
        if r.enabled
        else "off: the first crash is permanent"
    )
    lim = options.limits
    parts = [
        f"memory {_size(lim.address_space_bytes)}" if lim.address_space_bytes else "",
        f"cpu {lim.cpu_seconds}s" if lim.cpu_seconds else "",
        f"open files {lim.open_files}" if lim.open_files else "",
    ]
    limits = ", ".join(p for p in parts if p) or ("-" if connector.transport == "stdio" else "- (stdio only)")
    return [
        ("lifecycle", mark("lifecycle", options.lifecycle)),
        ("idle timeout", idle_text),
        ("request timeout", mark("request_timeout", _seconds(options.request_timeout or 0))),
        ("max call", mark("max_call_seconds", _seconds(options.max_call_seconds or 0))),
        ("restart", mark("restart", restart)),
        ("limits", limits),
        (
            "private addresses",
            mark("allow_private", "allowed" if options.allow_private else "refused")
            if connector.transport in ("streamable_http", "sse")
            else "- (remote only)",
        ),
    ]


def _print_rows(rows: list[tuple[str, str]]) -> None:
    for key, value in rows:
        out_console.print(Text(f"{key:>16}: {value}"))


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
    exist_ok: bool = typer.Option(
        False, "--exist-ok", help="Succeed without change if it exists with the same target."
    ),
    lifecycle: str | None = LIFECYCLE_OPTION,
    idle_timeout: str | None = IDLE_TIMEOUT_OPTION,
    request_timeout: str | None = REQUEST_TIMEOUT_OPTION,
    max_call_seconds: str | None = MAX_CALL_OPTION,
    restart: bool | None = RESTART_OPTION,
    restart_base: str | None = RESTART_BASE_OPTION,
    restart_cap: str | None = RESTART_CAP_OPTION,
    max_restarts: str | None = MAX_RESTARTS_OPTION,
    limit_memory: str | None = LIMIT_MEMORY_OPTION,
    limit_cpu: str | None = LIMIT_CPU_OPTION,
    limit_open_files: str | None = LIMIT_OPEN_FILES_OPTION,
    allow_private: bool | None = ALLOW_PRIVATE_OPTION,
    env: list[str] = ENV_OPTION,
    header: list[str] = HEADER_OPTION,
    bearer: str | None = BEARER_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Add a connector: `add NAME -- CMD [ARGS...]`, `add NAME --url URL`, or `add NAME --socket PATH`.

    Credentials (`--env`, `--header`, `--bearer`) are stored apart, owned by the connector; the
    connector keeps references only and nothing prints a value.
    """
    service = state.service()
    options = runtime_changes(
        lifecycle=lifecycle,
        idle_timeout=idle_timeout,
        request_timeout=request_timeout,
        max_call_seconds=max_call_seconds,
        restart=restart,
        restart_base=restart_base,
        restart_cap=restart_cap,
        max_restarts=max_restarts,
        limit_memory=limit_memory,
        limit_cpu=limit_cpu,
        limit_open_files=limit_open_files,
        allow_private=allow_private,
    )
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
    specs = binding_specs(env, header, bearer)
    connector, created = service.add(
        name,
        target,
        description=description,
        enabled=enable,
        exist_ok=exist_ok,
        runtime_options=options,
        bindings=specs,
    )
    if as_json:
        effective = service.effective_runtime_options(connector).model_dump(mode="json")
        bindings = service.credentials.binding_views(connector)
        emit_json(
            {"connector": connector_dict(connector), "created": created, "runtime_options": effective}
            | {"bindings": bindings}
        )
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
        table.add_row(
            c.name, "yes" if c.settings.enabled else "no", c.transport, describe_target(c), c.settings.approval_mode
        )
    out_console.print(table)


@app.command("show")
@handle_errors
def show(name: str, as_json: bool = JSON_OPTION) -> None:
    """Show one connector."""
    service = state.service()
    connector = service.get(name)
    _, cache = service.cached_catalog(connector)
    options = service.effective_runtime_options(connector)
    if as_json:
        emit_json(
            {"connector": connector_dict(connector), "cache": cache, "runtime_options": options.model_dump(mode="json")}
            | {"bindings": service.credentials.binding_views(connector)}
        )
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
        *runtime_rows(connector, options),
        *binding_rows(service.credentials.binding_views(connector)),
    ]
    _print_rows(rows)


@app.command("set")
@handle_errors
def set_(
    name: str,
    approval_mode: str | None = typer.Option(None, "--approval-mode", help="ask, custom or allow_all."),
    include: list[str] = typer.Option(None, "--include", help="Glob of tools to show (repeat); replaces the list."),
    exclude: list[str] = typer.Option(None, "--exclude", help="Glob of tools to hide (repeat); replaces the list."),
    no_include: bool = typer.Option(False, "--no-include", help="Clear the include list (all tools visible)."),
    no_exclude: bool = typer.Option(False, "--no-exclude", help="Clear the exclude list."),
    lifecycle: str | None = LIFECYCLE_OPTION,
    idle_timeout: str | None = IDLE_TIMEOUT_OPTION,
    request_timeout: str | None = REQUEST_TIMEOUT_OPTION,
    max_call_seconds: str | None = MAX_CALL_OPTION,
    restart: bool | None = RESTART_OPTION,
    restart_base: str | None = RESTART_BASE_OPTION,
    restart_cap: str | None = RESTART_CAP_OPTION,
    max_restarts: str | None = MAX_RESTARTS_OPTION,
    limit_memory: str | None = LIMIT_MEMORY_OPTION,
    limit_cpu: str | None = LIMIT_CPU_OPTION,
    limit_open_files: str | None = LIMIT_OPEN_FILES_OPTION,
    allow_private: bool | None = ALLOW_PRIVATE_OPTION,
    reset: list[str] = typer.Option(
        None,
        "--reset",
        metavar="OPTION",
        help=f"Put a runtime option back to its default (repeat): {', '.join(_RESETS)}.",
        rich_help_panel=_PANEL,
    ),
    env: list[str] = ENV_OPTION,
    header: list[str] = HEADER_OPTION,
    bearer: str | None = BEARER_OPTION,
    unset: list[str] = UNSET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Change a connector: approval mode, include/exclude tool globs, runtime options and credential
    bindings (`--env`/`--header`/`--bearer` add or replace, `--unset` removes).

    Everything is checked before anything is written: a bad value changes nothing.
    """
    service = state.service()
    changes = runtime_changes(
        lifecycle=lifecycle,
        idle_timeout=idle_timeout,
        request_timeout=request_timeout,
        max_call_seconds=max_call_seconds,
        restart=restart,
        restart_base=restart_base,
        restart_cap=restart_cap,
        max_restarts=max_restarts,
        limit_memory=limit_memory,
        limit_cpu=limit_cpu,
        limit_open_files=limit_open_files,
        allow_private=allow_private,
        reset=reset,
    )
    specs = binding_specs(env, header, bearer)
    if changes:
        service.update_runtime_options(name, dry_run=True, **changes)
    if specs or unset:
        service.set_bindings(name, specs, unset=unset or [], dry_run=True)
    connector = service.update_settings(
        name,
        approval_mode=approval_mode,
        include_tools=[] if no_include else (include or None),
        exclude_tools=[] if no_exclude else (exclude or None),
    )
    if changes:
        connector = service.update_runtime_options(name, **changes)
    if specs or unset:
        connector = service.set_bindings(name, specs, unset=unset or [])
    options = service.effective_runtime_options(connector)
    if as_json:
        emit_json(
            {"connector": connector_dict(connector), "runtime_options": options.model_dump(mode="json")}
            | {"bindings": service.credentials.binding_views(connector)}
        )
        return
    s = connector.settings
    out_console.print(
        Text(
            f"{connector.name}: approval {s.approval_mode}; include {', '.join(s.include_tools) or '-'}; "
            f"exclude {', '.join(s.exclude_tools) or '-'}"
        )
    )
    if changes:
        _print_rows(runtime_rows(connector, options))
    if specs or unset:
        _print_rows(binding_rows(service.credentials.binding_views(connector)))


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
    """Remove a connector with its grants, cached tools and the credentials it owns."""
    connector = state.service().remove(name)
    if as_json:
        emit_json({"removed": connector.name, "connector_id": connector.connector_id})
    else:
        out_console.print(f"{connector.name}: removed")
