"""Approval routes: the calls of browser-approved sessions that wait for a person's answer.

A session opened with ``"approvals": "browser"`` (``POST /api/sessions``) turns each ``ask`` into a
pending approval of the process's :class:`~patchbay.runtime.calls.approvals.ApprovalBroker`, bound
to its session, connector, tool, the digest of its arguments and the policy that asked. These
routes are the person's side: authenticated like every route (the page's cookie with its CSRF
header, or the API token), never reachable through a session's tools. An answer is used once;
an answer that names a digest or policy that no longer matches is 409 ``approval_stale``.
``permission.resolved`` in the session's log then says ``actor: "user"`` with the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse

import patchbay.interfaces.api.contracts as c
from patchbay.core.errors import CanonicalStateUnavailable
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.responses import render_redacted
from patchbay.interfaces.api.routes._deps import Context
from patchbay.runtime.calls.approvals import ApprovalBroker, ApprovalChange, PendingApproval

__all__ = ["HEARTBEAT", "router"]

router = APIRouter(prefix="/api/approvals", tags=["approvals"])

HEARTBEAT = 15.0
"""Seconds between keep-alive comments of the event stream (expired approvals are swept then)."""

ApprovalRef = Annotated[str, PathParam(min_length=1, max_length=100, description="The approval's id (`apr_…`).")]


def _view(pending: PendingApproval) -> c.ApprovalView:
    return c.ApprovalView(
        id=pending.id,
        session_id=pending.session_id,
        workspace=pending.workspace,
        name=pending.name,
        connector=pending.connector,
        tool=pending.tool,
        kind=pending.kind,
        risk=pending.risk,
        arguments=pending.arguments,
        arguments_digest=pending.arguments_digest,
        policy=pending.policy,
        created=pending.created,
        expires=pending.expires,
    )


@router.get("", response_model=c.ApprovalList, responses=error_responses(500), summary="List the pending approvals")
async def list_approvals(context: Context) -> c.ApprovalList:
    """Every call waiting for approval on any instance sharing the store, oldest first;
    arguments are redacted."""
    return c.ApprovalList(approvals=[_view(p) for p in await context.approval_broker().listing()])


def _event(name: str, data: object) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + render_redacted(data) + b"\n\n"


async def _stream(broker: ApprovalBroker) -> AsyncIterator[bytes]:
    async with broker.subscribe() as changes:
        try:
            shown = await broker.listing()
        except CanonicalStateUnavailable:  # the store cannot be read now: this instance's own
            shown = broker.pending()
        snapshot = [_view(p).model_dump(mode="json") for p in shown]
        yield _event("snapshot", {"approvals": snapshot})
        while True:
            change: ApprovalChange | None = None
            with anyio.move_on_after(HEARTBEAT):
                try:
                    change = await changes.receive()
                except anyio.EndOfStream:
                    return
            if change is None:
                broker.sweep()
                yield b": keep-alive\n\n"
            elif change.type == "added" and change.approval is not None:
                yield _event("added", _view(change.approval).model_dump(mode="json"))
            else:
                yield _event("removed", {"id": change.id, "why": change.why})


@router.get(
    "/stream",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"},
        **error_responses(500),
    },
    summary="Follow the pending approvals (Server-Sent Events)",
)
async def stream_approvals(context: Context) -> StreamingResponse:
    """``text/event-stream``: first ``snapshot`` (``{"approvals": [...]}``, as ``GET
    /api/approvals``: every instance's), then ``added`` (one approval) and ``removed`` (``{"id",
    "why"}``: answered, expired, cancelled, invalidated, or ``elsewhere`` for another instance's)
    as they happen, with a keep-alive comment every 15 seconds. This instance's approvals come
    at once; another instance's when its wake-up arrives here (or within the broker's follow
    interval while Redis is down)."""
    return StreamingResponse(
        _stream(context.approval_broker()),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.post(
    "/{approval_id}",
    response_model=c.ApprovalDecided,
    responses=error_responses(404, 409, 500),
    summary="Answer a pending approval",
)
async def decide_approval(
    approval_id: ApprovalRef, body: c.ApprovalAnswerRequest, context: Context
) -> c.ApprovalDecided:
    """Answer once: ``allow_once`` lets that call through, ``allow_session`` also allows the tool
    for the rest of its session, ``deny`` ends the call ``permission_denied`` before it reaches
    the server. 404 ``not_found`` when nothing of that id waits (answered, expired, cancelled); 409
    ``approval_stale`` when ``digest`` or ``policy`` no longer match the waiting call."""
    pending = await context.approval_broker().answer(approval_id, body.answer, digest=body.digest, policy=body.policy)
    return c.ApprovalDecided(id=pending.id, answer=body.answer)
