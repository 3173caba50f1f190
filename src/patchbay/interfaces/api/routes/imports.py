"""Legacy config import routes, on the importer of :mod:`patchbay.control.importer`.

``sources`` lists the files an import can read (the settings page's picker). ``preview`` reads
the standard locations of the workspace ``cwd`` (default: where the server was started) and of
the serving user's home directory, or the files and host keywords named in ``paths`` (relative
ones against the workspace), plus a pasted ``text``, and reports every definition: source and
precedence, transport, suspected plaintext secrets as ``configured: true``, ``!command`` helpers
(never run), name conflicts, paths outside the workspace, losses and a normalised diff. It starts
no command, runs no helper and opens no connection. ``commit`` imports only the selected
definitions in one transaction (credentials included; a failure keeps nothing).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter

import patchbay.interfaces.api.contracts as c
from patchbay.control.importer import commit_import, list_sources, preview_import
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.routes._deps import Context, Service, Workspace, reload_view, workspace_or_default
from patchbay.runtime.sessions import collect_reloads

__all__ = ["router"]

router = APIRouter(prefix="/api/mcp/import", tags=["import"])


@router.get(
    "/sources",
    response_model=c.ImportCandidates,
    responses=error_responses(404),
    summary="List the config files an import can read",
)
def sources(context: Context, cwd: Workspace = None) -> c.ImportCandidates:
    """The standard locations of the workspace and of the serving user's home, then the host
    files (Claude Desktop, Claude Code, Cursor, VS Code), each with whether it exists and what to
    name in ``paths`` to read it. Looks at file metadata only: nothing is read or parsed."""
    return list_sources(workspace=workspace_or_default(context, cwd), home=Path.home())


@router.post(
    "/preview",
    response_model=c.ImportPreview,
    responses=error_responses(404),
    summary="Preview importing legacy MCP config files",
)
def preview(body: c.ImportPreviewRequest, service: Service, context: Context, cwd: Workspace = None) -> c.ImportPreview:
    """Every file looked at (a malformed one with its line and column; malformed is never
    missing) and every definition found. Writes nothing."""
    workspace = workspace_or_default(context, cwd)
    return preview_import(
        service,
        workspace=workspace,
        home=Path.home(),
        paths=body.paths,
        text=body.text,
        cwd=workspace,
        inputs=body.inputs,
        renames=body.renames,
        classify=body.classify,
    )


@router.post(
    "/commit",
    response_model=c.ImportCommitted,
    responses=error_responses(404),
    summary="Import the selected definitions",
)
def commit(body: c.ImportCommitRequest, service: Service, context: Context, cwd: Workspace = None) -> c.ImportCommitted:
    """Import only ``select`` in one transaction: ``${VAR}`` placeholders become environment
    references (defaults kept), secret-looking literal values managed credentials (or a 422 with
    ``references_only``), other literal values plain settings (``classify`` overrides that); an
    entry that conflicts, is shadowed or cannot be imported is a 422 naming it, a name in no file
    a 404, and nothing is kept. ``runtime_reload``: how the open sessions took the import."""
    workspace = workspace_or_default(context, cwd)
    with collect_reloads() as reloads:
        result = commit_import(
            service,
            select=body.select,
            workspace=workspace,
            home=Path.home(),
            paths=body.paths,
            text=body.text,
            cwd=workspace,
            inputs=body.inputs,
            renames=body.renames,
            classify=body.classify,
            references_only=body.references_only,
            enabled=body.enabled,
        )
    return c.ImportCommitted(imported=result.imported, runtime_reload=reload_view(reloads.result()))
