"""Session routes: workspace runtimes hosted by ``patchbay serve`` and the governed call path over
REST.

A session is one :class:`~patchbay.runtime.Runtime` of the app's
:class:`~patchbay.runtime.sessions.SessionHost`, loaded from its workspace's projected snapshot
only: it reaches the connectors the control plane projected there (registered and globally
enabled), never a command or URL given in a request. Every call goes ToolRouter →
PermissionEngine → executor and is logged in ``<home>/sessions/<session_id>.jsonl`` (with a PostgreSQL
store in its ``session_events`` table, which every instance reads); a committed
change rebuilds the session (idle at once, busy when its calls end; see ``runtime_reload``).

Approval (DESIGN.md "Permissions" step 5): the API has no one to ask, so a call whose decision is
``ask`` fails with ``approval_unavailable`` unless its request says ``"approve": "once"`` (as
``patchbay call --yes``), which allows that one call. Nothing lifts a ``deny``. In the event
log such a refusal is ``permission.resolved`` by the runtime with ``sourcedFrom``
``approver_error``: the session's approver declines to answer for a request that did not approve.
A session opened with ``"approvals": "browser"`` instead waits for a person's answer through the
process's approval broker (:mod:`patchbay.interfaces.api.routes.approvals`).
"""

from __future__ import annotations

import contextvars
from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi import Path as PathParam
from pydantic_core import to_jsonable_python

import patchbay.interfaces.api.contracts as c
from patchbay.core.errors import FailureReason, ToolCallError
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.responses import render_redacted
from patchbay.interfaces.api.routes._deps import Context, workspace_or_default
from patchbay.runtime.calls.permissions import ApprovalAnswer, ApprovalRequest
from patchbay.runtime.events import MAX_PAGE
from patchbay.runtime.events.backend import session_logs
from patchbay.runtime.sessions import SessionInfo

__all__ = ["router"]

router = APIRouter(prefix="/api/sessions", tags=["sessions"])

SessionRef = Annotated[
    str, PathParam(min_length=1, max_length=200, description="The session's id (`ses_…`), as opening it returned.")
]

_APPROVE_ONCE: contextvars.ContextVar[bool] = contextvars.ContextVar("patchbay_api_approve_once", default=False)
"""Whether the tool call request being served said ``"approve": "once"`` (set around the call;
the runtime asks the approver in the calling task, so it sees the caller's value)."""


class _NoApprover(Exception):
    """The request did not approve: the runtime turns this into ``approval_unavailable``."""


async def _request_approver(request: ApprovalRequest) -> ApprovalAnswer:
    """Every session's approver: ``allow_once`` for a request that said so, else no answer."""
    if _APPROVE_ONCE.get():
        return "allow_once"
    raise _NoApprover(f"{request.name} asks for approval and the request did not approve it")


def _view(info: SessionInfo) -> c.SessionView:
    return c.SessionView(
        session_id=info.session_id,
        project_id=info.project_id,
        workspace=info.workspace,
        state=info.state,
        builds=info.builds,
        in_flight=info.in_flight,
        error=c.ErrorBody(**info.error) if info.error is not None else None,
        warnings=[c.SessionWarning(**w) for w in info.warnings],
    )


@router.post(
    "",
    status_code=201,
    response_model=c.SessionView,
    responses=error_responses(404, 500),
    summary="Open a session in a workspace",
)
async def open_session(context: Context, body: c.SessionOpen | None = None) -> c.SessionView:
    """Start a runtime for the workspace ``cwd`` (default: where the server was started): the
    workspace becomes a project if it is none yet, its snapshot is projected from the committed
    state, and the runtime loads only that. Lazy connectors start on their first use. A directory
    that does not exist is 422 (``details.field`` ``project``). With ``"approvals": "browser"`` an
    ``ask`` waits for a person's answer (``/api/approvals``) instead of failing."""
    host = context.session_host()
    workspace = workspace_or_default(context, body.cwd if body is not None else None)
    if body is not None and body.approvals == "browser":
        approver = context.approval_broker().approver(workspace=str(workspace))
    else:
        approver = _request_approver
    session_id = await host.open(workspace, approver=approver)
    return _view(host.session(session_id))


@router.get("", response_model=c.SessionList, responses=error_responses(500), summary="List the open sessions")
async def list_sessions(context: Context) -> c.SessionList:
    """Every open session with its state, in opening order."""
    return c.SessionList(sessions=[_view(info) for info in context.session_host().sessions()])


@router.get(
    "/{session_id}",
    response_model=c.SessionView,
    responses=error_responses(404, 500),
    summary="Show a session",
)
async def get_session(session_id: SessionRef, context: Context) -> c.SessionView:
    """One open session: its state (``restart_pending`` while a reload waits for its calls,
    ``failed`` after a failed rebuild, with the error), builds and calls in flight."""
    return _view(context.session_host().session(session_id))


@router.get(
    "/{session_id}/tools",
    response_model=c.SessionTools,
    responses=error_responses(404, 500, 503),
    summary="The tools a session offers",
)
async def session_tools(session_id: SessionRef, context: Context) -> c.SessionTools:
    """Every visible tool, by canonical name, with its decision and risk: the session connects
    each enabled connector of its snapshot first (one that cannot connect offers none). Waits
    while the session is being rebuilt; a session whose rebuild failed is 503."""
    tools = await context.session_host().list_tools(session_id)
    return c.SessionTools(
        session_id=session_id,
        tools=[
            c.SessionTool(
                name=t.name,
                wire_name=t.wire_name,
                connector=t.connector,
                tool=t.tool,
                title=t.title,
                description=t.description,
                decision=t.decision,
                risk=t.risk,
                input_schema=t.input_schema,
                annotations=t.annotations,
                name_flag=t.name_flag,
            )
            for t in tools
        ],
    )


@router.get(
    "/{session_id}/events",
    response_model=c.SessionEvents,
    responses=error_responses(404, 500),
    summary="Read a session's event log",
)
def session_events(
    session_id: SessionRef,
    context: Context,
    after_seq: Annotated[int, Query(ge=0, description="Return events after this seq (0: from the first).")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="At most this many events.")] = 100,
) -> c.SessionEvents:
    """The governed calls' audit trail: events with ``seq > after_seq`` in order, at most ``limit``,
    for an open session or one closed long ago whose log is kept (its JSONL file; with a PostgreSQL
    store the table, whichever instance wrote it). Payloads were redacted when written and are
    redacted again here. The page's chain is checked: a missing seq (or, in the table, an altered
    row) is 500 ``event_chain_broken``. Page on with ``next_after_seq`` while ``has_more``; an open
    session may log more later. An unknown session is 404 ``not_found``."""
    page = session_logs(context.settings).page(session_id, after_seq=after_seq, limit=limit)
    return c.SessionEvents(
        session_id=page.session_id, events=page.events, next_after_seq=page.next_after_seq, has_more=page.has_more
    )


@router.post(
    "/{session_id}/call",
    response_model=c.ToolCallOutcome,
    responses=error_responses(403, 404, 409, 500, 502, 503, 504),  # 422: also unknown_tool
    summary="Call a tool on the governed path",
)
async def call_tool(session_id: SessionRef, body: c.ToolCallRequest, context: Context) -> Response:
    """Call ``tool`` (canonical ``mcp.<connector>.<tool>`` or wire name) with ``arguments`` through
    the session's runtime: permission check (``approve: once`` answers an ``ask``), the server call,
    the output guard. A call that produces no result answers with its failure reason as the error
    code (see the statuses listed; ``tool_error`` carries the server's error result in
    ``details.result``). A call made while the session is rebuilt waits for the rebuild, so it sees
    the committed configuration."""
    host = context.session_host()
    token = _APPROVE_ONCE.set(body.approve == "once")
    try:
        result = await host.call(session_id, body.tool, body.arguments)
    except ToolCallError as exc:
        if exc.reason is not FailureReason.APPROVAL_UNAVAILABLE:
            raise
        message = (  # say what the client can do about it
            f"{body.tool[:200]} needs approval (its decision is ask) and the API has no one to ask: "
            'send "approve": "once" to allow this call'
        )
        raise exc.with_message(message) from exc
    finally:
        _APPROVE_ONCE.reset(token)
    # the ToolCallOutcome the route documents, rendered here: the result's fields are typed
    # already, so FastAPI would only validate a model built from them again (every string is still
    # redacted, as in every response; the tool's own content is redacted nowhere else)
    outcome = {
        "session_id": session_id,
        "tool_call_id": result.tool_call_id,
        "name": result.name,
        "model_text": result.model_text,
        "content": to_jsonable_python(result.content),
        "structured_content": to_jsonable_python(result.structured_content),
        "size_bytes": result.size_bytes,
        "truncated": result.truncated,
        "artifact_id": result.artifact_id,
    }
    return Response(render_redacted(outcome), media_type="application/json")


@router.delete(
    "/{session_id}",
    response_model=c.SessionClosed,
    responses=error_responses(404, 500),
    summary="Close a session",
)
async def close_session(session_id: SessionRef, context: Context) -> c.SessionClosed:
    """Close the session: its calls in flight fail with ``cancelled``, its runtime exits and its
    servers (with their process groups) stop. Its event log stays."""
    await context.session_host().close(session_id)
    return c.SessionClosed(session_id=session_id, closed=True)
