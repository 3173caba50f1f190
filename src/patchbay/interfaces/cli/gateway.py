"""``patchbay gateway --stdio``: the Patchbay gateway, the one MCP server a host spawns.

It builds the workspace's projected snapshot from the store (as ``patchbay call`` does), enters one
runtime without approver for its whole life, and serves the host over stdin/stdout
(:mod:`patchbay.interfaces.gateway`), with the store's cached catalogs in full so that
the proxy's search needs no server (:func:`with_cached_catalogs`). stdout carries only the protocol; the one line it prints at
start (the session whose event log holds the calls) goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import typer

from patchbay.core.errors import ValidationError
from patchbay.interfaces.cli._context import err_console, handle_errors, state
from patchbay.interfaces.cli._runtime import project_snapshot, run_runtime

__all__ = ["gateway"]

_MODES = ("proxy", "direct", "auto")


def with_cached_catalogs(service: Any, config: Any) -> Any:
    """``config`` with each server's cached catalog in full (descriptions, schemas) from the
    store's fresh probe cache, where the projection carries only names and risk hints: the proxy's
    search and ``--mode auto`` then read it without starting any server. A server whose cache is
    missing or stale keeps what the projection gave; the projected tool set itself never changes here."""
    servers = []
    for server in config.servers:
        entry, _ = service.queries.cached_catalog(service.get(server.name))
        if entry is not None:
            full = {tool.name: tool for tool in entry.tools}
            server = server.model_copy(update={"tools": tuple(full.get(t.name, t) for t in server.tools)})
        servers.append(server)
    return config.model_copy(update={"servers": tuple(servers)})


@handle_errors
def gateway(
    ctx: typer.Context,
    stdio: bool = typer.Option(False, "--stdio", help="Serve MCP on stdin/stdout (what a host spawns)."),
    project: Path = typer.Option(Path("."), "--project", help="Workspace whose governed catalog is served."),
    mode: str = typer.Option(
        "auto", "--mode", help="proxy (one search/describe/call tool), direct (every tool) or auto (by catalog size)."
    ),
) -> None:
    """Serve this workspace's governed MCP tools to an MCP host (Claude Desktop, Claude Code, Cursor...).

    The host's config entry runs: patchbay gateway --stdio --project /path (README: "Use Patchbay
    from any MCP host")."""
    if ctx.invoked_subcommand is not None:  # `gateway install|uninstall`: not serving
        return
    from patchbay.interfaces.gateway import Gateway, GatewayMode, choose_mode, serve_stdio
    from patchbay.runtime import Runtime

    if not stdio:
        raise ValidationError(
            "pass --stdio to serve a host over stdin/stdout (or use `gateway install HOST`)", details={"field": "stdio"}
        )
    if mode not in _MODES:
        raise ValidationError(f"unknown mode {mode!r}; use one of {', '.join(_MODES)}", details={"field": "mode"})
    service = state.service()
    config = with_cached_catalogs(service, project_snapshot(service, project))
    settings = service.settings

    async def serve(runtime: Runtime) -> None:
        served = choose_mode(cast(GatewayMode, mode), runtime.cached_tools(), settings)
        err_console.print(
            f"patchbay gateway: {served} mode, session {runtime.session_id} (patchbay events {runtime.session_id})"
        )
        await serve_stdio(Gateway(runtime, served, project=config.workspace))

    run_runtime(settings, config, serve)  # SIGTERM stops it as Ctrl-C does: the runtime stops its servers
