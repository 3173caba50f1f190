"""What one connection may reach and with which secrets.

:class:`ConnectorAccess` bundles, for one connector of a runtime: its credential bindings resolved
at each connect (values only in memory, each one also kept as a known secret for redaction), the
egress account its HTTP requests go through (``allow_private``), and the metadata-only egress audit
lines of its connects and tool calls, appended in the background (see
:mod:`patchbay.adapters.egress_audit`; :meth:`ConnectorAccess.flush` waits for them).
"""

from __future__ import annotations

from collections.abc import Callable

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.egress_audit import EgressAudit, EgressNote, audit_path, target_origin
from patchbay.adapters.transports.connect import ConnectorRef, EgressAccount, resolve_bindings
from patchbay.core.errors import EgressBlocked
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
        self.credentials = credentials
        """The runtime's credential resolver (None: no store)."""
        self._project_id = project_id
        self._audit = EgressAudit(audit_path(settings.home), background=True)
        try:
            self._origin, self._auditable = target_origin(server.target), True
        except EgressBlocked:  # a URL the guard refuses outright: nothing can ever be sent
            self._origin, self._auditable = None, False
        self.ref = ConnectorRef(server.connector_id, server.name, server.target, server.runtime_config)
        """The connector as the connect step names it."""
        self.known: tuple[str, ...] = ()
        """The credential values resolved at the last connect (for redaction)."""
        self.egress = EgressAccount(self.ref, self._audit, project_id)
        """The connector's egress policy, its refusals counted, its OAuth requests audited."""

    @property
    def on_oauth_request(self) -> Callable[[], None] | None:
        """Called as the guard lets each OAuth request out (discovery, token, IdP exchange);
        the connection restarts its connect deadline there."""
        return self.egress.on_oauth_request

    @on_oauth_request.setter
    def on_oauth_request(self, hook: Callable[[], None] | None) -> None:
        self.egress.on_oauth_request = hook

    def mark(self) -> int:
        """A marker for the start of an operation; pass it to :meth:`audit` when it ends."""
        return self.egress.refused

    def audit(self, note: EgressNote, since: int) -> None:
        """One audit line for the operation begun at marker ``since``; ``approved`` is false when
        the guard refused a request meanwhile. Nothing for a URL the guard refuses outright.

        The line is queued for the background writer: this costs the caller a rendered line and
        a queue put (:meth:`flush` waits until it is written)."""
        if self._auditable:
            self._audit.record(
                note,
                connector_id=self._server.connector_id,
                origin=self._origin,
                project_id=self._project_id,
                approved=self.egress.refused == since,
            )

    def flush(self) -> None:
        """Wait until the audit lines queued so far are in the file."""
        self._audit.flush()

    async def resolve(self) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """``(env, headers)`` for this connect, resolved now (off the event loop); ``(None, None)``
        without bindings, so a connector without any never touches the credential store.

        Raises:
            CredentialUnavailable: ``auth_required`` (a binding cannot be resolved, or no resolver).
        """
        bindings = self._server.bindings
        if not bindings:
            return None, None
        resolved = await resolve_bindings(
            self.ref, bindings, self.credentials, holder="the runtime has no credential store"
        )
        if self.credentials is not None:
            self.known = resolved.secrets
        return resolved.env, resolved.headers
