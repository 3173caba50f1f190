"""``patchbay connector ...``: add, list, show, set, enable, disable, remove.

``add`` and ``set`` take the per-connector runtime options (see ``_runtime_options``):
lifecycle, timeouts, restart policy, for local commands resource limits and for remote ones
``--allow-private`` (the egress guard refuses private addresses otherwise).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text

from patchbay.control.states import connector_states
from patchbay.core.builtins import builtin_spec
from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, ConnectorTarget, HttpTarget, ProbeOutcome, SocketTarget, StdioTarget
from patchbay.core.redaction import redact_text
from patchbay.core.validation import validate_policy_url
from patchbay.interfaces.cli._bindings import (
    BEARER_OPTION,
    ENV_OPTION,
    HEADER_OPTION,
    UNSET_OPTION,
    binding_rows,
    binding_specs,
)
from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, err_console, handle_errors, out_console, state
from patchbay.interfaces.cli._runtime_options import (
    ALLOW_PRIVATE_OPTION,
    IDLE_TIMEOUT_OPTION,
    LIFECYCLE_OPTION,
    LIMIT_CPU_OPTION,
    LIMIT_MEMORY_OPTION,
    LIMIT_OPEN_FILES_OPTION,
    MAX_CALL_OPTION,
    MAX_RESTARTS_OPTION,
    PANEL,
    REQUEST_TIMEOUT_OPTION,
    RESETS,
    RESTART_BASE_OPTION,
    RESTART_CAP_OPTION,
    RESTART_OPTION,
    UNRESPONSIVE_OPTION,
    print_rows,
    runtime_changes,
    runtime_rows,
)

if TYPE_CHECKING:
    from patchbay.control.connectors import ConnectorService

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


def probe_line(connector: Connector, outcome: ProbeOutcome | None) -> str:
    """The last probe in one line: ``error command_not_found: ... (2026-12-01 10:00:00 UTC, 12 ms)``."""
    if outcome is None:
        return "never (see: patchbay probe " + connector.name + ")"
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(outcome.probed_at / 1000))
    older = (
        ""
        if outcome.config_revision == connector.revision
        else f", revision {outcome.config_revision}: config changed since"
    )
    if outcome.state == "ready":
        head = f"ready, {outcome.tool_count} tools"
    else:
        head = f"error {outcome.code or 'unknown'}: {redact_text(outcome.message or '')}"
    return f"{head} ({when}, {outcome.duration_ms} ms{older})"


def command_warnings(service: ConnectorService, connector: Connector, workspace: Path) -> list[dict[str, str]]:
    """Warnings about a stdio connector's command that cannot start from ``workspace`` now
    (:meth:`ConnectorService.command_problem`): ``[{"code", "message", "hint"}]`` with code
    ``command_not_found`` or ``spawn_failed``; empty for a command that resolves and for other
    transports. The connector stays stored: the command may be installed later."""
    target = connector.target
    if not isinstance(target, StdioTarget):
        return []
    problem = service.command_problem(target, workspace=workspace)
    if problem is None:
        return []
    hint = (
        f"{connector.name} is stored but cannot start until {target.command!r} is an executable it can find: "
        "install it or put it on PATH (a host that starts the gateway may have another PATH), or give its "
        f"absolute path: patchbay connector set {connector.name} -- /path/to/command [ARGS...]; "
        f"then check with: patchbay probe {connector.name}"
    )
    return [{"code": str(problem.code), "message": problem.message, "hint": hint}]


def print_warnings(warnings: list[dict[str, str]]) -> None:
    """Each of :func:`command_warnings` on stderr: ``warning[<code>]: <message>; <hint>``."""
    for warning in warnings:
        err_console.print(Text(f"warning[{warning['code']}]: {warning['message']}; {warning['hint']}"))


# -- runtime options -------------------------------------------------------------------------


@app.command("add")
@handle_errors
def add(
    name: str = typer.Argument(..., help="Connector name: lower-case letters, digits, hyphens."),
    command: list[str] = typer.Argument(None, help="After `--`: the command and its arguments (stdio)."),
    url: str | None = typer.Option(None, "--url", help="Remote server URL (Streamable HTTP or SSE)."),
    transport: str = typer.Option(
        "streamable_http",
        "--transport",
        help="streamable_http, sse or auto (with --url; auto tries Streamable HTTP, then SSE, now, and stores the one found).",
    ),
    socket: str | None = typer.Option(None, "--socket", help="Unix socket path (absolute or ~)."),
    cwd: str | None = typer.Option(None, "--cwd", help="Working directory inside the workspace (stdio)."),
    project: Path = typer.Option(Path("."), "--project", help="Workspace that --cwd is checked against."),
    description: str = typer.Option("", "--description"),
    terms_url: str = typer.Option("", "--terms-url", help="The service's terms of use (http(s) URL)."),
    privacy_url: str = typer.Option("", "--privacy-url", help="The service's privacy policy (http(s) URL)."),
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
    unresponsive_timeouts: str | None = UNRESPONSIVE_OPTION,
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

    `--transport auto` connects once before anything is stored (a Streamable HTTP initialize,
    else SSE; within the probe timeout, through the egress guard): the connector keeps the
    transport found, and `--json` says how (`transport_detection`). When neither answers, nothing
    is stored and the error names the probe code (`server_closed`, `timeout`, `network_blocked`, ...).

    A local command is stored without being run; one that cannot be found on PATH (or is not an
    executable file) gets a warning on stderr, `warning[command_not_found]` (or `spawn_failed`)
    with how to fix it, also in `--json` (`warnings`).
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
        unresponsive_timeouts=unresponsive_timeouts,
        limit_memory=limit_memory,
        limit_cpu=limit_cpu,
        limit_open_files=limit_open_files,
        allow_private=allow_private,
    )
    given = [bool(command), url is not None, socket is not None]
    if sum(given) != 1:
        raise ConfigError("transport", "give exactly one of: -- COMMAND [ARGS...], --url URL, --socket PATH")
    target: ConnectorTarget | None = None
    if command:
        target = service.stdio_target(command[0], list(command[1:]), cwd=cwd, workspace=project)
    elif cwd is not None:
        raise ConfigError("cwd", "only a local command (stdio) connector has a working directory")
    elif url is not None:
        if transport != "auto":
            target = service.remote_target(url, transport)
    else:
        target = service.socket_target(socket or "")
    specs = binding_specs(env, header, bearer)
    add_options: dict[str, Any] = {
        "description": description,
        "terms_url": terms_url,
        "privacy_url": privacy_url,
        "enabled": enable,
        "exist_ok": exist_ok,
        "runtime_options": options,
        "bindings": specs,
    }
    detection: dict[str, Any] | None = None
    if target is None:
        import anyio

        connector, created, found = anyio.run(lambda: service.add_auto(name, url or "", **add_options))
        detection = found.to_dict()
    else:
        connector, created = service.add(name, target, **add_options)
    warnings = command_warnings(service, connector, project)
    if as_json:
        effective = service.effective_runtime_options(connector).model_dump(mode="json")
        bindings = service.credentials.binding_views(connector)
        emit_json(
            {"connector": connector_dict(connector), "created": created, "runtime_options": effective}
            | {"bindings": bindings, "warnings": warnings}
            | ({"transport_detection": detection} if detection is not None else {})
        )
        return
    verb = "added" if created else "already present"
    out_console.print(Text(f"{connector.name}: {verb} ({connector.transport}: {describe_target(connector)})"))
    print_warnings(warnings)
    if detection is not None:
        out_console.print(Text(f"  transport detected: {detection['transport']} ({detection['message']})"))


@app.command("list")
@handle_errors
def list_(as_json: bool = JSON_OPTION) -> None:
    """List connectors with their status and tool count; built-in connectors in their own group,
    with their data sources and terms link.

    The status is the settings page's badge (invalid > disabled > needs-auth > error >
    connecting/checking > connected/ready > unknown, from the configuration, the credentials, the
    last probe and the tool cache), with the error code of a failed probe.

    `--json` is the REST API's list (`GET /api/mcp/connectors`).
    """
    connectors = state.service().list_connectors()
    if as_json:
        from patchbay.interfaces.api._views import connector_summaries  # the API's shape, loaded only here

        service = state.service()
        emit_json({"connectors": [s.model_dump(mode="json") for s in connector_summaries(service, connectors)]})
        return
    if not connectors:
        out_console.print(Text("no connectors; add one with: patchbay connector add NAME -- COMMAND [ARGS...]"))
        return
    service = state.service()
    table = Table("name", "enabled", "status", "tools", "transport", "target", "approval")
    builtins = Table(
        "name", "enabled", "status", "tools", "data source", "terms", "approval", title="built-in connectors"
    )
    for c, states in zip(connectors, connector_states(service, connectors), strict=True):  # no catalog parsed
        status: str = states.status
        outcome = states.outcome
        if status == "error" and outcome is not None and outcome.code:
            status = f"error ({outcome.code})"
        enabled = "yes" if c.settings.enabled else "no"
        tools = "-" if states.tool_count is None else str(states.tool_count)
        if c.source == "builtin":
            spec = builtin_spec(c.name)
            sources = ", ".join(source.name for source in spec.data_sources) if spec is not None else "-"
            builtins.add_row(c.name, enabled, status, tools, sources, c.terms_url or "-", c.settings.approval_mode)
            continue
        table.add_row(c.name, enabled, status, tools, c.transport, describe_target(c), c.settings.approval_mode)
    if table.row_count:
        out_console.print(table)
    if builtins.row_count:
        out_console.print(builtins)


@app.command("show")
@handle_errors
def show(name: str, as_json: bool = JSON_OPTION) -> None:
    """Show one connector: target, settings, tool cache, last probe, runtime options, bindings.

    `--json` is the REST API's detail (`GET /api/mcp/connectors/NAME`).
    """
    service = state.service()
    connector = service.get(name)
    if as_json:
        from patchbay.interfaces.api._views import connector_detail  # the API's shape, loaded only here

        emit_json(connector_detail(service, connector).model_dump(mode="json"))
        return
    _, cache = service.queries.cached_catalog(connector)
    options = service.effective_runtime_options(connector)
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
        ("terms", connector.terms_url or "-"),
        ("privacy", connector.privacy_url or "-"),
        *data_source_rows(connector),
        ("revision", f"{connector.revision} (settings {s.revision})"),
        ("tool cache", cache),
        ("last probe", probe_line(connector, service.queries.last_probe(connector))),
        *runtime_rows(connector, options),
        *binding_rows(service.credentials.binding_views(connector)),
    ]
    print_rows(rows)


def data_source_rows(connector: Connector) -> list[tuple[str, str]]:
    """A built-in's data sources, three rows each: the service, its terms, its licence."""
    spec = builtin_spec(connector.name) if connector.source == "builtin" else None
    rows: list[tuple[str, str]] = []
    for source in spec.data_sources if spec is not None else ():
        rows += [
            ("data source", f"{source.name} ({source.url})"),
            ("  terms", source.terms_url),
            ("  licence", f"{source.licence} ({source.licence_url})"),
        ]
    return rows


@app.command("set")
@handle_errors
def set_(
    name: str,
    command: list[str] = typer.Argument(None, help="After `--`: a new command and its arguments (stdio)."),
    url: str | None = typer.Option(None, "--url", help="A new remote server URL (Streamable HTTP or SSE)."),
    transport: str | None = typer.Option(
        None, "--transport", help="streamable_http or sse (with --url; default: as now, else streamable_http)."
    ),
    socket: str | None = typer.Option(None, "--socket", help="A new Unix socket path (absolute or ~)."),
    cwd: str | None = typer.Option(None, "--cwd", help="Working directory inside the workspace (with a new command)."),
    project: Path = typer.Option(Path("."), "--project", help="Workspace that --cwd is checked against."),
    approval_mode: str | None = typer.Option(None, "--approval-mode", help="ask, custom or allow_all."),
    include: list[str] = typer.Option(None, "--include", help="Glob of tools to show (repeat); replaces the list."),
    exclude: list[str] = typer.Option(None, "--exclude", help="Glob of tools to hide (repeat); replaces the list."),
    no_include: bool = typer.Option(False, "--no-include", help="Clear the include list (all tools visible)."),
    no_exclude: bool = typer.Option(False, "--no-exclude", help="Clear the exclude list."),
    terms_url: str | None = typer.Option(None, "--terms-url", help="The service's terms of use (empty: none)."),
    privacy_url: str | None = typer.Option(None, "--privacy-url", help="The service's privacy policy (empty: none)."),
    lifecycle: str | None = LIFECYCLE_OPTION,
    idle_timeout: str | None = IDLE_TIMEOUT_OPTION,
    request_timeout: str | None = REQUEST_TIMEOUT_OPTION,
    max_call_seconds: str | None = MAX_CALL_OPTION,
    restart: bool | None = RESTART_OPTION,
    restart_base: str | None = RESTART_BASE_OPTION,
    restart_cap: str | None = RESTART_CAP_OPTION,
    max_restarts: str | None = MAX_RESTARTS_OPTION,
    unresponsive_timeouts: str | None = UNRESPONSIVE_OPTION,
    limit_memory: str | None = LIMIT_MEMORY_OPTION,
    limit_cpu: str | None = LIMIT_CPU_OPTION,
    limit_open_files: str | None = LIMIT_OPEN_FILES_OPTION,
    allow_private: bool | None = ALLOW_PRIVATE_OPTION,
    reset: list[str] = typer.Option(
        None,
        "--reset",
        metavar="OPTION",
        help=f"Put a runtime option back to its default (repeat): {', '.join(RESETS)}.",
        rich_help_panel=PANEL,
    ),
    env: list[str] = ENV_OPTION,
    header: list[str] = HEADER_OPTION,
    bearer: str | None = BEARER_OPTION,
    unset: list[str] = UNSET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Change a connector: its target (`-- CMD [ARGS...]`, `--url URL`, `--socket PATH`), approval
    mode, include/exclude tool globs, runtime options and credential bindings (`--env`/`--header`/
    `--bearer` add or replace, `--unset` removes).

    A new target keeps the grants, settings and bindings and makes the cached tools stale (probe
    again); a new command that cannot be found is stored with a warning, as with `add`. Everything
    is checked before anything is written: a bad value changes nothing.
    """
    service = state.service()
    target = _new_target(service, command, url, transport, socket, cwd, project, current=service.get(name))
    changes = runtime_changes(
        lifecycle=lifecycle,
        idle_timeout=idle_timeout,
        request_timeout=request_timeout,
        max_call_seconds=max_call_seconds,
        restart=restart,
        restart_base=restart_base,
        restart_cap=restart_cap,
        max_restarts=max_restarts,
        unresponsive_timeouts=unresponsive_timeouts,
        limit_memory=limit_memory,
        limit_cpu=limit_cpu,
        limit_open_files=limit_open_files,
        allow_private=allow_private,
        reset=reset,
    )
    specs = binding_specs(env, header, bearer)
    if target is not None:
        service.update_target(name, target, runtime_options=changes, dry_run=True)
        if target.transport != service.get(name).transport and (specs or unset):
            raise ConfigError("transport", "change the transport kind and the credential bindings in separate commands")
    elif changes:
        service.update_runtime_options(name, dry_run=True, **changes)
    if specs or unset:
        service.set_bindings(name, specs, unset=unset or [], dry_run=True)
    for field, url in (("terms_url", terms_url), ("privacy_url", privacy_url)):
        if url is not None:
            validate_policy_url(field, url)
    if terms_url is not None or privacy_url is not None:
        current = service.get(name)
        service.update_details(name, expected_revision=current.revision, terms_url=terms_url, privacy_url=privacy_url)
    connector = service.update_settings(
        name,
        approval_mode=approval_mode,
        include_tools=[] if no_include else (include or None),
        exclude_tools=[] if no_exclude else (exclude or None),
    )
    if target is not None:
        connector = service.update_target(name, target, runtime_options=changes)
    elif changes:
        connector = service.update_runtime_options(name, **changes)
    if specs or unset:
        connector = service.set_bindings(name, specs, unset=unset or [])
    options = service.effective_runtime_options(connector)
    warnings = command_warnings(service, connector, project) if target is not None else []
    if as_json:
        emit_json(
            {"connector": connector_dict(connector), "runtime_options": options.model_dump(mode="json")}
            | {"bindings": service.credentials.binding_views(connector), "warnings": warnings}
        )
        return
    s = connector.settings
    if target is not None:
        out_console.print(Text(f"{connector.name}: target {connector.transport}: {describe_target(connector)}"))
        print_warnings(warnings)
        out_console.print(
            Text(f"  tool cache: {service.queries.cached_catalog(connector)[1]} (probe: patchbay probe {name})")
        )
    out_console.print(
        Text(
            f"{connector.name}: approval {s.approval_mode}; include {', '.join(s.include_tools) or '-'}; "
            f"exclude {', '.join(s.exclude_tools) or '-'}"
        )
    )
    if changes:
        print_rows(runtime_rows(connector, options))
    if specs or unset:
        print_rows(binding_rows(service.credentials.binding_views(connector)))


def _new_target(
    service: ConnectorService,
    command: list[str] | None,
    url: str | None,
    transport: str | None,
    socket: str | None,
    cwd: str | None,
    project: Path,
    *,
    current: Connector,
) -> ConnectorTarget | None:
    """The target ``set`` was given, checked by the rules of ``add``; None when it was given none.

    Raises:
        ConfigError: ``invalid_config``: more than one target, ``--cwd`` or ``--transport``
            without the target they belong to, or a target ``add`` would refuse.
    """
    given = [bool(command), url is not None, socket is not None]
    if sum(given) > 1:
        raise ConfigError("transport", "give at most one of: -- COMMAND [ARGS...], --url URL, --socket PATH")
    if cwd is not None and not command:
        raise ConfigError("cwd", "--cwd goes with a new command: set NAME --cwd DIR -- COMMAND [ARGS...]")
    if transport is not None and url is None:
        raise ConfigError("transport", "--transport goes with a new URL: set NAME --url URL --transport sse")
    if command:
        return service.stdio_target(command[0], list(command[1:]), cwd=cwd, workspace=project)
    if url is not None:
        kind = transport or (current.transport if isinstance(current.target, HttpTarget) else "streamable_http")
        return service.remote_target(url, kind)
    if socket is not None:
        return service.socket_target(socket)
    return None


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
