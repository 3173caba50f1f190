"""Patchbay's exception hierarchy and its stable error codes.

Front ends switch on ``code``, never on message text (DESIGN.md "Stable error codes")::

    PatchbayError                      code: any ErrorCode
    ├── ConfigError                    invalid_config (a connector definition is wrong)
    ├── ValidationError                validation_error (a request body is wrong)
    ├── NotFoundError                  not_found
    ├── RevisionConflictError          revision_conflict (optimistic lock lost)
    ├── BuiltinConnectorError          builtin_connector
    ├── CanonicalStateUnavailable      canonical_state_unavailable
    ├── ProbeError                     a probe/connect code (command_not_found, timeout, ...)
    └── ToolCallError                  tool_error; carries a FailureReason
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from patchbay.core.redaction import redact_text

__all__ = [
    "BuiltinConnectorError",
    "CanonicalStateUnavailable",
    "ConfigError",
    "ErrorCode",
    "FailureReason",
    "NameTakenError",
    "NotFoundError",
    "PatchbayError",
    "ProbeError",
    "RevisionConflictError",
    "ToolCallError",
    "ValidationError",
]


class ErrorCode(StrEnum):
    """Every stable error code Patchbay reports (DESIGN.md)."""

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
    VALIDATION_ERROR = "validation_error"
    NOT_FOUND = "not_found"
    REVISION_CONFLICT = "revision_conflict"
    BUILTIN_CONNECTOR = "builtin_connector"
    CANONICAL_STATE_UNAVAILABLE = "canonical_state_unavailable"
    RUNTIME_RELOAD_FAILED = "runtime_reload_failed"
    TOOL_ERROR = "tool_error"


class FailureReason(StrEnum):
    """Why a tool call failed; carried by ``tool.failed`` events."""

    PERMISSION_DENIED = "permission_denied"
    APPROVAL_UNAVAILABLE = "approval_unavailable"
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
        message: one human sentence; never contains a secret.
        code: the stable code; defaults to the class's ``default_code``.
        details: small JSON-able context (a field name, a connector name).
    """

    default_code: ErrorCode = ErrorCode.UNKNOWN

    def __init__(self, message: str, *, code: ErrorCode | str | None = None, details: dict[str, Any] | None = None):
        # Messages quote servers, users and tools; none of that may carry a secret onward.
        message = redact_text(message) if isinstance(message, str) else str(message)
        super().__init__(message)
        self.message = message
        self.code = ErrorCode(code) if code is not None else self.default_code
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        """The ``{"code", "message", "details"}`` shape every interface prints."""
        return {"code": str(self.code), "message": self.message, "details": self.details}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ConfigError(PatchbayError):
    """A connector definition breaks a validation rule; ``details["field"]`` names it."""

    default_code = ErrorCode.INVALID_CONFIG

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}", details={"field": field})
        self.field = field


class NameTakenError(ConfigError):
    """A connector name is taken (names compare ignoring case); ``details["field"]`` is ``name``.
    The API answers 409 ``revision_conflict``: the request is fine, the registry's state is not."""

    def __init__(self, name: str):
        super().__init__("name", f"a connector named {name!r} already exists (names are case-insensitive)")


class ValidationError(PatchbayError):
    """A request is malformed (API 422)."""

    default_code = ErrorCode.VALIDATION_ERROR


class NotFoundError(PatchbayError):
    """The named connector, project, session or grant does not exist (API 404)."""

    default_code = ErrorCode.NOT_FOUND


class RevisionConflictError(PatchbayError):
    """An update named a stale revision; nothing was changed (API 409)."""

    default_code = ErrorCode.REVISION_CONFLICT


class BuiltinConnectorError(PatchbayError):
    """Built-in connectors cannot be removed (API 403)."""

    default_code = ErrorCode.BUILTIN_CONNECTOR


class CanonicalStateUnavailable(PatchbayError):
    """The canonical store cannot be written (API 503)."""

    default_code = ErrorCode.CANONICAL_STATE_UNAVAILABLE


class ProbeError(PatchbayError):
    """Connecting to a server failed; ``code`` is one of the stable probe codes."""


class ToolCallError(PatchbayError):
    """A governed tool call did not produce a result.

    Args:
        reason: the FailureReason: ``permission_denied``, ``approval_unavailable``,
            ``mcp_server_unavailable``, ``timeout``, ``tool_error``, ...
    """

    default_code = ErrorCode.TOOL_ERROR

    def __init__(self, reason: FailureReason | str, message: str, *, details: dict[str, Any] | None = None):
        super().__init__(message, details={"reason": str(reason), **(details or {})})
        self.reason = FailureReason(reason)

    def to_dict(self) -> dict[str, Any]:
        """Like :meth:`PatchbayError.to_dict`, with the failure reason as the code front ends switch on."""
        return {"code": str(self.reason), "message": self.message, "details": self.details}

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"
