"""A hosted session's record and its states (see :mod:`patchbay.runtime.sessions`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from patchbay.core.errors import PatchbayError
from patchbay.core.models import Project
from patchbay.runtime.runtime import Runtime

__all__ = ["SessionInfo", "SessionState"]

SessionState = Literal["building", "ready", "restart_pending", "failed", "closing"]
"""``building``: the runtime is being (re)built, calls wait; ``ready``: serving; ``restart_pending``:
serving its calls in flight, rebuilds when they end, new calls wait; ``failed``: the last build
failed, no runtime, calls fail; ``closing``: being closed."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as :meth:`SessionHost.sessions` shows it.

    Attributes:
        builds: how many times a runtime was built for it (1 after :meth:`SessionHost.open`).
        in_flight: calls running on its runtime now.
        error: ``{"code", "message", "details"}`` of the last failed build while ``failed``.
        warnings: the servers its runtime left out, each ``{"server", "field", "message"}``
            (:attr:`~patchbay.core.models.RuntimeConfig.rejected`); the others run.
    """

    session_id: str
    project_id: str
    workspace: str
    state: SessionState
    builds: int
    in_flight: int
    error: dict[str, Any] | None
    warnings: tuple[dict[str, str], ...] = ()


@dataclass
class _Session:
    id: str
    project: Project
    options: dict[str, Any]
    requested: int = 1  # the build generation wanted (1: the first build)
    attempted: int = 0  # the generation the last finished build attempt covered
    last_error: PatchbayError | None = None  # that attempt's failure, None when it succeeded
    forced: PatchbayError | None = None  # the snapshot is stale: fail the next build with this
    built_version: int = -1  # the state counter read when the last build attempt started
    builds: int = 0
    runtime: Runtime | None = None
    in_flight: int = 0
    closing: bool = False
    scopes: set[anyio.CancelScope] = field(default_factory=set)
    changed: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)

    @property
    def state(self) -> SessionState:
        if self.closing:
            return "closing"
        if self.requested > self.attempted:
            return "restart_pending" if self.in_flight else "building"
        return "ready" if self.runtime is not None else "failed"

    def notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self.changed.wait()

    def info(self) -> SessionInfo:
        error = self.last_error.to_dict() if self.last_error is not None and self.runtime is None else None
        rejected = self.runtime.config.rejected if self.runtime is not None else ()
        warnings = tuple({"server": r.name, "field": r.field, "message": r.message} for r in rejected)
        return SessionInfo(
            self.id,
            self.project.project_id,
            self.project.path,
            self.state,
            self.builds,
            self.in_flight,
            error,
            warnings,
        )
