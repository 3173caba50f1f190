"""Probe and tool routes: a real bounded probe, the cached tools with their effective decisions, and
grants per scope (global without ``cwd``, the workspace's project with it; grants are idempotent
upserts that bump no revision): tool grants under ``tools/{tool}``, the connector's resource-read
grant under ``resources/grant`` and prompt grants under ``prompts/{prompt}/grant``, each in its own
key space so no tool name reaches the others.

Only setting a project grant makes a ``cwd`` a project. Every known project's workspace gets its
runtime snapshot written on each committed change (``<cwd>/.patchbay/``), so looking (tools),
probing and clearing never create one: a ``cwd`` that is no project yet shows the global decisions
and has no grant to clear."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import anyio.to_thread
from fastapi import APIRouter
from fastapi import Path as PathParam

import patchbay.interfaces.api.contracts as c
from patchbay.core.errors import PatchbayError
from patchbay.core.models import RESOURCE_SUBJECT, GrantKind, Project
from patchbay.interfaces.api._views import probe_report, tool_list
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.routes._deps import (
    ConnectorRef,
    Context,
    Service,
    Workspace,
    reload_view,
    resolve_connector,
    workspace_or_default,
)
from patchbay.runtime.sessions import collect_reloads

__all__ = ["router"]

router = APIRouter(prefix="/api/mcp/connectors", tags=["tools"])

ToolName = Annotated[str, PathParam(min_length=1, max_length=512, description="The server's own tool name.")]
_SubjectKind = Literal["resource", "prompt"]
PromptName = Annotated[
    str, PathParam(min_length=1, max_length=512, description="The prompt's name, or `*` for every prompt.")
]


@router.post(
    "/{connector}/probe",
    response_model=c.ProbeReport,
    responses=error_responses(404),
    summary="Probe a connector for real",
)
async def probe(connector: ConnectorRef, context: Context, cwd: Workspace = None) -> c.ProbeReport:
    """A bounded real handshake + tools/list (+ resources/list): 15 s, 50 pages, 2 MiB of metadata,
    at most one probe per connector and 4 at once; never calls a tool. A server that fails is a 200
    with ``state: error`` and a stable ``code``. A ready catalog is cached, and the open sessions
    are rebuilt with it (``runtime_reload``). Stdio servers run in the workspace ``cwd`` (default:
    where the server was started); probing does not make it a project."""
    service = await anyio.to_thread.run_sync(context.connector_service)

    def prepare() -> tuple[str, Path]:
        current = resolve_connector(service, connector)
        workspace = workspace_or_default(context, cwd)
        found = service.queries.find_project(workspace)  # checks the directory; creates nothing
        return current.name, Path(found.path) if found is not None else workspace.resolve()

    name, workspace = await anyio.to_thread.run_sync(prepare)
    with collect_reloads() as reloads:
        result = await service.probe(name, workspace=workspace)
    return probe_report(result, reload_view(await reloads.wait()))


@router.get(
    "/{connector}/tools",
    response_model=c.ToolList,
    responses=error_responses(404),
    summary="Cached tools with their effective decisions",
)
def list_tools(connector: ConnectorRef, service: Service, cwd: Workspace = None) -> c.ToolList:
    """The cached catalog with each tool's effective decision (DESIGN.md "Permissions"): the
    global decisions, or with ``cwd`` those in that workspace's project (project overrides
    included; the global ones while the workspace is no project). Reads the cache only (probe to
    refresh it) and writes nothing."""
    current = resolve_connector(service, connector)
    project = service.queries.find_project(Path(cwd)) if cwd is not None else None
    return tool_list(service.queries.tools(current.name, project=project))


@router.put(
    "/{connector}/tools/{tool:path}",
    response_model=c.ToolGrantSet,
    responses=error_responses(404),
    summary="Set a tool grant",
)
def put_grant(
    connector: ConnectorRef, tool: ToolName, body: c.ToolGrantUpdate, service: Service, cwd: Workspace = None
) -> c.ToolGrantSet:
    """Without ``cwd``: the global default for the tool; with ``cwd``: that workspace's project
    override. A global ``deny`` can never be lifted by a project grant. A tool the connector's
    probed (fresh cached) catalog does not list is refused, 404 ``not_found`` with
    ``details.tool`` and ``details.suggestions`` (the closest cached names), unless
    ``unknown_ok``; without a probed catalog the name cannot be checked and the grant is stored.
    A stored grant for a tool the cache does not know matches nothing until a probe lists it
    (``matches_known_tool`` false)."""
    current = resolve_connector(service, connector)
    project = Path(cwd) if cwd is not None else None
    with collect_reloads() as reloads:
        grant = service.grant(current.name, tool, body.decision, project=project, refuse_unknown=not body.unknown_ok)
    try:  # the grant is saved; a failing read-back must not make the request fail
        known = {t.name for t in service.queries.tools(current.name, project=project).tools}
    except PatchbayError:
        known = set()
    return c.ToolGrantSet(
        connector=current.name,
        tool=tool,
        decision=grant.decision,
        scope="project" if project else "global",
        project_id=grant.project_id,
        matches_known_tool=tool in known,
        runtime_reload=reload_view(reloads.result()),
    )


@router.delete(
    "/{connector}/tools/{tool:path}",
    response_model=c.ToolGrantCleared,
    responses=error_responses(404),
    summary="Clear a tool grant (inherit again)",
)
def clear_grant(connector: ConnectorRef, tool: ToolName, service: Service, cwd: Workspace = None) -> c.ToolGrantCleared:
    """Remove the grant of that scope so the tool inherits again; ``cleared`` is false when there
    was none (the call is idempotent). A ``cwd`` that is no project has no grant: nothing is written
    (``project_id`` null)."""
    name, cleared, project, reload = _clear(service, connector, "tool", tool, cwd)
    return c.ToolGrantCleared(
        connector=name,
        tool=tool,
        cleared=cleared,
        scope="project" if cwd is not None else "global",
        project_id=project.project_id if project else None,
        runtime_reload=reload,
    )


def _clear(
    service: Service, connector: str, kind: GrantKind, subject: str, cwd: str | None
) -> tuple[str, bool, Project | None, c.RuntimeReload]:
    """Clear one grant of the scope ``cwd`` names: ``(connector name, cleared, project, reload)``.
    A ``cwd`` that is no project has no grant: nothing is written."""
    current = resolve_connector(service, connector)
    project = service.queries.find_project(Path(cwd)) if cwd is not None else None
    with collect_reloads() as reloads:
        if cwd is not None and project is None:
            cleared = False
        else:
            where = Path(project.path) if project else None
            cleared = service.clear_grant(current.name, subject, project=where, kind=kind)
    return current.name, cleared, project, reload_view(reloads.result())


def _set_subject_grant(
    service: Service, connector: str, kind: _SubjectKind, subject: str, decision: str, cwd: str | None
) -> c.GrantSet:
    current = resolve_connector(service, connector)
    project = Path(cwd) if cwd is not None else None
    with collect_reloads() as reloads:
        grant = service.grant(current.name, subject, decision, project=project, kind=kind)
    return c.GrantSet(
        connector=current.name,
        kind=kind,
        subject=subject,
        decision=grant.decision,
        scope="project" if project else "global",
        project_id=grant.project_id,
        runtime_reload=reload_view(reloads.result()),
    )


def _clear_subject_grant(
    service: Service, connector: str, kind: _SubjectKind, subject: str, cwd: str | None
) -> c.GrantCleared:
    name, cleared, project, reload = _clear(service, connector, kind, subject, cwd)
    return c.GrantCleared(
        connector=name,
        kind=kind,
        subject=subject,
        cleared=cleared,
        scope="project" if cwd is not None else "global",
        project_id=project.project_id if project else None,
        runtime_reload=reload,
    )


@router.put(
    "/{connector}/resources/grant",
    response_model=c.GrantSet,
    responses=error_responses(404),
    summary="Set the resource-read grant",
)
def put_resource_grant(
    connector: ConnectorRef, body: c.GrantUpdate, service: Service, cwd: Workspace = None
) -> c.GrantSet:
    """How explicit resource includes from this connector are decided (risk ``read``): ``allow``
    reads without asking, ``ask`` asks, ``deny`` refuses every include; globally, or with ``cwd``
    for that workspace's project (a global ``deny`` is never lifted). Without a grant the
    connector's ``approval_mode`` decides (``allow_all`` allows, ``ask``/``custom`` ask). Tool
    names, tool grants and ``include_tools``/``exclude_tools`` never touch it."""
    return _set_subject_grant(service, connector, "resource", RESOURCE_SUBJECT, body.decision, cwd)


@router.delete(
    "/{connector}/resources/grant",
    response_model=c.GrantCleared,
    responses=error_responses(404),
    summary="Clear the resource-read grant",
)
def clear_resource_grant(connector: ConnectorRef, service: Service, cwd: Workspace = None) -> c.GrantCleared:
    """Remove the resource-read grant of that scope (idempotent; ``cleared`` false when none)."""
    return _clear_subject_grant(service, connector, "resource", RESOURCE_SUBJECT, cwd)


@router.put(
    "/{connector}/prompts/{prompt:path}/grant",
    response_model=c.GrantSet,
    responses=error_responses(404),
    summary="Set a prompt grant",
)
def put_prompt_grant(
    connector: ConnectorRef, prompt: PromptName, body: c.GrantUpdate, service: Service, cwd: Workspace = None
) -> c.GrantSet:
    """``deny`` hides the prompt (``*``: every prompt of the connector) from listings and refuses
    its expansion with ``permission_denied``; ``allow`` (a project's, for one prompt) reopens one
    that a broader grant denies, but nothing lifts a global ``deny``. A person triggers a prompt,
    which is its approval, so ``ask`` is refused (``validation_error``, field ``decision``)."""
    return _set_subject_grant(service, connector, "prompt", prompt, body.decision, cwd)


@router.delete(
    "/{connector}/prompts/{prompt:path}/grant",
    response_model=c.GrantCleared,
    responses=error_responses(404),
    summary="Clear a prompt grant",
)
def clear_prompt_grant(
    connector: ConnectorRef, prompt: PromptName, service: Service, cwd: Workspace = None
) -> c.GrantCleared:
    """Remove the prompt grant of that scope (idempotent; ``cleared`` false when none)."""
    return _clear_subject_grant(service, connector, "prompt", prompt, cwd)
