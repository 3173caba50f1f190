"""SessionHost: long-lived workspace runtimes, and their reload after a committed change.

A host process (``patchbay serve``, the gateway, an embedding agent) keeps one :class:`Runtime` per
*session* of one workspace. :meth:`SessionHost.reload` rebuilds the sessions a committed change
affects (a busy one when its last call ends); a session whose rebuild failed serves no runtime and
its calls fail with ``mcp_server_unavailable`` (``details["code"] == "runtime_reload_failed"``).
:meth:`SessionHost.committed` is a ``ConnectorService.on_committed`` listener; a caller that wants
the outcome of its own mutations wraps them in :func:`collect_reloads`::

    service.on_committed(host.committed)                    # once, when the host starts
    with collect_reloads() as reloads:                      # per request (worker thread)
        service.update_settings("time", exclude_tools=["convert_time"])
    outcome = reloads.result()          # or: await reloads.wait() on the event loop's thread
    if outcome.code:                    # "runtime_reload_failed": saved, but sessions failed
        ...

Closing a session or the host exits its runtimes: no server process is left behind.

Design: docs/runtime.md
"""

from patchbay.runtime.sessions.host import (
    CLOSE_GRACE,
    RELOAD_TIMEOUT,
    ConfigLoader,
    ProjectResolver,
    SessionHost,
    SessionInfo,
    SessionState,
    StateVersion,
)
from patchbay.runtime.sessions.results import (
    ProjectionOutcome,
    ReloadCollector,
    ReloadResult,
    ReloadStatus,
    ReloadTicket,
    SessionReload,
    collect_reloads,
)

__all__ = [
    "CLOSE_GRACE",
    "RELOAD_TIMEOUT",
    "ConfigLoader",
    "ProjectResolver",
    "ProjectionOutcome",
    "ReloadCollector",
    "ReloadResult",
    "ReloadStatus",
    "ReloadTicket",
    "SessionHost",
    "SessionInfo",
    "SessionReload",
    "SessionState",
    "StateVersion",
    "collect_reloads",
]
