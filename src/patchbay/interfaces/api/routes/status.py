"""The live status stream: ``GET /api/mcp/status/stream``, Server-Sent Events.

The hosted runtimes publish their connectors' live status to the app's registry
(:attr:`~patchbay.interfaces.api.context.ApiContext.status`). The stream looks at it every
:data:`COALESCE_SECONDS` and sends one ``status`` event (a
:class:`~patchbay.interfaces.api.contracts.LiveStatusEvent`, JSON) per connector whose live status
changed since the last look: so at most a few events a second per connector, however many
calls start and end meanwhile. The first look sends every connector that has a live status. An
entry that went stale (``unknown``) or was withdrawn is a change too; its event carries the
cache-based ``runtime_state`` again. A comment line every :data:`KEEPALIVE_SECONDS` keeps
proxies from closing a quiet stream. Authenticated like every route (the page's session cookie
works for a same-origin ``EventSource``); no URL, header, schema or credential is in any event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import anyio
import anyio.to_thread
from fastapi import APIRouter
from fastapi.responses import StreamingResponse

import patchbay.interfaces.api.contracts as c
from patchbay.control.states import list_states
from patchbay.core.errors import NotFoundError, PatchbayError
from patchbay.core.live_status import LiveStatus
from patchbay.interfaces.api._views import summary_fields
from patchbay.interfaces.api.context import ApiContext
from patchbay.interfaces.api.errors import error_responses
from patchbay.interfaces.api.responses import render_redacted
from patchbay.interfaces.api.routes._deps import Context

__all__ = ["COALESCE_SECONDS", "KEEPALIVE_SECONDS", "router", "status_events"]

router = APIRouter(prefix="/api/mcp/status", tags=["connectors"])

COALESCE_SECONDS = 0.5
"""How often the stream looks for changes (the most events per second per connector: 2)."""
KEEPALIVE_SECONDS = 15.0
"""Seconds between keep-alive comments on a quiet stream."""

_Key = tuple[object, ...] | None


def status_events(context: ApiContext, connector_ids: list[str], lives: Mapping[str, LiveStatus]) -> list[bytes]:
    """The ``status`` events of ``connector_ids`` (blocking store reads; a connector removed
    meanwhile is left out).

    Raises:
        PatchbayError: what the store raises (``canonical_state_unavailable`` ...).
    """
    service = context.connector_service()
    events: list[bytes] = []
    for connector_id in connector_ids:
        try:
            connector = service.repository.connectors.get(connector_id)
        except NotFoundError:
            continue
        live = lives.get(connector_id)
        fields = summary_fields(connector, *list_states(service, [connector])[0], live)
        event = c.LiveStatusEvent(
            connector_id=connector.connector_id,
            name=connector.name,
            runtime_state=fields["runtime_state"],
            status=fields["status"],
            runtime=fields["runtime"],
        )
        data = render_redacted(event.model_dump(mode="json"))
        events.append(b"event: status\ndata: " + data + b"\n\n")
    return events


async def _stream(context: ApiContext) -> AsyncIterator[bytes]:
    sent: dict[str, _Key] = {}
    quiet = 0.0
    yield b"retry: 3000\n\n"
    while not context.streams_closing:
        lives = context.status.read_all()
        keys = {cid: live.key() for cid, live in lives.items()}
        changed = sorted(cid for cid in set(keys) | set(sent) if keys.get(cid) != sent.get(cid))
        if changed:
            try:
                events = await anyio.to_thread.run_sync(status_events, context, changed, lives)
            except PatchbayError:  # the store is unavailable now: the next look tries again
                events = []
            else:
                for cid in changed:
                    if cid in keys:
                        sent[cid] = keys[cid]
                    else:
                        sent.pop(cid, None)
            for event in events:
                yield event
            if events:
                quiet = 0.0
        if quiet >= KEEPALIVE_SECONDS:
            yield b": keep-alive\n\n"
            quiet = 0.0
        await anyio.sleep(COALESCE_SECONDS)
        quiet += COALESCE_SECONDS


@router.get(
    "/stream",
    response_class=StreamingResponse,
    responses={
        **error_responses(),
        200: {
            # the model puts LiveStatusEvent in the document (as application/json: FastAPI's
            # default); the stream itself is text/event-stream, one such object per event
            "model": c.LiveStatusEvent,
            "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/LiveStatusEvent"}}},
            "description": "`status` events, each a LiveStatusEvent (JSON)",
        },
    },
    summary="Stream the connectors' live status",
)
async def status_stream(context: Context) -> StreamingResponse:
    """Server-Sent Events: a ``status`` event (JSON: ``connector_id``, ``name``,
    ``runtime_state``, ``status``, ``runtime``) per connector whose live status changed, at most
    two a second per connector; at the start, one for each connector with a live status. The
    stream runs until the client closes it or the server shuts down."""
    return StreamingResponse(
        _stream(context),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
