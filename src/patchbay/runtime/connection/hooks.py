"""What a host lends the servers of a runtime: a person's browser and a person's answers.

:class:`HostHooks` carries the host's callbacks into every connection: ``authorizer`` lets a
connector's OAuth login reach a person (without it a runtime never starts a login and reports
``auth_required``), ``elicitation`` answers a server's ``elicitation/create`` requests (without it
the SDK refuses them and does not advertise the capability).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp import types
from mcp.client import ClientRequestContext

from patchbay.adapters.oauth.provider import Authorizer

__all__ = ["ElicitationHandler", "HostHooks"]

ElicitationHandler = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
"""``await handler(params)`` → the user's answer (``action`` accept/decline/cancel, ``content``)."""


@dataclass(frozen=True)
class HostHooks:
    """The host's person-facing callbacks for one runtime.

    Attributes:
        authorizer: ``await authorizer(url)`` brings a person's browser to an OAuth
            authorization URL (open it, print it); the loopback callback gets the answer.
        elicitation: answers servers' elicitation requests (form and URL mode).
    """

    authorizer: Authorizer | None = None
    elicitation: ElicitationHandler | None = None

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``mcp.Client`` (only the callbacks that are set)."""
        if self.elicitation is None:
            return {}
        handler = self.elicitation

        async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            return await handler(params)

        return {"elicitation_callback": on_elicit}
