"""``patchbay gateway --stdio``: the Patchbay gateway, the one MCP server a host spawns.

It builds the workspace's projected snapshot from the store (as ``patchbay call`` does), enters a
runtime without approver and serves the host over stdin/stdout (:mod:`patchbay.interfaces.gateway`),
with the store's cached catalogs in full so that the proxy's search needs no server
(:func:`~patchbay.interfaces.gateway.catalogs.with_cached_catalogs`). It reads the store's change counter every
``Settings.gateway_reload_poll`` seconds; when a commit (``patchbay grant``, the settings page, a
connector added or disabled) changed the workspace's projection, the runtime is rebuilt and the
host told ``list_changed`` (:mod:`patchbay.interfaces.gateway.owner`). With ``PATCHBAY_REDIS_URL``
it also subscribes to the instances' wake-ups (:func:`~patchbay.adapters.wakeups.open_wakeups`)
and reloads at once when a ``patchbay serve`` on the same Redis announces a commit
(:mod:`patchbay.interfaces.gateway.fanout`); the poll stays, for a lost wake-up, a degraded Redis
and commits that announce nothing (the CLI). stdout carries only the
protocol; the one line it prints at start (the session whose event log holds the calls) goes to
stderr.

An ``ask`` call waits for the person on the settings page of the ``patchbay serve`` running on
this data home (its approvals are shared through the store; none running: ``approval_unavailable``),
at most ``Settings.gateway_approval_wait`` seconds, then ends ``approval_pending`` with the
approval's URL; the identical call made again takes the answer
(:mod:`patchbay.interfaces.gateway.approvals`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import typer

from patchbay.adapters.wakeups import open_wakeups
from patchbay.core.errors import ValidationError
from patchbay.interfaces.cli._context import err_console, handle_errors, state
from patchbay.interfaces.cli._runtime import project_snapshot, run_stoppable

__all__ = ["gateway"]

_MODES = ("proxy", "direct", "auto")


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
    if ctx.invoked_subcommand is not None:  # `gateway install|uninstall|restore`: not serving
        return
    from patchbay.interfaces.gateway import Gateway, GatewayMode, choose_mode, serve_stdio
    from patchbay.interfaces.gateway.owner import RuntimeOwner

    if not stdio:
        raise ValidationError(
            "pass --stdio to serve a host over stdin/stdout (over HTTP the gateway is /mcp on `patchbay serve`;"
            " `gateway install HOST` writes a host's entry)",
            details={"field": "stdio"},
        )
    if mode not in _MODES:
        raise ValidationError(f"unknown mode {mode!r}; use one of {', '.join(_MODES)}", details={"field": "mode"})
    from patchbay.interfaces.gateway.catalogs import with_cached_catalogs  # the SDK: only when serving

    service = state.service()

    def load() -> Any:
        return with_cached_catalogs(service, project_snapshot(service, project))

    config = load()
    settings = service.settings

    async def state_version() -> int:
        return await anyio.to_thread.run_sync(service.repository.state_version)

    from patchbay.interfaces.cli.serve import running_url
    from patchbay.interfaces.gateway.approvals import GatewayApprovals
    from patchbay.runtime.calls.approvals import ApprovalBroker

    # Redis, when configured: an answer on the page wakes the call at once, and other instances'
    # commits reload the runtime at once (else the store's change counter is polled)
    wakeups = open_wakeups(settings)
    broker = ApprovalBroker(
        expiry=settings.approval_expiry,
        store=lambda: service.repository.approvals,
        wakeups=wakeups,
        recheck=settings.approval_recheck,
    )
    approvals = GatewayApprovals(broker, lambda: running_url(settings.home), patience=settings.gateway_approval_wait)

    async def serve() -> None:
        async with anyio.create_task_group() as runtimes:
            owner = RuntimeOwner(settings, load, approver_for=lambda workspace: approvals.approver(workspace=workspace))
            try:
                runtime = await owner.start(runtimes, config=config)
                served = choose_mode(cast(GatewayMode, mode), runtime.cached_tools(), settings)
                host = Gateway(runtime, served, project=config.workspace)
                owner.add(host)
                err_console.print(
                    f"patchbay gateway: {served} mode, session {runtime.session_id} "
                    f"(patchbay events {runtime.session_id})"
                )
                async with anyio.create_task_group() as watching:
                    watching.start_soon(owner.watch, state_version, settings.gateway_reload_poll)
                    watching.start_soon(wakeups.run)
                    if settings.redis_url is not None:  # other instances' commits, at once
                        await watching.start(owner.follow, wakeups)
                    await serve_stdio(host)
                    watching.cancel_scope.cancel()
            finally:
                owner.close()  # the runtime exits: its servers stop
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await broker.discard_parked()  # nobody will make those calls again
                    await wakeups.aclose()

    try:
        run_stoppable(serve)  # SIGTERM stops it as Ctrl-C does: the runtime stops its servers
    except KeyboardInterrupt:  # a host stopping its server is no error: say so, exit as interrupted
        err_console.print("patchbay gateway: stopped")
        raise typer.Exit(130) from None
    except ExceptionGroup as group:  # the task groups' wrapping of one error: shown as that error
        raise group.exceptions[0] if len(group.exceptions) == 1 else group from None
