"""Upstream elicitation, relayed to the host whose ``tools/call`` it is made for.

A connector's server may ask its user for input while it runs a call (``elicitation/create``: a
form with a schema, or a URL to visit). The gateway's runtime advertises elicitation to every
server and answers with :func:`decline_elicitation` unless the request belongs to a host's call
(:mod:`patchbay.runtime.connection.elicitation` finds the call); then :class:`HostElicitation`
sends it (its form or URL parameters as the server sent them) on that host's request to the
host, and the host's answer (``accept`` with its ``content``, ``decline``, ``cancel``) goes back
to the server as it is. The person answers in the host's own elicitation UI; this is not the approval
path (a host never approves for the person, see :mod:`patchbay.interfaces.gateway.results`).

This is how a 2025-11-25 host is asked. A 2026-07-28 host (that era has no server-to-client
requests) that declared elicitation is asked through ``InputRequiredResult`` rounds of its call
instead (:mod:`patchbay.interfaces.gateway.input_rounds`).

Declined without asking the host: a mode its ``initialize`` did not declare (``elicitation: {}``
declares form mode only), a host that declared no elicitation, and a request that cannot reach
the host (a Streamable HTTP response in JSON mode). A host that answers with an error declines; one whose connection breaks cancels;
the server's call goes on either way. Nothing of a request or an answer is logged.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import anyio
import mcp_types as types
import pydantic
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata

__all__ = ["HostElicitation", "decline_elicitation", "declared_modes"]

logger = logging.getLogger("patchbay.interfaces.gateway")

ElicitationMode = Literal["form", "url"]


async def decline_elicitation(params: types.ElicitRequestParams) -> types.ElicitResult:
    """The gateway runtime's answer to an elicitation no host call relays: ``decline``."""
    return types.ElicitResult(action="decline")


def declared_modes(capabilities: types.ClientCapabilities | None) -> frozenset[ElicitationMode]:
    """The elicitation modes a host declared: ``form`` and/or ``url``; an empty
    ``elicitation`` object means form mode (as the specification reads it); none: no capability."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return frozenset()
    if elicitation.form is None and elicitation.url is None:
        return frozenset({"form"})
    modes: set[ElicitationMode] = set()
    if elicitation.form is not None:
        modes.add("form")
    if elicitation.url is not None:
        modes.add("url")
    return frozenset(modes)


class HostElicitation:
    """Relays elicitations to the host of one ``tools/call`` (an
    :data:`~patchbay.runtime.connection.elicitation.ElicitationHandler`).

    Args:
        ctx: the SDK's request context of the host's ``tools/call`` (its ``session``: the
            declared capabilities, whether a request can reach the host, ``send_request``; its
            ``request_id``: the request the elicitation is sent on, which on Streamable HTTP
            puts it on that request's response stream).
    """

    def __init__(self, ctx: Any):
        self._session: ServerSession = ctx.session
        self._request_id: types.RequestId | None = ctx.request_id

    @property
    def modes(self) -> frozenset[ElicitationMode]:
        """The modes relayed: those the host declared, none when no request can reach it."""
        if not self._session.can_send_request:
            return frozenset()
        return declared_modes(self._session.client_capabilities)

    async def __call__(self, params: types.ElicitRequestParams) -> types.ElicitResult:
        """The host's answer to ``params`` (see the module docstring for ``decline``/``cancel``)."""
        mode: ElicitationMode = "url" if isinstance(params, types.ElicitRequestURLParams) else "form"
        if mode not in self.modes:
            return types.ElicitResult(action="decline")
        # as the server sent it, without its _meta (the upstream request's own protocol data)
        request = types.ElicitRequest(params=params.model_copy(update={"meta": None}))
        try:
            return await self._session.send_request(
                request, types.ElicitResult, metadata=ServerMessageMetadata(related_request_id=self._request_id)
            )
        except NoBackChannelError:
            return types.ElicitResult(action="decline")
        except MCPError as exc:
            logger.info("the host refused an elicitation (code %s); declined", exc.error.code)
            return types.ElicitResult(action="decline")
        except (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            pydantic.ValidationError,
        ) as exc:
            logger.info("an elicitation got no valid answer from the host (%s); cancelled", type(exc).__name__)
            return types.ElicitResult(action="cancel")
