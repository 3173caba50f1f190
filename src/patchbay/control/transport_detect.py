"""Transport "auto" for a remote connector: which transport a URL speaks, found once, at add time.

"auto" is an input, never a stored value: :func:`detect_transport` tries a Streamable HTTP
``initialize`` through the one connect step (:func:`patchbay.adapters.transports.connect.connect`,
with the connector's egress policy, credentials and ``allow_private``), and falls back to the
legacy HTTP+SSE transport only when the server clearly does not speak Streamable HTTP:

* ``initialize`` works → ``streamable_http``;
* HTTP 401/403 → ``streamable_http``, marked ``auth_required`` (the server needs credentials
  or an OAuth login; it does speak HTTP at that URL);
* another HTTP 4xx (404, 405, ...) or an answer that is no Streamable HTTP answer
  (``protocol_error``) → try SSE: it works → ``sse`` (a 401/403 there → ``sse``, marked
  ``auth_required``);
* anything else (refused, TLS, a refused address, a timeout), or SSE fails too → :class:`ProbeError`
  with the stable probe code (``server_closed``, ``timeout``, ``network_blocked``, ``tls_error``,
  ``protocol_error``, ...); nothing is stored.

Both attempts together finish within ``Settings.probe_connect_timeout`` seconds. Redirects follow
the transports' rule (same origin only; the egress guard refuses any other), and each attempt
appends one ``mcp_probe`` line to the egress audit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.lowlevel

from patchbay.adapters.credentials import CredentialResolver
from patchbay.adapters.egress_audit import EgressAudit, audit_path, target_origin
from patchbay.adapters.transports import Link
from patchbay.adapters.transports.connect import ConnectorRef, EgressAccount, connect, connect_failure
from patchbay.core.errors import ErrorCode, ProbeError
from patchbay.core.models import HttpTarget
from patchbay.core.redaction import redact_text
from patchbay.core.settings import Settings
from patchbay.core.validation import validate_http_target

__all__ = ["AUTO", "TransportDetection", "detect_transport"]

AUTO = "auto"
"""The transport a caller names to have it detected."""

RemoteTransport = Literal["streamable_http", "sse"]


@dataclass(frozen=True)
class TransportDetection:
    """What :func:`detect_transport` found.

    Attributes:
        transport: the concrete transport to store.
        auth_required: the server answered HTTP 401/403: it needs credentials or a login.
        message: one sentence on how it was decided (redacted), for the person adding it.
    """

    transport: RemoteTransport
    auth_required: bool = False
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"requested": "auto", "transport", "auth_required", "message"}``."""
        return {
            "requested": AUTO,
            "transport": self.transport,
            "auth_required": self.auth_required,
            "message": self.message,
        }


@dataclass(frozen=True)
class _Attempt:
    ok: bool
    code: ErrorCode | None = None
    message: str = ""
    status: int | None = None
    timed_out: bool = False

    @property
    def auth(self) -> bool:
        return self.status in (401, 403) or self.code in (ErrorCode.AUTH_REQUIRED, ErrorCode.AUTH_EXPIRED)

    @property
    def not_streamable(self) -> bool:
        """The server answered, but not as a Streamable HTTP endpoint: worth trying SSE."""
        if self.status is not None and 400 <= self.status < 500 and self.status not in (401, 403):
            return True
        return self.code == ErrorCode.PROTOCOL_ERROR


async def _attempt(
    ref: ConnectorRef,
    *,
    settings: Settings,
    audit: EgressAudit,
    origin: str | None,
    headers: dict[str, str] | None,
    credentials: CredentialResolver | None,
    project_id: str | None,
    deadline: float,
) -> _Attempt:
    """One ``initialize`` over ``ref.target``'s transport, closed at once; never raises but the
    caller's cancellation."""
    egress = EgressAccount(ref, audit, project_id)
    links: list[Link] = []
    failure: tuple[ErrorCode, str] | None = None
    connected = False
    scope = anyio.CancelScope(deadline=deadline)
    try:
        with scope:
            try:
                async with connect(
                    ref,
                    workspace=settings.home,
                    settings=settings,
                    egress=egress,
                    credentials=credentials,
                    headers=headers,
                    link_holder=links,
                ):
                    connected = True
            except Exception as exc:
                if not connected:
                    failure = connect_failure(exc, links[0] if links else None)
    except BaseExceptionGroup as group:  # cancellation tangled with the SDK's task-group errors
        _, errors = group.split(anyio.get_cancelled_exc_class())
        if not connected and errors is not None:
            failure = connect_failure(errors, links[0] if links else None)
        await anyio.lowlevel.checkpoint_if_cancelled()
    finally:
        audit.record(
            "mcp_probe",
            connector_id=ref.connector_id,
            origin=origin,
            project_id=project_id,
            approved=not egress.refused,
        )
    status = links[0].http_status if links else None
    if connected:
        return _Attempt(ok=True, status=status)
    if scope.cancel_called:
        return _Attempt(ok=False, code=ErrorCode.TIMEOUT, status=status, timed_out=True)
    code, message = failure or (ErrorCode.UNKNOWN, "the connect ended without a result")
    return _Attempt(ok=False, code=code, message=message, status=status)


def _said(attempt: _Attempt) -> str:
    """The attempt's failure in a few words: its first line, with the HTTP status."""
    message = attempt.message.strip().splitlines()[0] if attempt.message.strip() else ""
    if attempt.status is not None and attempt.status >= 400 and f"HTTP {attempt.status}" not in message:
        return f"HTTP {attempt.status}: {message}" if message else f"HTTP {attempt.status}"
    return message or str(attempt.code)


async def detect_transport(
    url: str,
    *,
    settings: Settings,
    runtime_config: Mapping[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    credentials: CredentialResolver | None = None,
    name: str = "auto",
    connector_id: str = "auto",
    project_id: str | None = None,
) -> TransportDetection:
    """Find the transport ``url`` speaks: Streamable HTTP first, then SSE (see the module docstring).

    Usage::

        found = await detect_transport("http://127.0.0.1:3001/sse", settings=settings,
                                       runtime_config={"allow_private": True})
        found.transport  # "sse"

    Args:
        url: the server's absolute http(s) URL (validated here).
        settings: ``probe_connect_timeout`` (seconds, both attempts together), ``protocol_mode``.
        runtime_config: the connector's runtime options; ``allow_private`` (literal true) opens
            private and loopback addresses to the egress guard, ``oauth`` settings are honoured.
        headers: resolved header values (credentials) for every request; masked in messages.
        credentials: the OAuth provider's token store.
        name / connector_id: name the connector-to-be in messages and the egress audit.
        project_id: named in the egress audit lines.

    Returns:
        The concrete transport, whether the server asked for authorization, and why.

    Raises:
        ConfigError: ``invalid_config`` (field ``url``) for a URL that breaks the rules.
        ProbeError: neither transport answered; ``code`` is the stable probe code (``server_closed``
            for a closed port, ``timeout`` when ``probe_connect_timeout`` passed, ``network_blocked``
            for a refused address or a cross-origin redirect, ``tls_error``, ``protocol_error``, ...),
            ``details``: ``{"field": "url", "streamable_http": code, "sse": code or None}``.
    """
    target = validate_http_target(url, "streamable_http")
    config = dict(runtime_config or {})
    origin = target_origin(target)  # EgressBlocked (network_blocked) for a URL the guard refuses outright
    audit = EgressAudit(audit_path(settings.home))
    deadline = anyio.current_time() + settings.probe_connect_timeout
    secrets = tuple(value for value in (headers or {}).values() if value)

    def ref(transport: RemoteTransport) -> ConnectorRef:
        return ConnectorRef(connector_id, name, HttpTarget(transport=transport, url=target.url), config)

    def failed(code: ErrorCode, message: str, first: _Attempt, second: _Attempt | None) -> ProbeError:
        details = {
            "field": "url",
            "streamable_http": str(first.code),
            "sse": str(second.code) if second is not None else None,
        }
        return ProbeError(redact_text(message, secrets), code=code, details=details)

    def timed_out(first: _Attempt, second: _Attempt | None) -> ProbeError:
        return failed(
            ErrorCode.TIMEOUT,
            f"no transport answered at {target.url} within {settings.probe_connect_timeout:g} s",
            first,
            second,
        )

    kwargs: dict[str, Any] = {
        "settings": settings,
        "audit": audit,
        "origin": origin,
        "headers": headers,
        "credentials": credentials,
        "project_id": project_id,
        "deadline": deadline,
    }
    first = await _attempt(ref("streamable_http"), **kwargs)
    if first.ok:
        return TransportDetection("streamable_http", message="the server answered a Streamable HTTP initialize")
    if first.auth:
        status = f"HTTP {first.status}" if first.status in (401, 403) else str(first.code)
        return TransportDetection(
            "streamable_http",
            auth_required=True,
            message=f"the server answered {status}: it needs authorization (Streamable HTTP kept)",
        )
    if first.timed_out:
        raise timed_out(first, None)
    if not first.not_streamable:
        raise failed(
            first.code or ErrorCode.UNKNOWN,
            f"no MCP server answered at {target.url} (Streamable HTTP: {_said(first)})",
            first,
            None,
        )
    second = await _attempt(ref("sse"), **kwargs)
    why = f"Streamable HTTP was refused ({_said(first)})"
    if second.ok:
        return TransportDetection("sse", message=redact_text(f"{why}; the server answered over SSE", secrets))
    if second.auth:
        return TransportDetection(
            "sse",
            auth_required=True,
            message=redact_text(f"{why}; over SSE it needs authorization ({_said(second)})", secrets),
        )
    if second.timed_out:
        raise timed_out(first, second)
    raise failed(
        second.code or ErrorCode.UNKNOWN,
        f"neither Streamable HTTP ({_said(first)}) nor SSE ({_said(second)}) answered at {target.url}",
        first,
        second,
    )
