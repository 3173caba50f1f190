"""SessionHost: long-lived workspace runtimes, and their reload after a committed change.

A host process (``patchbay serve``, the gateway, an embedding agent) keeps one :class:`Runtime`
per *session*; each session belongs to one workspace and loads only that workspace's projected
snapshot: the control plane's projection in memory when the host is given a loader (``serve`` does),
else the workspace file, verified with the data home's key
(:func:`~patchbay.runtime.snapshot.load_snapshot`). The session id is the runtime's session id
(``ses_…``), so one event log spans every rebuild of a session. Each session's runtime is built,
entered and exited by one task of the host; calls run in the caller's task.

:meth:`SessionHost.reload` rebuilds the sessions a committed change affects: an *idle* one at once
(waiting at most ``reload_timeout`` seconds); a *busy* one is marked ``restart_pending`` and rebuilt
when its last call ends, its calls in flight complete on the old runtime and calls made meanwhile
wait for the rebuild. A *failed* rebuild leaves the session serving no runtime (fail closed): its
calls fail with ``mcp_server_unavailable`` (``details["code"] == "runtime_reload_failed"``) until a
later reload succeeds or it is closed. Nothing is rolled back. With a ``state_version`` reader (the
store's change counter) a change committed by any process rebuilds a session before its next call.
:class:`ReloadResult` names the affected sessions with their status and carries the stable code
``runtime_reload_failed`` when any failed. A rebuilt runtime starts fresh: "allow for this session"
approvals and connections of the old one are not carried over.

:meth:`SessionHost.committed` is a ``ConnectorService.on_committed`` listener
(``listener(project_id, projection_report)``) that never blocks and never raises; it schedules the
reload and returns a :class:`ReloadTicket`. A caller that wants the outcome of the mutations it
made wraps them in :func:`collect_reloads`::

    service.on_committed(host.committed)                    # once, when the host starts
    with collect_reloads() as reloads:                      # per request (worker thread)
        service.update_settings("time", exclude_tools=["convert_time"])
    outcome = reloads.result()          # or: await reloads.wait() on the event loop's thread
    if outcome.code:                    # "runtime_reload_failed": saved, but sessions failed
        ...

Closing a session or the host exits its runtimes: no server process (nor its process group) is
left behind.

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
