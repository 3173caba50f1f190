"""The one connect step of a probe and of a runtime connection.

A probe (:mod:`patchbay.control.probe`) and a runtime's supervised connection
(:mod:`patchbay.runtime.connection.server_connection`) reach a connector the same way: resolve its credential
bindings (:func:`resolve_bindings`), send its HTTP traffic through its egress policy with the
refusals counted and every OAuth request audited (:class:`EgressAccount`), open the transport and
run the MCP handshake behind its OAuth provider, announcing :data:`CLIENT_INFO` (:func:`connect`),
and name a failure with one stable code (:func:`connect_failure`, :func:`with_limit`). What they do with the
connection (list once and close, or serve calls) is theirs.

The transport under the client is a :class:`Link`; every opener's link implements it, so nothing
reads a link's attributes by name.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

import anyio
import mcp_types as types

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.egress_audit import EgressAudit
from patchbay.adapters.leases import open_leases
from patchbay.adapters.oauth.build import oauth_for
from patchbay.adapters.oauth.provider import AUDIT_NOTE, Authorizer
from patchbay.adapters.transports import ClientConnection, ClientOptions, Link, classify, open_client
from patchbay.adapters.transports.egress import EgressDecision, EgressPolicy
from patchbay.core.credentials import CredentialBinding, deliver
from patchbay.core.errors import CredentialUnavailable, ErrorCode
from patchbay.core.models import ConnectorTarget, ResourceLimits
from patchbay.core.settings import Settings

__all__ = [
    "CLIENT_INFO",
    "ConnectorRef",
    "EgressAccount",
    "Link",
    "ResolvedBindings",
    "connect",
    "connect_failure",
    "resolve_bindings",
    "with_limit",
]


def _version() -> str:
    try:
        return importlib.metadata.version("patchbay")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


CLIENT_INFO = types.Implementation(name="patchbay", version=_version())
"""What Patchbay announces in ``initialize`` (probe and runtime alike): its name and package version."""


@dataclass(frozen=True)
class ConnectorRef:
    """The parts of a connector the connect step needs (a stored ``Connector`` or a projected
    ``RuntimeServer`` both provide them).

    Attributes:
        connector_id: names the connector in audit lines and the credential store.
        name: the connector's name, for messages.
        target: its validated target.
        runtime_config: its runtime options (``allow_private``, ``oauth``, limits).
    """

    connector_id: str
    name: str
    target: ConnectorTarget
    runtime_config: Mapping[str, Any]

    @property
    def allow_private(self) -> bool:
        # Only a literal true opens private addresses (the lax options parse would take "yes").
        return self.runtime_config.get("allow_private") is True


@dataclass(frozen=True)
class ResolvedBindings:
    """A connector's credential bindings, resolved for one connect (values only in memory)."""

    env: dict[str, str]
    """For a stdio server's environment."""
    headers: dict[str, str]
    """For a remote server's requests."""
    secrets: tuple[str, ...]
    """Every resolved secret value, for redaction (empty for plain values)."""


async def resolve_bindings(
    connector: ConnectorRef,
    bindings: tuple[CredentialBinding, ...],
    credentials: CredentialResolver | None,
    *,
    holder: str,
) -> ResolvedBindings:
    """Resolve ``bindings`` now, off the event loop (the store may read files and the keyring).

    Args:
        connector: whose bindings they are.
        bindings: the connector's credential bindings (references and plain values).
        credentials: the resolver; None: only plain values can be delivered.
        holder: ends the message when there is no resolver, e.g. ``"no credential store was given"``.

    Raises:
        CredentialUnavailable: ``auth_required`` (no resolver for a reference, or a binding that
            cannot be resolved; ``details`` name the reference and the binding).
    """
    if credentials is None:
        referenced = [(binding.ref, binding) for binding in bindings if binding.ref is not None]
        if not referenced:
            env, headers = deliver(bindings, {})  # plain values carry their own value: no store needed
            return ResolvedBindings(env, headers, ())
        ref, first = referenced[0]
        raise CredentialUnavailable(
            f"connector {connector.name!r} has credential bindings but {holder}",
            problem="unreadable",
            ref=ref,
            binding=first.describe(),
            connector=connector.name,
        )
    resolve = functools.partial(
        credentials.resolve, bindings, connector_id=connector.connector_id, connector=connector.name
    )
    resolved = await anyio.to_thread.run_sync(resolve)
    return ResolvedBindings(resolved.env, resolved.headers, resolved.secrets)


class EgressAccount:
    """A connector's egress policy, with its refusals counted and its OAuth requests audited.

    Every request the guard judges that carries an OAuth audit note (discovery, token) appends one
    line to the egress audit, approved or not; :attr:`refused` counts the
    refused requests of any kind, so an operation can tell whether one was refused meanwhile.

    Args:
        connector: whose traffic it is (``allow_private`` is read from its runtime options).
        audit: where the OAuth lines go.
        project_id: named in those lines.
        on_oauth_request: called as each approved OAuth request goes out (the runtime restarts
            its connect deadline there); it must not raise.
    """

    def __init__(
        self,
        connector: ConnectorRef,
        audit: EgressAudit,
        project_id: str | None,
        *,
        on_oauth_request: Callable[[], None] | None = None,
    ) -> None:
        self._connector = connector
        self._audit = audit
        self._project_id = project_id
        self.on_oauth_request = on_oauth_request
        self.refused = 0
        """Requests the guard refused so far."""
        self.policy = EgressPolicy(allow_private=connector.allow_private, observer=self._observe)
        """The policy to hand to :func:`connect` (and to the OAuth provider)."""

    def _observe(self, decision: EgressDecision) -> None:
        if not decision.approved:
            self.refused += 1
        note = decision.request.extensions.get(AUDIT_NOTE)
        if note is None:
            return
        if decision.approved and self.on_oauth_request is not None:
            self.on_oauth_request()
        self._audit.record(
            note,
            connector_id=self._connector.connector_id,
            origin=decision.origin,
            project_id=self._project_id,
            approved=decision.approved,
        )


@asynccontextmanager
async def connect(
    connector: ConnectorRef,
    *,
    workspace: Path,
    settings: Settings,
    egress: EgressAccount,
    credentials: CredentialResolver | None,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    limits: ResourceLimits | None = None,
    authorizer: Authorizer | None = None,
    verify: Callable[[], Awaitable[None]] | None = None,
    login_timeout: float = 300.0,
    link_holder: list[Link] | None = None,
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[ClientConnection]:
    """Open ``connector`` behind its OAuth provider and egress policy; yield the connected client.

    Usage::

        egress = EgressAccount(ref, EgressAudit(audit_path(settings.home)), project_id)
        async with connect(ref, workspace=root, settings=settings, egress=egress, credentials=store) as conn:
            catalog = await list_catalog(conn.client, ...)

    Args:
        connector: the connector (its target must be validated).
        workspace: the canonical workspace root (stdio ``cwd`` is relative to it).
        settings: ``stderr_tail_bytes``, the handshake's ``protocol_mode``, and ``redis_url``:
            when set, an OAuth token refresh is single-flight across instances (a lease in Redis).
        egress: the connector's egress account (its policy guards every HTTP/SSE request).
        credentials: the OAuth provider's token store (see :func:`oauth_for`).
        env / headers: resolved credential values (:func:`resolve_bindings`).
        limits: setrlimit bounds of a stdio server.
        authorizer / verify / login_timeout: an OAuth login's person-facing side (see
            :func:`patchbay.adapters.oauth.build.oauth_for`); without an ``authorizer`` a
            missing grant fails with ``auth_required`` instead of starting a login.
        link_holder: receives the link as soon as the transport is open (its stderr tail and
            status are then readable even when the handshake fails).
        client_options: passed to ``mcp.Client`` (callbacks, ``read_timeout_seconds``);
            ``client_info`` is always :data:`CLIENT_INFO`.

    Raises:
        Whatever the transport, the OAuth provider or the SDK raise; name it with
        :func:`connect_failure`.
    """
    client_options["client_info"] = CLIENT_INFO
    async with (
        oauth_for(
            target=connector.target,
            runtime_config=connector.runtime_config,
            credentials=credentials,
            connector_id=connector.connector_id,
            connector=connector.name,
            egress=egress.policy,
            authorizer=authorizer,
            verify=verify,
            login_timeout=login_timeout,
            leases=open_leases(settings) if settings.redis_url is not None else None,
        ) as auth,
        open_client(
            connector.target,
            workspace=workspace,
            env=env,
            headers=headers,
            stderr_tail_bytes=settings.stderr_tail_bytes,
            mode=settings.protocol_mode,
            link_holder=link_holder,
            limits=limits,
            egress=egress.policy,
            auth=auth,
            **client_options,
        ) as connection,
    ):
        yield connection


def connect_failure(exc: BaseException, link: Link | None) -> tuple[ErrorCode, str]:
    """``(code, message)`` of a failed connect: :func:`classify` with the link's last HTTP status
    (401/403 is ``auth_required``). Add the limit that stopped a server with :func:`with_limit`."""
    return classify(exc, http_status=link.http_status if link is not None else None)


def with_limit(message: str, link: Link | None) -> str:
    """``message``, plus the resource limit that stopped the server when one did."""
    limit = link.limit_exceeded() if link is not None else None
    if limit:  # e.g. an address-space limit too small for the server to start at all
        return f"{message} (the server was stopped by its {limit} limit)"
    return message
