"""What one connection may reach and with which secrets.

:class:`ConnectorAccess` bundles, for one connector of a runtime: its credential bindings resolved
at each connect (values only in memory, each one also kept as a known secret for redaction), the
egress policy its HTTP requests go through (``allow_private``), and the metadata-only egress audit
lines of its connects and tool calls.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.egress_audit import EgressAudit, EgressNote, audit_path, target_origin
from patchbay.adapters.oauth.build import oauth_for
from patchbay.adapters.oauth.provider import AUDIT_NOTE, Authorizer
from patchbay.adapters.transports import EgressPolicy
from patchbay.core.credentials import deliver
from patchbay.core.errors import CredentialUnavailable, EgressBlocked
from patchbay.core.models import RuntimeServer
from patchbay.core.settings import Settings

__all__ = ["ConnectorAccess"]


class ConnectorAccess:
    """Credentials, egress policy and egress audit of one connector in one runtime.

    Args:
        server: the projected connector (``bindings`` hold references only).
        settings: ``home`` locates ``egress-audit.jsonl``.
        credentials: resolves the bindings; None when the runtime has no credential store.
        project_id: the runtime's project, named in the audit lines.
    """

    def __init__(
        self,
        server: RuntimeServer,
        settings: Settings,
        credentials: CredentialResolver | None,
        project_id: str | None,
    ):
        self._server = server
        self._credentials = credentials
        self._project_id = project_id
        self._audit = EgressAudit(audit_path(settings.home))
        try:
            self._origin, self._auditable = target_origin(server.target), True
        except EgressBlocked:  # a URL the guard refuses outright: nothing can ever be sent
            self._origin, self._auditable = None, False
        self._refused = 0
        self.known: tuple[str, ...] = ()
        """The credential values resolved at the last connect (for redaction)."""
        self.on_oauth_request: Callable[[], None] | None = None
        """Called as the guard lets each OAuth request out (discovery, token, IdP exchange);
        the connection restarts its connect deadline there."""
        # Only a literal true opens private addresses (the lax options parse would take "yes").
        allow_private = server.runtime_config.get("allow_private") is True
        self.egress = EgressPolicy(allow_private=allow_private, observer=self._observe)

    def mark(self) -> int:
        """A marker for the start of an operation; pass it to :meth:`audit` when it ends."""
        return self._refused

    def audit(self, note: EgressNote, since: int) -> None:
        """One audit line for the operation begun at marker ``since``; ``approved`` is false when
        the guard refused a request meanwhile. Nothing for a URL the guard refuses outright."""
        if self._auditable:
            self._audit.record(
                note,
                connector_id=self._server.connector_id,
                origin=self._origin,
                project_id=self._project_id,
                approved=self._refused == since,
            )

    async def resolve(self) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """``(env, headers)`` for this connect, resolved now (off the event loop); ``(None, None)``
        without bindings, so a connector without any never touches the credential store.

        Raises:
            CredentialUnavailable: ``auth_required`` (a binding cannot be resolved, or no resolver).
        """
        server = self._server
        bindings = server.bindings
        if not bindings:
            return None, None
        if self._credentials is None:
            referenced = [(binding.ref, binding) for binding in bindings if binding.ref is not None]
            if not referenced:
                return deliver(bindings, {})  # plain values carry their own value: no store needed
            ref, binding = referenced[0]
            raise CredentialUnavailable(
                f"connector {server.name!r} has credential bindings but the runtime has no credential store",
                problem="unreadable",
                ref=ref,
                binding=binding.describe(),
                connector=server.name,
            )
        resolve = functools.partial(
            self._credentials.resolve, bindings, connector_id=server.connector_id, connector=server.name
        )
        resolved = await anyio.to_thread.run_sync(resolve)
        self.known = resolved.secrets
        return resolved.env, resolved.headers

    @asynccontextmanager
    async def oauth(
        self, authorizer: Authorizer | None = None, *, login_timeout: float = 300.0
    ) -> AsyncIterator[httpx2.Auth | None]:
        """The connector's OAuth provider for one connection (None when it does not use OAuth).

        Args:
            authorizer: shows an authorization URL to a person; None: a missing or refused grant
                fails with ``auth_required``/``auth_expired`` instead of starting a login.
            login_timeout: seconds a login waits for the browser.

        Raises:
            CredentialUnavailable / AuthorizationRequired: ``auth_required`` (no credential store,
                an unresolvable secret reference, no authorization server).
        """
        server = self._server
        async with oauth_for(
            target=server.target,
            runtime_config=server.runtime_config,
            credentials=self._credentials,
            connector_id=server.connector_id,
            connector=server.name,
            egress=self.egress,
            authorizer=authorizer,
            login_timeout=login_timeout,
        ) as auth:
            yield auth

    def _observe(self, decision: Any) -> None:
        if not decision.approved:
            self._refused += 1
        note = decision.request.extensions.get(AUDIT_NOTE)
        if note is not None and decision.approved and self.on_oauth_request is not None:
            self.on_oauth_request()
        if note is not None:
            # One line per OAuth request, naming the server it went to.
            self._audit.record(
                note,
                connector_id=self._server.connector_id,
                origin=decision.origin,
                project_id=self._project_id,
                approved=decision.approved,
            )
