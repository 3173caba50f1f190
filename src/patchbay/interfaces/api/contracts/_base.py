"""The base classes, the error shape and the runtime reload report shared by every contract."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ErrorBody", "ErrorResponse", "RuntimeReload", "SessionReloadView"]


class _Request(BaseModel):
    # strict: a JSON 0 is no boolean and "5" no number, as the OpenAPI document says.
    model_config = ConfigDict(extra="forbid", strict=True)


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors -----------------------------------------------------------------------------------


class ErrorBody(_Response):
    """One error: front ends switch on ``code``, never on ``message`` (DESIGN.md "Stable error codes")."""

    code: str
    """``validation_error`` (422), ``not_found`` (404), ``revision_conflict`` (409),
    ``builtin_connector`` (403), ``canonical_state_unavailable`` (503), ``origin_refused`` (403),
    ``method_not_allowed`` (405), ``unknown`` (500); a tool call's failure reason
    (``permission_denied``, ``approval_unavailable``, ``unknown_tool``, ``tool_error``, ...; see
    :mod:`patchbay.interfaces.api.errors`)."""
    message: str
    """One human sentence, redacted."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Small context: ``field`` for a validation error, ``expected``/``actual`` for a conflict."""


class ErrorResponse(_Response):
    """The body of every non-2xx answer."""

    error: ErrorBody


# -- runtime reload ----------------------------------------------------------


class SessionReloadView(_Response):
    """What a committed change did to one open session (``patchbay.runtime.sessions.SessionReload``)."""

    session_id: str
    project_id: str
    workspace: str
    status: Literal["reloaded", "pending", "failed"]
    """``reloaded``: rebuilt from the new snapshot; ``pending``: it had calls in flight, which
    finish on the old runtime, and it rebuilds when they end (``restart_pending``); ``failed``: the
    rebuild failed and the session serves no runtime until a later reload succeeds."""
    error: ErrorBody | None
    """Why the rebuild failed (``failed`` only)."""


class RuntimeReload(_Response):
    """How the sessions of ``patchbay serve`` took a committed change.

    Every successful mutation carries it. The change is saved whatever it says; ``code`` is
    ``runtime_reload_failed`` when some session could not be rebuilt (partial success: nothing is
    rolled back), else null. ``sessions`` lists the sessions the change affected (every session for
    a global change, the project's for a project grant); empty when none is open or nothing was
    committed.
    """

    code: Literal["runtime_reload_failed"] | None
    sessions: list[SessionReloadView]
