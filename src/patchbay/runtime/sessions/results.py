"""Reload results, tickets and the per-caller collector of
:class:`~patchbay.runtime.sessions.SessionHost` (the API answers a committed change with
``runtime_reload_failed`` and the affected sessions)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio

from patchbay.core.errors import ErrorCode

__all__ = [
    "ProjectionOutcome",
    "ReloadCollector",
    "ReloadResult",
    "ReloadStatus",
    "ReloadTicket",
    "SessionReload",
    "collect_reloads",
    "current_collector",
]

ReloadStatus = Literal["reloaded", "pending", "failed"]


@dataclass(frozen=True, slots=True)
class SessionReload:
    """What one reload did to one session.

    Attributes:
        session_id / project_id / workspace: the session and where it runs.
        status: ``reloaded`` (rebuilt from the new snapshot), ``pending`` (calls in flight, or
            slower than ``reload_timeout``: it rebuilds when they end), ``failed`` (no runtime now).
        error: ``{"code", "message", "details"}`` of the failure when ``failed``, else None.
    """

    session_id: str
    project_id: str
    workspace: str
    status: ReloadStatus
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"session_id", "project_id", "workspace", "status", "error"}``."""
        return {
            "session_id": self.session_id,
            "project_id": self.project_id,
            "workspace": self.workspace,
            "status": self.status,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """The outcome of a reload: the affected sessions, in session order."""

    sessions: tuple[SessionReload, ...] = ()

    @property
    def failed(self) -> tuple[SessionReload, ...]:
        """The sessions left without a runtime (``runtime_reload_failed``)."""
        return tuple(s for s in self.sessions if s.status == "failed")

    @property
    def pending(self) -> tuple[SessionReload, ...]:
        """The sessions that rebuild when their calls in flight end (``restart_pending``)."""
        return tuple(s for s in self.sessions if s.status == "pending")

    @property
    def reloaded(self) -> tuple[SessionReload, ...]:
        """The sessions rebuilt from the new snapshot."""
        return tuple(s for s in self.sessions if s.status == "reloaded")

    @property
    def code(self) -> ErrorCode | None:
        """``runtime_reload_failed`` when any session failed (the change is saved all the same)."""
        return ErrorCode.RUNTIME_RELOAD_FAILED if self.failed else None

    def merged(self, later: ReloadResult) -> ReloadResult:
        """This result updated by a later one: a session's later status wins."""
        by_id = {s.session_id: s for s in self.sessions}
        by_id.update({s.session_id: s for s in later.sessions})
        return ReloadResult(tuple(by_id.values()))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form: ``{"code", "sessions": [...]}`` (ids, paths, statuses; nothing secret)."""
        return {"code": str(self.code) if self.code else None, "sessions": [s.to_dict() for s in self.sessions]}


class ReloadTicket:
    """A reload scheduled by :meth:`SessionHost.committed`; its :class:`ReloadResult` comes later."""

    def __init__(self) -> None:
        self._future: concurrent.futures.Future[ReloadResult] = concurrent.futures.Future()
        self._loop_thread: int | None = None

    def _resolve(self, result: ReloadResult) -> None:
        if not self._future.done():
            self._future.set_result(result)

    def done(self) -> bool:
        """Whether the reload is over."""
        return self._future.done()

    def result(self, timeout: float | None = None) -> ReloadResult:
        """Block until the reload is over (from any thread but the host's event loop thread).

        Raises:
            RuntimeError: called on the host's event loop thread (it would deadlock; ``await wait()``).
            TimeoutError: not over within ``timeout`` seconds.
        """
        if not self._future.done() and self._loop_thread == threading.get_ident():
            raise RuntimeError("ReloadTicket.result() would block the event loop; use `await ticket.wait()`")
        return self._future.result(timeout)

    async def wait(self) -> ReloadResult:
        """Wait for the reload on the host's event loop thread."""
        if not self._future.done():
            event = anyio.Event()
            self._future.add_done_callback(lambda _: event.set())  # resolved on the loop's thread
            await event.wait()
        return self._future.result()


@dataclass
class ReloadCollector:
    """The tickets of the reloads the mutations inside one :func:`collect_reloads` block caused."""

    tickets: list[ReloadTicket] = field(default_factory=list)

    def result(self, timeout: float | None = None) -> ReloadResult:
        """Every ticket's result merged in order (empty when nothing reloaded); blocks like
        :meth:`ReloadTicket.result` (not on the host's event loop thread)."""
        outcome = ReloadResult()
        for ticket in self.tickets:
            outcome = outcome.merged(ticket.result(timeout))
        return outcome

    async def wait(self) -> ReloadResult:
        """Like :meth:`result`, awaited on the host's event loop thread."""
        outcome = ReloadResult()
        for ticket in self.tickets:
            outcome = outcome.merged(await ticket.wait())
        return outcome


_COLLECTOR: contextvars.ContextVar[ReloadCollector | None] = contextvars.ContextVar(
    "patchbay_reload_collector", default=None
)


@contextlib.contextmanager
def collect_reloads() -> Iterator[ReloadCollector]:
    """Collect the reload tickets of the committed mutations made inside the block.

    The service calls its listeners synchronously in the caller's thread and context, so the
    collector sees exactly this caller's mutations, even with other requests running at once.
    """
    collector = ReloadCollector()
    token = _COLLECTOR.set(collector)
    try:
        yield collector
    finally:
        _COLLECTOR.reset(token)


class _WorkspaceOutcome(Protocol):
    @property
    def project_id(self) -> str: ...
    @property
    def workspace(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def code(self) -> str | None: ...
    @property
    def message(self) -> str: ...


class ProjectionOutcome(Protocol):
    """What :meth:`SessionHost.committed` reads of the control plane's projection report."""

    @property
    def workspaces(self) -> Sequence[_WorkspaceOutcome]: ...
    @property
    def error(self) -> dict[str, Any] | None: ...


def current_collector() -> ReloadCollector | None:
    """The collector of the innermost :func:`collect_reloads` block of this context, if any."""
    return _COLLECTOR.get()
