"""``patchbay resource list | read``: a connector's MCP resources from a terminal (seed 000 §7).

Listing shows metadata only. ``read`` is an explicit include: it goes through the governed path
(PermissionEngine with risk ``read``, ``sourcedFrom: user_explicit_include``) with the same approval
behaviour as ``patchbay call``: ``--yes`` approves once, a terminal asks, and without a terminal an
``ask`` decision is refused with ``approval_unavailable``. ``patchbay grant NAME resources/read
allow|ask|deny`` decides a connector's reads. Runtimes are built from the workspace's projected
snapshot, as for ``patchbay call`` (seed 003 §10.2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import typer
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from patchbay.core.errors import NotFoundError, ToolCallError
from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    err_console,
    error_line,
    handle_errors,
    one_line,
    out_console,
    safe_text,
    state,
)

__all__ = ["app", "approver_for", "report_failure", "workspace_runtime"]

app = typer.Typer(
    help="List a connector's MCP resources, or read one (an explicit, governed include).",
    no_args_is_help=True,
)

PROJECT_OPTION = typer.Option(Path("."), "--project", help="Workspace directory (default: current).")
SESSION_OPTION = typer.Option(None, "--session", help="Append to this session's event log.")


def workspace_runtime(name: str, project: Path) -> tuple[Any, Any]:
    """``(settings, config)`` for a runtime of ``project``, as ``patchbay call`` builds it: the
    workspace is re-projected and only its snapshot is loaded.

    Raises:
        NotFoundError: ``not_found``: no connector ``name``, or it is disabled (the message says
            how to enable it).
    """
    from patchbay.runtime.snapshot import load_snapshot

    service = state.service()
    connector = service.get(name)
    if not connector.settings.enabled:
        raise NotFoundError(
            f"connector {name!r} is disabled; enable it with: patchbay connector enable {name}",
            details={"connector": name, "disabled": True},
        )
    prj = service.project(project)
    service.projector.project(prj)  # the runtime loads only the projected snapshot (seed 003 §10.2)
    return service.settings, load_snapshot(prj.path, project_id=prj.project_id)


def _terminal_approver():
    async def approve(request: Any) -> str:
        def ask() -> str:
            uri = str(request.arguments.get("uri", ""))
            err_console.print(
                Text.assemble(
                    "Include resource ",
                    (one_line(uri, 500), "bold"),
                    f" from {safe_text(request.connector)} (risk: {request.risk})?",
                )
            )
            choice = Prompt.ask(
                Text(f"Allow? [o]nce, for this [s]ession (any resource of {request.connector}), [d]eny"),
                choices=["o", "s", "d"],
                default="d",
                console=err_console,
            )
            return {"o": "allow_once", "s": "allow_session", "d": "deny"}[choice]

        return await anyio.to_thread.run_sync(ask)

    return approve


async def _yes(request: Any) -> str:
    return "allow_once"


def approver_for(yes: bool) -> Any:
    """``--yes`` approves once; a terminal on stdin and stderr asks; otherwise None (headless)."""
    if yes:
        return _yes
    return _terminal_approver() if sys.stdin.isatty() and sys.stderr.isatty() else None


def report_failure(session_id: str, failure: ToolCallError, as_json: bool) -> None:
    """Print a governed failure like ``patchbay call`` does, then exit 1."""
    if as_json:
        emit_json({"session_id": session_id, "error": failure.to_dict()})
    else:
        probe_code = failure.details.get("code")
        error_line(str(failure.reason), failure.message + (f" [{probe_code}]" if probe_code else ""))
        tail = str(failure.details.get("stderrTail") or "").rstrip()
        if tail:
            err_console.print("server stderr (tail):")
            for line in tail.splitlines()[-10:]:
                err_console.print(Text(f"  {safe_text(line)}"))
        err_console.print(f"session {session_id}: patchbay events {session_id}")
    raise typer.Exit(1)


@app.command("list")
@handle_errors
def list_resources(
    name: str = typer.Argument(..., help="Connector name."),
    templates: bool = typer.Option(False, "--templates", help="List resource templates instead."),
    project: Path = PROJECT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List a connector's resources (every page), or its resource templates; reads nothing."""
    from patchbay.runtime import Runtime

    settings, config = workspace_runtime(name, project)

    async def run() -> list[Any]:
        async with Runtime(config, settings=settings) as runtime:
            if templates:
                return list(await runtime.list_resource_templates(name))
            return list(await runtime.list_resources(name))

    items = anyio.run(run)
    key = "templates" if templates else "resources"
    if as_json:
        emit_json({"connector": name, key: [item.to_dict() for item in items]})
        return
    if templates:
        table = Table("uri template", "name", "variables", "mime type")
        for t in items:
            table.add_row(
                safe_text(t.uri_template),
                safe_text(t.name),
                ", ".join(t.variables) or "-",
                safe_text(t.mime_type or "-"),
            )
    else:
        table = Table("uri", "name", "mime type", "description")
        for r in items:
            table.add_row(
                safe_text(r.uri), safe_text(r.name), safe_text(r.mime_type or "-"), one_line(r.description or "", 80)
            )
    if items:
        out_console.print(table)
    err_console.print(f"{name}: {len(items)} {key.replace('templates', 'resource templates')}")


@app.command("read")
@handle_errors
def read_resource(
    name: str = typer.Argument(..., help="Connector name."),
    uri: str = typer.Argument(..., help="Resource URI, or an RFC 6570 template with --var."),
    var: list[str] = typer.Option(None, "--var", help="Template variable key=value (repeatable); expands URI."),
    project: Path = PROJECT_OPTION,
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve once when the decision is ask."),
    session: str | None = SESSION_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Read one resource by URI through the governed include (asks when the decision is ask)."""
    from patchbay.runtime import Runtime
    from patchbay.runtime.prompts import parse_prompt_arguments
    from patchbay.runtime.resources import expand_uri_template, validate_resource_uri

    target = expand_uri_template(uri, parse_prompt_arguments(var)) if var else validate_resource_uri(uri)
    settings, config = workspace_runtime(name, project)
    approver = approver_for(yes)

    async def run() -> Any:
        async with Runtime(config, settings=settings, approver=approver, session_id=session) as runtime:
            try:
                return runtime.session_id, await runtime.include_resource(name, target), None
            except ToolCallError as exc:
                return runtime.session_id, None, exc

    session_id, included, failure = anyio.run(run)
    if failure is not None:
        report_failure(session_id, failure, as_json)
    if as_json:
        emit_json(
            {
                "session_id": session_id,
                "server": included.server,
                "uri": included.uri,
                "include_id": included.include_id,
                "size_bytes": included.size_bytes,
                "content_hash": included.content_hash,
                "source": included.source,
                "contents": [item.to_dict() for item in included.contents],
            }
        )
        return
    for item in included.contents:
        if item.text is not None:
            out_console.print(Text(safe_text(item.text)))
        else:
            mime = item.mime_type or "application/octet-stream"
            out_console.print(Text(f"[blob {safe_text(mime)}, {item.size_bytes} bytes; see --json]"))
    err_console.print(Text(f"{safe_text(included.prefix)} {included.size_bytes} bytes {included.content_hash}"))
    err_console.print(f"session {session_id}: patchbay events {session_id}")
