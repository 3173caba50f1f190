"""Counting a connection's crashes and deciding what follows.

:class:`CrashPolicy` is a mixin of :class:`~patchbay.runtime.connection.ServerConnection` (whose
module docstring states the restart policy): crash ``n`` sets the state to ``restarting`` while
``n <= max_restarts`` (and restarts are enabled), else ``permanently_failed``; the calls in flight
learn their reason (``mcp_server_restarted`` at crash 1, ``mcp_server_unstable`` later,
``mcp_server_unavailable`` when the first crash is already final); the owner task then emits
``mcp.server.crashed`` and, when final, ``mcp.server.permanently_failed`` and withdraws the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from patchbay.core.errors import ErrorCode, FailureReason

if TYPE_CHECKING:
    import anyio

    from patchbay.core.models import RuntimeOptions, ToolSummary
    from patchbay.runtime.connection import ConnectionState

__all__ = ["CrashPolicy"]


class CrashPolicy:
    """Crash counting for a connection; the state below is owned by ``ServerConnection``."""

    if TYPE_CHECKING:  # set by ServerConnection.__init__ and its owner task
        name: str
        options: RuntimeOptions
        crashes: int
        failure: tuple[ErrorCode, str] | None
        _state: ConnectionState
        _crash_limit: str | None
        _stderr_tail: str
        _generation: int
        _stopping: bool
        _lost: bool
        _wake: anyio.Event
        _lost_reasons: dict[int, FailureReason]
        _unresponsive: bool

        def _emit(self, type: str, payload: dict[str, Any]) -> None: ...
        def _catalog(self, tools: dict[str, ToolSummary] | None) -> None: ...

    def _count_crash(self, message: str) -> FailureReason:
        """Count one crash and decide what follows it; returns the in-flight calls' reason."""
        self.crashes += 1
        policy = self.options.restart
        will_restart = policy.enabled and self.crashes <= policy.max_restarts
        if self.crashes == 1:
            reason = FailureReason.MCP_SERVER_RESTARTED if will_restart else FailureReason.MCP_SERVER_UNAVAILABLE
        else:
            reason = FailureReason.MCP_SERVER_UNSTABLE
        self.failure = (ErrorCode.SERVER_CLOSED, message)
        self._state = "restarting" if will_restart else "permanently_failed"
        self._crash_limit = None
        return reason

    def _mark_lost(self, generation: int, message: str) -> FailureReason:
        """The connection of ``generation`` died; the first to notice counts the crash.

        Synchronous, so a call that saw the connection close learns its reason at once.
        """
        if generation in self._lost_reasons:
            return self._lost_reasons[generation]
        if generation != self._generation or self._state != "connected" or self._stopping:
            return FailureReason.MCP_SERVER_UNAVAILABLE
        reason = self._lost_reasons[generation] = self._count_crash(message)
        self._lost = True
        self._wake.set()
        return reason

    def _after_crash(self) -> None:
        payload: dict[str, Any] = {
            "server": self.name,
            "crashCount": self.crashes,
            "code": str(self.failure[0] if self.failure else ErrorCode.SERVER_CLOSED),
            "willRestart": self._state == "restarting",
        }
        if self._unresponsive:  # it stopped answering rather than exiting (RequestExchange._timed_out)
            payload["reason"] = "unresponsive"
            self._unresponsive = False
        if self._crash_limit:
            payload["limit"] = self._crash_limit
        if self._stderr_tail:
            payload["stderrTail"] = self._stderr_tail[-500:]
        self._emit("mcp.server.crashed", payload)
        if self._state == "permanently_failed":
            self._emit(
                "mcp.server.permanently_failed",
                {"server": self.name, "crashCount": self.crashes, "restarts": self.crashes - 1},
            )
            self._catalog(None)
