"""``patchbay resource list | read``: a connector's MCP resources from a terminal.

Listing shows metadata only. ``read`` is an explicit include: it goes through the governed path
(PermissionEngine with risk ``read``, ``sourcedFrom: user_explicit_include``) with the same approval
behaviour as ``patchbay call``: ``--yes`` approves once, a terminal asks, and without a terminal an
``ask`` decision is refused with ``approval_unavailable``. ``patchbay grant NAME --resources
allow|ask|deny`` decides a connector's reads (its own key space: no tool grant touches it). Runtimes
are built from the workspace's projected snapshot, as for ``patchbay call``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    err_console,
    handle_errors,
    one_line,
    out_console,
    safe_text,
)
from patchbay.interfaces.cli._runtime import (
    approver_for,
    connector_runtime,
    print_listing,
    print_session,
    run_governed,
    run_runtime,
)

__all__ = ["app"]

app = typer.Typer(
    help="List a connector's MCP resources, or read one (an explicit, governed include).",
    no_args_is_help=True,
)

PROJECT_OPTION = typer.Option(Path("."), "--project", help="Workspace directory (default: current).")
SESSION_OPTION = typer.Option(None, "--session", help="Append to this session's event log.")


def _include_question(request: Any) -> tuple[Text, Text]:
    """What a terminal asks before a resource is included."""
    uri = str(request.arguments.get("uri", ""))
    described = Text.assemble(
        "Include resource ",
        (one_line(uri, 500), "bold"),
        f" from {safe_text(request.connector)} (risk: {request.risk})?",
    )
    return described, Text(f"Allow? [o]nce, for this [s]ession (any resource of {request.connector}), [d]eny")


@app.command("list")
@handle_errors
def list_resources(
    name: str = typer.Argument(..., help="Connector name."),
    templates: bool = typer.Option(False, "--templates", help="List resource templates instead."),
    project: Path = PROJECT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List a connector's resources (every page), or its resource templates; reads nothing."""
    settings, config = connector_runtime(name, project)

    async def listing(runtime: Any) -> list[Any]:
        if templates:
            return list(await runtime.list_resource_templates(name))
        return list(await runtime.list_resources(name))

    items = run_runtime(settings, config, listing)
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
    print_listing(table, f"{name}: {len(items)} {key.replace('templates', 'resource templates')}")


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
    from patchbay.runtime.context.prompts import parse_prompt_arguments
    from patchbay.runtime.context.resources import expand_uri_template, validate_resource_uri

    target = expand_uri_template(uri, parse_prompt_arguments(var)) if var else validate_resource_uri(uri)
    settings, config = connector_runtime(name, project)
    session_id, included = run_governed(
        settings,
        config,
        lambda runtime: runtime.include_resource(name, target),
        as_json=as_json,
        approver=approver_for(yes, _include_question),
        session=session,
    )
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
    print_session(session_id)
