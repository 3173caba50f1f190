"""Contracts of the approval routes: calls of browser-approved sessions waiting for a person."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from patchbay.interfaces.api.contracts._base import _Request, _Response

__all__ = ["ApprovalAnswerRequest", "ApprovalDecided", "ApprovalList", "ApprovalView"]

_DIGEST = r"^[0-9a-f]{64}$"


class ApprovalView(_Response):
    """One call waiting for approval."""

    id: str
    """The approval's id (``apr_…``)."""
    session_id: str
    """The session whose call waits."""
    workspace: str
    """The session's workspace directory."""
    name: str
    """The canonical tool name, ``mcp.<connector>.<tool>``."""
    connector: str
    """The connector name."""
    tool: str
    """The server's tool name (``resources/read`` for a resource include)."""
    kind: Literal["tool", "resource", "prompt"]
    """A tool call or a resource include (``prompt``: never asked today)."""
    risk: Literal["read", "destructive", "network"]
    """The risk at decision (from the tool's annotations)."""
    arguments: dict[str, Any]
    """The call's arguments, redacted."""
    arguments_digest: str
    """SHA-256 hex of the unredacted arguments' canonical JSON; send it back with the answer."""
    policy: str
    """Fingerprint of the policy that decided ``ask``; send it back with the answer."""
    created: float
    """When the call started waiting (seconds since the epoch)."""
    expires: float
    """When it is denied if nobody answers (seconds since the epoch)."""


class ApprovalList(_Response):
    """``GET /api/approvals``: the approvals waiting now, oldest first."""

    approvals: list[ApprovalView]


class ApprovalAnswerRequest(_Request):
    """``POST /api/approvals/{id}``: a person's answer."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"answer": "allow_once"}]})

    answer: Literal["allow_once", "allow_session", "deny"]
    """Allow this call, allow this tool for the rest of the session, or deny."""
    digest: Annotated[str, Field(pattern=_DIGEST)] | None = None
    """The ``arguments_digest`` that was shown; when given it must still match (else 409
    ``approval_stale``)."""
    policy: Annotated[str, Field(pattern=_DIGEST)] | None = None
    """The ``policy`` that was shown; when given it must still match (else 409 ``approval_stale``)."""


class ApprovalDecided(_Response):
    """The answer was handed to the waiting call."""

    id: str
    answer: Literal["allow_once", "allow_session", "deny"]
