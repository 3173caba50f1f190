"""The bounded real connect probe.

A connect probe opens a temporary connection to one connector through the official SDK, runs the MCP
handshake, lists the tools (and the resources, when the server advertises them) and closes the
connection again. It never calls a tool. Everything is bounded:

* the whole probe -- spawn or connect, ``initialize``, every list page -- must finish within
  ``Settings.probe_connect_timeout`` seconds (15 s), else the result is ``timeout``;
* at most ``Settings.probe_max_pages`` list pages (50), tools and resources together; a list
  that needs more, or whose server repeats a cursor, keeps what it listed and gets a warning in
  the result's ``diagnostics`` (the probe is still ``ready``);
* at most ``Settings.probe_max_metadata_bytes`` (2 MiB) of tool and resource metadata, measured
  as the wire JSON of every listed tool and resource;
* the last ``Settings.stderr_tail_bytes`` (16 KiB) of a stdio server's stderr are kept, redacted;
* at most one probe per connector at a time, and ``Settings.probe_concurrency`` (4) at once --
  within this process through its own locks, and across instances through leases
  (:mod:`patchbay.adapters.leases`: in Redis when ``PATCHBAY_REDIS_URL`` is set, renewed while the
  probe runs, expiring ``Settings.probe_lease_ttl`` seconds after a holder died);
* the server process (and its process group) is gone when :meth:`Prober.probe` returns, whether
  it succeeded, failed, timed out or the caller was cancelled (the transports shield teardown).

The result's diagnostics (message, stderr tail) are redacted (:mod:`patchbay.core.redaction`), and
the exact values of ``env``/``headers`` (credentials) are masked everywhere in it, the catalog and
server info included.

A server failure never raises: it becomes a :class:`~patchbay.core.models.ProbeResult` with
``state="error"`` and one stable probe code, chosen by
:func:`patchbay.adapters.transports.classify`. Front ends switch on that code, never on the text.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.egress_audit import EgressAudit, audit_path, target_origin
from patchbay.adapters.leases import Leases, held, open_leases
from patchbay.adapters.oauth.provider import Authorizer
from patchbay.adapters.transports import Link
from patchbay.adapters.transports.catalog import Catalog, ListingWarning, ToolDiagnostic, list_catalog
from patchbay.adapters.transports.connect import (
    ConnectorRef,
    EgressAccount,
    connect,
    connect_failure,
    resolve_bindings,
    with_limit,
)
from patchbay.core.errors import CatalogError, ConfigError, EgressBlocked, ErrorCode, PatchbayError
from patchbay.core.instance import instance_id
from patchbay.core.models import (
    Connector,
    ConnectorTarget,
    HttpTarget,
    ProbeResult,
    RuntimeOptions,
    SocketTarget,
    StdioTarget,
)
from patchbay.core.redaction import redact_known, redact_text, redact_value, registered_secrets
from patchbay.core.settings import Settings
from patchbay.core.validation import validate_http_target, validate_socket_path, validate_stdio_target

__all__ = ["Prober"]

_PROTOCOL_MODES = ("legacy", "auto", "2026-07-28")


@dataclass
class _LockEntry:
    lock: anyio.Lock
    users: int = 0


def _checked_target(target: ConnectorTarget, workspace: Path) -> ConnectorTarget:
    """Re-apply the validation rules; a stored target may predate them.

    Raises:
        ConfigError: ``invalid_config``.
    """
    if isinstance(target, StdioTarget):
        return validate_stdio_target(target.command, target.args, target.cwd, str(workspace))
    if isinstance(target, HttpTarget):
        return validate_http_target(target.url, target.transport)
    if isinstance(target, SocketTarget):
        return validate_socket_path(target.path)
    raise ConfigError("transport", f"unknown target {type(target).__name__}")  # pragma: no cover


def _without_known(items: list[Any], known_secrets: tuple[str, ...]) -> tuple[Any, ...]:
    """Catalog entries (``ToolSummary``/``ResourceSummary``) with every exact known secret value
    masked; an entry without one is kept as it is. The catalog is cached in the store, which never
    holds a credential value, and the pattern rules are not applied to it: a tool's description or
    schema is data, not a diagnostic."""
    if not known_secrets and not registered_secrets():
        return tuple(items)
    out = []
    for item in items:
        data = item.model_dump()
        masked = redact_known(data, known_secrets)
        out.append(item if masked is data else type(item).model_validate(masked))
    return tuple(out)


class Prober:
    """Runs bounded connect probes and reports each as a ``ProbeResult``.

    One instance is meant to live as long as the control plane: its per-connector locks and its
    global limit coordinate the probes of this process without polling; its :attr:`leases` extend
    both rules to every instance sharing the same Redis. All are created lazily, inside the running
    event loop.

    Usage::

        prober = Prober(Settings())
        result = await prober.probe(connector, workspace=Path("/work/project"))
        if result.state == "error":
            print(result.code, result.message)      # e.g. "command_not_found", "timeout"
        else:
            print(result.tool_count, [tool.name for tool in result.tools])

    Args:
        settings: the probe bounds (``probe_connect_timeout``, ``probe_max_pages``,
            ``probe_max_metadata_bytes``, ``stderr_tail_bytes``, ``probe_concurrency``) and the
            SDK handshake ``protocol_mode``.
        credentials: resolves a connector's credential bindings at probe time;
            None: a connector with bindings fails with ``auth_required``.
        leases: the cross-instance lease store; default :func:`~patchbay.adapters.leases.open_leases`
            of ``settings`` (Redis with an in-process fallback when ``redis_url`` is set).
    """

    def __init__(
        self, settings: Settings, *, credentials: CredentialResolver | None = None, leases: Leases | None = None
    ) -> None:
        self.settings = settings
        self.credentials = credentials
        self._locks: dict[str, _LockEntry] = {}
        self._limiter: anyio.Semaphore | None = None
        self._leases = leases

    @property
    def leases(self) -> Leases:
        """The lease store probes coordinate through; its ``state()`` (``ok``/``degraded``) is the
        coordination health a status route reports."""
        if self._leases is None:
            self._leases = open_leases(self.settings)
        return self._leases

    async def aclose(self) -> None:
        """Close the lease store's connection (Redis), if one was opened; the prober stays usable."""
        if self._leases is not None:
            await self._leases.aclose()

    @asynccontextmanager
    async def _exclusive(self, connector_id: str) -> AsyncIterator[None]:
        """Hold the connector's lock; the entry is dropped once nobody holds or awaits it."""
        entry = self._locks.get(connector_id)
        if entry is None:
            entry = self._locks[connector_id] = _LockEntry(anyio.Lock())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._locks.get(connector_id) is entry:
                del self._locks[connector_id]

    def _slots(self) -> anyio.Semaphore:
        if self._limiter is None:
            self._limiter = anyio.Semaphore(max(1, self.settings.probe_concurrency))
        return self._limiter

    async def probe(
        self,
        connector: Connector,
        *,
        workspace: Path,
        env: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        project_id: str | None = None,
        authorizer: Authorizer | None = None,
        verify: Callable[[], Awaitable[None]] | None = None,
        login_timeout: float = 300.0,
    ) -> ProbeResult:
        """Connect to ``connector`` once, list what it offers, disconnect.

        Waits first for any running probe of the same ``connector_id``, then for one of the
        ``probe_concurrency`` global slots -- in this process, then across instances (the lease
        ``probe:<connector_id>`` and a place under ``probe:slots``, see :attr:`leases`); the
        timeout starts only once all are held.

        Args:
            connector: the connector to probe; its target is validated again.
            workspace: the canonical workspace root; a stdio server runs in ``workspace / cwd``.
            env: resolved extra environment variables for a stdio server (credential values
                arrive here and are never stored); their exact values are masked in the stderr
                tail, the message, the server info and the listed tools and resources.
            headers: resolved extra HTTP headers for a remote server (same treatment).
            project_id: the project the probe runs for, named in its egress audit line.
            authorizer / verify / login_timeout: for a connector with OAuth settings
                (``runtime_config["oauth"]``): the probe authorizes with its stored grant
                (refreshing it when due); with an ``authorizer`` a missing grant starts a login (the
                probe deadline is lifted once a person is involved; the login waits
                ``login_timeout`` seconds and ``verify`` may refuse the callback), without one it
                ends with ``auth_required``/``auth_expired``.

        Every HTTP/SSE request goes through the egress guard with the connector's
        ``allow_private`` option (``network_blocked`` when refused; nothing is sent), and every
        probe that gets as far as connecting appends one ``mcp_probe`` line to
        ``<home>/egress-audit.jsonl``. When neither is given, the connector's bindings are resolved
                through ``credentials`` (each value registered for redaction and masked the same
                way); a binding that cannot be resolved ends the probe with ``auth_required`` before
                anything is started (``details`` are in the message: which binding, why).

        Returns:
            ``state="ready"`` with ``tools``, ``resources``, their counts, ``server_info``
            (``{"name", "version"}``), ``protocol_version``; or ``state="error"`` with ``code``:
            ``invalid_config`` (target or settings break a rule), ``command_not_found``,
            ``spawn_failed``, ``timeout`` (the whole probe exceeded ``probe_connect_timeout``),
            ``network_blocked`` (the egress guard refused a request: a non-public address
            without ``allow_private``, a cross-origin redirect; nothing was sent),
            ``tls_error``, ``protocol_error`` (not an MCP server, e.g. an HTML page),
            ``auth_required`` (HTTP 401/403), ``tool_list_failed`` (a list request failed, or more
            than ``probe_max_metadata_bytes`` bytes were listed),
            ``server_closed`` (refused, or the server exited) or ``unknown``. Either way
            ``stderr_tail`` holds the redacted end of a stdio server's stderr and ``duration_ms``
            the probe's wall time in milliseconds.

        Raises:
            Only the caller's own cancellation; the connection is torn down before it propagates.
        """
        owner = f"{instance_id()}/{secrets.token_hex(4)}"  # one owner per probe: slots count probes
        ttl = self.settings.probe_lease_ttl
        limit = max(1, self.settings.probe_concurrency)
        async with (
            self._exclusive(connector.connector_id),
            self._slots(),
            held(self.leases, f"probe:{connector.connector_id}", owner, ttl),
            held(self.leases, "probe:slots", owner, ttl, limit=limit),
        ):
            return await self._probe_now(
                connector,
                workspace=workspace,
                env=env,
                headers=headers,
                project_id=project_id,
                login=(authorizer, verify, login_timeout),
            )

    async def _probe_now(
        self,
        connector: Connector,
        *,
        workspace: Path,
        env: dict[str, str] | None,
        headers: dict[str, str] | None,
        project_id: str | None = None,
        login: tuple[Authorizer | None, Callable[[], Awaitable[None]] | None, float] = (None, None, 300.0),
    ) -> ProbeResult:
        settings = self.settings
        started = anyio.current_time()
        known_secrets = tuple(value for value in [*(env or {}).values(), *(headers or {}).values()] if value)

        def result(catalog: Catalog | None, failure: tuple[ErrorCode, str] | None, links: list[Link]) -> ProbeResult:
            tail = links[0].stderr_tail(known_secrets) if links else ""
            duration_ms = int((anyio.current_time() - started) * 1000)
            if failure is not None or catalog is None:
                code, message = failure or (ErrorCode.UNKNOWN, "the probe ended without a result")
                return ProbeResult(
                    connector=connector.name,
                    state="error",
                    code=str(code),
                    message=redact_text(message, known_secrets),
                    stderr_tail=tail,
                    duration_ms=duration_ms,
                )
            findings: list[ToolDiagnostic | ListingWarning] = [
                *catalog.diagnostics,
                *catalog.name_flags,
                *catalog.warnings,
            ]
            return ProbeResult(
                connector=connector.name,
                state="ready",
                tool_count=len(catalog.tools),
                resource_count=len(catalog.resources),
                tools=_without_known(catalog.tools, known_secrets),
                resources=_without_known(catalog.resources, known_secrets),
                server_info=redact_known(catalog.server_info, known_secrets),
                protocol_version=catalog.protocol_version,
                stderr_tail=tail,
                duration_ms=duration_ms,
                diagnostics=tuple(redact_value(d.to_dict()) for d in findings),
            )

        try:
            target = _checked_target(connector.target, workspace)
            if settings.protocol_mode not in _PROTOCOL_MODES:
                raise ConfigError("protocol_mode", f"must be one of {', '.join(_PROTOCOL_MODES)}")
            bindings = connector.bindings
        except ConfigError as exc:
            return result(None, (ErrorCode.INVALID_CONFIG, exc.message), [])
        ref = ConnectorRef(connector.connector_id, connector.name, target, connector.runtime_config)
        if env is None and headers is None and bindings:
            try:
                resolved = await resolve_bindings(
                    ref, bindings, self.credentials, holder="no credential store was given"
                )
            except PatchbayError as exc:
                return result(None, (ErrorCode(exc.code), exc.message), [])
            env, headers = resolved.env, resolved.headers
            known_secrets = tuple(value for value in [*env.values(), *headers.values()] if value)

        try:
            origin = target_origin(target)
        except EgressBlocked as exc:
            return result(None, (ErrorCode.NETWORK_BLOCKED, exc.message), [])
        audit = EgressAudit(audit_path(settings.home))
        egress = EgressAccount(ref, audit, project_id)
        links: list[Link] = []
        catalog: Catalog | None = None
        failure: tuple[ErrorCode, str] | None = None
        finished = False  # the list requests ran to an end (a catalog or a list failure)

        deadline = anyio.CancelScope(deadline=started + settings.probe_connect_timeout)
        authorizer, verify, login_timeout = login
        if authorizer is not None:
            show = authorizer

            async def lifted(url: str) -> None:  # a person is involved now: no probe deadline
                deadline.deadline = math.inf
                await show(url)

            authorizer = lifted
        try:
            with deadline:
                try:
                    async with connect(
                        ref,
                        workspace=workspace,
                        settings=settings,
                        egress=egress,
                        credentials=self.credentials,
                        env=env,
                        headers=headers,
                        limits=RuntimeOptions.model_validate(connector.runtime_config).limits,
                        authorizer=authorizer,
                        verify=verify,
                        login_timeout=login_timeout,
                        link_holder=links,
                    ) as connection:
                        try:
                            catalog = await list_catalog(
                                connection.client,
                                max_pages=settings.probe_max_pages,
                                max_metadata_bytes=settings.probe_max_metadata_bytes,
                                max_schema_depth=settings.schema_max_depth,
                                max_schema_nodes=settings.schema_max_nodes,
                                max_schema_bytes=settings.schema_max_bytes,
                            )
                        except CatalogError as exc:
                            failure = (ErrorCode.TOOL_LIST_FAILED, exc.message)
                        finished = True
                except Exception as exc:
                    if not finished:
                        failure = connect_failure(exc, links[0] if links else None)
        except BaseExceptionGroup as group:
            # Cancellation tangled with real errors from the SDK's task groups. If it is the
            # caller's cancellation, the checkpoint re-raises it; if it is our deadline, the
            # timeout rule below applies.
            _, errors = group.split(anyio.get_cancelled_exc_class())
            if not finished and errors is not None:
                failure = connect_failure(errors, links[0] if links else None)
            await anyio.lowlevel.checkpoint_if_cancelled()
        finally:
            audit.record(
                "mcp_probe",
                connector_id=connector.connector_id,
                origin=origin,
                project_id=project_id,
                approved=not egress.refused,
            )
        # What the lists found stands even if closing the connection failed or ran past the
        # deadline; a deadline that struck before they were done is a timeout, whatever it broke.
        if not finished and deadline.cancel_called:
            failure = (
                ErrorCode.TIMEOUT,
                f"no complete answer within {settings.probe_connect_timeout:g} s "
                "(spawn/connect, initialize and the list requests)",
            )
        if failure is not None and links:  # the server may have died of one of its resource limits
            failure = (failure[0], with_limit(failure[1], links[0]))
        return result(catalog if failure is None else None, failure, links)
