"""What a host lends the servers of a runtime: a person's browser and a person's answers.

:class:`HostHooks` carries the host's callbacks into every connection: ``authorizer`` lets a
connector's OAuth login reach a person (without it a runtime never starts a login and reports
``auth_required``), ``elicitation`` answers a server's ``elicitation/create`` requests (without it
the SDK refuses them and does not advertise the capability) unless the call a request is made for
relays it to a host of its own (:mod:`patchbay.runtime.connection.elicitation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp import types
from mcp.client import ClientRequestContext

from patchbay.adapters.oauth.provider import Authorizer
from patchbay.runtime.connection.elicitation import CallRelays, ElicitationHandler

__all__ = ["ElicitationHandler", "HostHooks"]


@dataclass(frozen=True)
class HostHooks:
    """The host's person-facing callbacks for one runtime.

    Attributes:
        authorizer: ``await authorizer(url)`` brings a person's browser to an OAuth
            authorization URL (open it, print it); the loopback callback gets the answer.
        elicitation: answers servers' elicitation requests (form and URL mode) that no call
            relays to a host of its own; when set, the capability is advertised to every server.
    """

    authorizer: Authorizer | None = None
    elicitation: ElicitationHandler | None = None

    def client_kwargs(self, relays: CallRelays | None = None) -> dict[str, Any]:
        """Keyword arguments for ``mcp.Client`` (only the callbacks that are set).

        Args:
            relays: the connection's calls in flight; an elicitation made for one of them that
                carries a relay goes to that relay instead of :attr:`elicitation`
                (:meth:`CallRelays.answer`).
        """
        if self.elicitation is None:
            return {}
        handler = self.elicitation

        async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            if relays is not None:
                return await relays.answer(params, handler)
            return await handler(params)

        return {"elicitation_callback": on_elicit}
