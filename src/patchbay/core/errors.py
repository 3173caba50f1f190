"""Every Patchbay exception and every stable error code, in one place.

Front ends switch on a code, never on message text (DESIGN.md "Stable error codes"). An error
is never edited once raised: a layer that knows more raises a new one
(:meth:`~PatchbayError.with_details`, :meth:`~PatchbayError.with_message`, ``raise ... from exc``).
The hierarchy::

    PatchbayError                      code: any ErrorCode
    ├── ConfigError                    invalid_config; details.field names the field
    │   └── NameTakenError             invalid_config; the API answers 409 revision_conflict
    ├── MalformedConfigError           invalid_config; a config file that is not JSONC (line, column)
    ├── ValidationError                validation_error (a request is malformed)
    ├── NotFoundError                  not_found
    ├── RevisionConflictError          revision_conflict (optimistic lock lost)
    ├── ApprovalStaleError             approval_stale (the call an approval was for has changed)
    ├── ApprovalExpiredError           approval_expired (nobody answered an approval in time)
    ├── ApprovalPendingError           approval_pending (an approval still waits; the call ends first)
    ├── ApprovalUnavailableError       approval_unavailable (no person can be asked)
    ├── BuiltinConnectorError          builtin_connector
    ├── SourceError                    a built-in connector's data source failed (source_unavailable, ...)
    ├── CanonicalStateUnavailable      canonical_state_unavailable
    ├── CredentialUnavailable          auth_required; details.reason is credential_unavailable
    ├── CoordinationUnavailable        coordination_unavailable (Redis cannot be reached)
    ├── ProbeError                     a probe/connect code (command_not_found, timeout, ...)
    │   ├── AuthorizationRequired      auth_required (a person must authorize)
    │   ├── AuthorizationExpired       auth_expired (the stored grant was refused)
    │   ├── AuthorizationFailed        auth_required (the login was refused or timed out)
    │   ├── CatalogError               tool_list_failed
    │   └── EgressBlocked              network_blocked (nothing was sent)
    └── ToolCallError                  tool_error; its FailureReason is the code front ends see

    UnacceptableSchema(ValueError)     no code: a tool left out of a model API's definitions

Two errors subclass a library's exception, because that is what the library lets through; they
live in their layer and their codes are here::

    starlette HTTPException
    └── PayloadTooLarge                payload_too_large (patchbay.interfaces.api.limits)
    httpx2.SSEError
    └── SseEndpointRefused             network_blocked (patchbay.adapters.transports.egress)

The codes (:class:`ErrorCode`); :mod:`patchbay.interfaces.api.errors` gives each one's HTTP status:

* probe and connect: ``invalid_config``, ``command_not_found``, ``spawn_failed``, ``timeout``,
  ``network_blocked``, ``tls_error``, ``protocol_error``, ``auth_required``, ``auth_expired``,
  ``tool_list_failed``, ``server_closed``, ``unknown``;
* control plane: ``validation_error``, ``not_found``, ``revision_conflict``, ``builtin_connector``,
  ``canonical_state_unavailable``, ``runtime_reload_failed``, ``tool_error``;
* coordination between instances: ``coordination_unavailable`` (the shared store, Redis, cannot be
  reached; callers fall back to in-process coordination and never answer it to a client);
* answered by the REST API's middleware and handlers, carried by no PatchbayError:
  ``origin_refused``, ``method_not_allowed``, ``unauthorized``, ``payload_too_large``,
  ``csrf_failed`` (a cookie-authenticated unsafe request without the page's CSRF header);
* a built-in connector's data source (inside the connector's own process, reported as a tool error
  result): ``source_unavailable``, ``source_rate_limited``, ``source_response_too_large``,
  ``source_bad_response``.
* session event logs: ``event_chain_broken`` (a log whose seqs or hash chain do not verify).
* approvals: ``approval_stale`` (an answer for an arguments digest or policy that no longer
  matches the waiting call), ``approval_expired`` (the approver's own signal; the call ends
  ``permission_denied``), ``approval_pending`` (the approver stopped waiting while the approval
  stays open: the call ends ``approval_pending`` and its identical retry takes the answer),
  ``approval_unavailable`` (the approver has nobody to ask: the call ends ``approval_unavailable``).

Why a tool call failed (:class:`FailureReason`, the code of a failed call): ``permission_denied``,
``approval_unavailable``, ``approval_pending``, ``unknown_tool``, ``ambiguous_call``, ``cancelled``, ``tool_error``,
``mcp_server_unavailable``, ``mcp_server_unstable``, ``mcp_server_restarted``, ``timeout``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from patchbay.core.redaction import redact_text

__all__ = [
    "AuthorizationExpired",
    "AuthorizationFailed",
    "AuthorizationRequired",
    "BuiltinConnectorError",
    "CanonicalStateUnavailable",
    "CatalogError",
    "ConfigError",
    "CoordinationUnavailable",
    "CredentialUnavailable",
    "EgressBlocked",
    "ErrorCode",
    "FailureReason",
    "MalformedConfigError",
    "NameTakenError",
    "NotFoundError",
    "PatchbayError",
    "ProbeError",
    "RevisionConflictError",
    "SourceError",
    "ApprovalExpiredError",
    "ApprovalPendingError",
    "ApprovalStaleError",
    "ApprovalUnavailableError",
    "ToolCallError",
    "UnacceptableSchema",
    "ValidationError",
]


class ErrorCode(StrEnum):
    """Every stable error code Patchbay reports (DESIGN.md)."""

    # probe and connect
    INVALID_CONFIG = "invalid_config"
    COMMAND_NOT_FOUND = "command_not_found"
    SPAWN_FAILED = "spawn_failed"
    TIMEOUT = "timeout"
    NETWORK_BLOCKED = "network_blocked"
    TLS_ERROR = "tls_error"
    PROTOCOL_ERROR = "protocol_error"
    AUTH_REQUIRED = "auth_required"
    AUTH_EXPIRED = "auth_expired"
    TOOL_LIST_FAILED = "tool_list_failed"
    SERVER_CLOSED = "server_closed"
    UNKNOWN = "unknown"
    # control plane and API
    VALIDATION_ERROR = "validation_error"
    NOT_FOUND = "not_found"
    REVISION_CONFLICT = "revision_conflict"
    BUILTIN_CONNECTOR = "builtin_connector"
    CANONICAL_STATE_UNAVAILABLE = "canonical_state_unavailable"
    RUNTIME_RELOAD_FAILED = "runtime_reload_failed"
    TOOL_ERROR = "tool_error"
    # coordination between instances
    COORDINATION_UNAVAILABLE = "coordination_unavailable"
    # answered by the REST API's middleware and handlers only
    ORIGIN_REFUSED = "origin_refused"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    UNAUTHORIZED = "unauthorized"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    CSRF_FAILED = "csrf_failed"
    # a built-in connector's data source (tool error results of the connector's own process)
    SOURCE_UNAVAILABLE = "source_unavailable"
    SOURCE_RATE_LIMITED = "source_rate_limited"
    SOURCE_RESPONSE_TOO_LARGE = "source_response_too_large"
    SOURCE_BAD_RESPONSE = "source_bad_response"
    # a session event log whose seq or hash chain does not verify (a row altered or missing)
    EVENT_CHAIN_BROKEN = "event_chain_broken"
    # approvals
    APPROVAL_STALE = "approval_stale"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_PENDING = "approval_pending"
    APPROVAL_UNAVAILABLE = "approval_unavailable"


class FailureReason(StrEnum):
    """Why a tool call (or a resource read, a prompt expansion) failed; carried by ``tool.failed``
    events and answered as the code of a failed call."""

    PERMISSION_DENIED = "permission_denied"
    APPROVAL_UNAVAILABLE = "approval_unavailable"
    APPROVAL_PENDING = "approval_pending"
    MCP_SERVER_UNSTABLE = "mcp_server_unstable"
    MCP_SERVER_RESTARTED = "mcp_server_restarted"
    MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    TOOL_ERROR = "tool_error"
    UNKNOWN_TOOL = "unknown_tool"
    AMBIGUOUS_CALL = "ambiguous_call"


class PatchbayError(Exception):
    """Base of every error Patchbay raises on purpose.

    Args:
        message: one human sentence; redacted here, so it never carries a secret onward.
        code: the stable code; defaults to the class's ``default_code``.
        details: small JSON-able context (a field name, a connector name); copied.
    """

    default_code: ErrorCode = ErrorCode.UNKNOWN

    def __init__(self, message: str, *, code: ErrorCode | None = None, details: dict[str, Any] | None = None):
        # Messages quote servers, users and tools; none of that may carry a secret onward.
        message = redact_text(message) if isinstance(message, str) else str(message)
        super().__init__(message)
        self.message = message
        self.code = ErrorCode(code) if code is not None else self.default_code
        self.details: dict[str, Any] = dict(details) if details else {}

    def with_details(self, **details: Any) -> Self:
        """A copy of this error (same class, code, message and attributes) whose ``details`` also
        hold ``details`` (given keys replace existing ones); this error is left as it was raised.

        Usage::

            except ToolCallError as exc:
                raise exc.with_details(toolCallId=call_id) from exc
        """
        cls = type(self)
        copy = cls.__new__(cls, *self.args)  # not __init__: subclasses take other arguments
        copy.__dict__.update(self.__dict__)
        copy.details = {**self.details, **details}
        return copy

    def with_message(self, message: str, **details: Any) -> Self:
        """Like :meth:`with_details`, with ``message`` (redacted) instead of this error's: the same
        failure, said in the words of a layer that knows what the user can do about it."""
        copy = self.with_details(**details)
        copy.message = redact_text(message)
        copy.args = (copy.message,)
        return copy

    def to_dict(self) -> dict[str, Any]:
        """The ``{"code", "message", "details"}`` shape every interface prints."""
        return {"code": str(self.code), "message": self.message, "details": self.details}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ConfigError(PatchbayError):
    """A connector definition breaks a validation rule; ``details["field"]`` names it.

    Args:
        field: the field (dotted for nested ones), e.g. ``target.command``.
        message: what is wrong with it; shown after ``"<field>: "``.
        details: more context (``expected``, ``found``, ...) beside ``field``.
    """

    default_code = ErrorCode.INVALID_CONFIG

    def __init__(self, field: str, message: str, *, details: dict[str, Any] | None = None):
        super().__init__(f"{field}: {message}", details={"field": field, **(details or {})})
        self.field = field


class NameTakenError(ConfigError):
    """A connector name is taken (names compare ignoring case); ``details["field"]`` is ``name``.
    The API answers 409 ``revision_conflict``: the request is fine, the registry's state is not."""

    def __init__(self, name: str):
        super().__init__("name", f"a connector named {name!r} already exists (names are case-insensitive)")


class MalformedConfigError(PatchbayError):
    """A config file that is not valid JSONC (or not UTF-8); code ``invalid_config``.

    ``details``: ``{"field": "file", "path", "line", "column"}``.

    Attributes:
        path: the file (as given), or ``"<text>"``.
        line, column: 1-based position of the problem in the original text.
        problem: what is wrong there.
    """

    default_code = ErrorCode.INVALID_CONFIG

    def __init__(self, path: str, line: int, column: int, problem: str) -> None:
        super().__init__(
            f"{path}:{line}:{column}: malformed JSONC: {problem}",
            details={"field": "file", "path": path, "line": line, "column": column},
        )
        self.path = path
        self.line = line
        self.column = column
        self.problem = problem


class ValidationError(PatchbayError):
    """A request is malformed (API 422)."""

    default_code = ErrorCode.VALIDATION_ERROR


class NotFoundError(PatchbayError):
    """The named connector, project, session or grant does not exist (API 404)."""

    default_code = ErrorCode.NOT_FOUND


class RevisionConflictError(PatchbayError):
    """An update named a stale revision; nothing was changed (API 409)."""

    default_code = ErrorCode.REVISION_CONFLICT


class ApprovalStaleError(PatchbayError):
    """An approval answer named an arguments digest or a policy revision that no longer matches
    the waiting call; the call keeps waiting (API 409)."""

    default_code = ErrorCode.APPROVAL_STALE


class ApprovalExpiredError(PatchbayError):
    """Nobody answered an approval before it expired: the approver raises it and the permission
    engine turns it into a denial (``permission_denied``, actor ``runtime``)."""

    default_code = ErrorCode.APPROVAL_EXPIRED


class ApprovalPendingError(PatchbayError):
    """The approver stopped waiting for a person's answer while the approval stays open (a gateway
    host would time out): the permission engine ends the call ``approval_pending``, and the
    identical call made again takes the answer once it is given. ``details``:
    ``{"approval_id", "approval_url"?}``."""

    default_code = ErrorCode.APPROVAL_PENDING


class ApprovalUnavailableError(PatchbayError):
    """The approver has nobody to ask now (no settings page runs to show the approval): the
    permission engine ends the call ``approval_unavailable``. ``details.hint`` may say how the
    person can approve."""

    default_code = ErrorCode.APPROVAL_UNAVAILABLE


class BuiltinConnectorError(PatchbayError):
    """Built-in connectors cannot be removed (API 403)."""

    default_code = ErrorCode.BUILTIN_CONNECTOR


class SourceError(PatchbayError):
    """A built-in connector's public data source did not give a usable answer.

    Raised inside the connector's own process and answered as a tool error result carrying the
    code. ``details``: ``{"source": <source name>, "status": <HTTP status or None>}`` plus, for
    ``source_rate_limited``, ``retry_after`` (seconds) -- never a URL query or a header value.

    Codes: ``source_unavailable`` (network failure or 5xx after the bounded retries),
    ``source_rate_limited`` (429/503 past the retries, or a ``Retry-After`` longer than allowed),
    ``source_response_too_large`` (the body passed the size cap; reading stopped there),
    ``source_bad_response`` (a 4xx, or a body that is not what the API documents).
    """

    default_code = ErrorCode.SOURCE_UNAVAILABLE


class CanonicalStateUnavailable(PatchbayError):
    """The canonical store cannot be written (API 503)."""

    default_code = ErrorCode.CANONICAL_STATE_UNAVAILABLE


class CredentialUnavailable(PatchbayError):
    """A binding of a connector cannot be resolved; that connector fails with a clear
    error and does not start; the others run on.

    ``code`` is ``auth_required``; ``details``: ``reason`` (always
    ``credential_unavailable``), ``problem`` (``missing``: no such credential; ``not_shared``:
    owned by another connector and not shared; ``variable_unset``: the referenced environment
    variable is unset or empty; ``no_value``: a managed credential without a value; ``unreadable``:
    the store cannot be read), ``ref``, ``binding`` (e.g. ``env PB_KEY``) and ``connector``.
    """

    default_code = ErrorCode.AUTH_REQUIRED

    def __init__(self, message: str, *, problem: str, ref: str, binding: str, connector: str):
        super().__init__(
            message,
            details={
                "reason": "credential_unavailable",
                "problem": problem,
                "ref": ref,
                "binding": binding,
                "connector": connector,
            },
        )
        self.problem = problem


class CoordinationUnavailable(PatchbayError):
    """The shared coordination store (Redis) cannot be reached or answered too slowly; the caller
    falls back to coordinating within its own process."""

    default_code = ErrorCode.COORDINATION_UNAVAILABLE


class ProbeError(PatchbayError):
    """Connecting to a server failed; ``code`` is one of the stable probe codes."""


class AuthorizationRequired(ProbeError):
    """The connector needs an authorization a person must give (code ``auth_required``).

    ``details``: ``{"connector": name, "reason": short phrase}``; raised by a runtime without an
    authorizer on a 401, a step-up 403 or a void grant; fix with ``patchbay auth login NAME``.
    """

    default_code = ErrorCode.AUTH_REQUIRED


class AuthorizationExpired(ProbeError):
    """The stored grant is no longer accepted (code ``auth_expired``): the refresh token was refused
    (``invalid_grant``) or the access token was rejected with no way to refresh it."""

    default_code = ErrorCode.AUTH_EXPIRED


class AuthorizationFailed(ProbeError):
    """The authorization server sent the user back with an error, or the login timed out
    (code ``auth_required``; ``details["error"]`` is the OAuth error code, e.g. ``access_denied``)."""

    default_code = ErrorCode.AUTH_REQUIRED


class CatalogError(ProbeError):
    """A list request failed or a bound was exceeded (code ``tool_list_failed``)."""

    def __init__(self, message: str):
        super().__init__(message, code=ErrorCode.TOOL_LIST_FAILED)


class EgressBlocked(ProbeError):
    """The egress guard refused a request; nothing was sent (code ``network_blocked``).

    ``details``: ``{"origin": "https://host:443" or None, "reason": <short phrase>}`` -- never a
    path, query or header value.

    Args:
        reason: why, as a short phrase (the message quotes it).
        origin: ``scheme://host:port`` of the refused request, when known.
    """

    default_code = ErrorCode.NETWORK_BLOCKED

    def __init__(self, reason: str, *, origin: str | None = None):
        where = f" to {origin}" if origin else ""
        super().__init__(f"outbound request{where} refused: {reason}", details={"origin": origin, "reason": reason})

    @property
    def origin(self) -> str | None:
        """The refused request's origin (``details["origin"]``), None when it had none to give."""
        origin = self.details.get("origin")
        return origin if isinstance(origin, str) else None

    @property
    def reason(self) -> str:
        """Why it was refused (``details["reason"]``)."""
        return str(self.details.get("reason", ""))


class ToolCallError(PatchbayError):
    """A governed tool call (or resource read, prompt expansion) did not produce a result.

    Args:
        reason: why (``permission_denied``, ``approval_unavailable``, ``mcp_server_unavailable``,
            ``timeout``, ``tool_error``, ...); front ends see it as the code.
        message: one human sentence.
        details: more context; ``details["reason"]`` is always the reason.
        result: for ``tool_error``, the server's error result (a runtime ``ToolCallResult``;
            typed loosely because core cannot import the runtime).
    """

    default_code = ErrorCode.TOOL_ERROR

    def __init__(
        self, reason: FailureReason, message: str, *, details: dict[str, Any] | None = None, result: Any = None
    ):
        super().__init__(message, details={"reason": str(reason), **(details or {})})
        self.reason = FailureReason(reason)
        self.result = result

    def to_dict(self) -> dict[str, Any]:
        """Like :meth:`PatchbayError.to_dict`, with the failure reason as the code front ends switch on."""
        return {"code": str(self.reason), "message": self.message, "details": self.details}

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class UnacceptableSchema(ValueError):
    """A tool's schema cannot be made acceptable to a model API; ``str(exc)`` is the reason (one
    sentence). The tool is left out of that API's definitions; nothing reports it as an error."""
