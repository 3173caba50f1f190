"""SessionHost: long-lived workspace runtimes, and their reload after a committed change.

A host process (``patchbay serve``, the gateway, an embedding agent) keeps one :class:`Runtime`
per *session*; each session belongs to one workspace and loads only that workspace's projected
snapshot: the control plane's projection in memory when the host is given a loader (``serve`` does),
else the workspace file, verified with the data home's key
(:func:`~patchbay.runtime.snapshot.load_snapshot`). The session id is the runtime's session id
(``ses_…``), so one event log spans every rebuild of a session.

**Changes from other processes**: with a ``state_version`` reader (the store's change counter),
each call first checks that the session's runtime was built after the last committed change of
any process; if not, the session is rebuilt as a reload would rebuild it (the call waits for it,
a failed rebuild fails closed), so a deny set by the CLI or another ``serve`` applies to the
next call.

**One owner task per session** (the actor pattern of :mod:`patchbay.runtime.connection`): a
runtime's task group must be entered and exited in the same task, so each session's runtime is
built, entered, and exited by one task in the host's task group. Calls run in the caller's task
on the entered runtime (a runtime is safe for concurrent calls).

**Reload** (:meth:`SessionHost.reload`). After a mutation commits and its workspaces are
re-projected, each affected session is asked to rebuild from its snapshot:

* *idle* (no call in flight): it rebuilds at once — the old runtime is exited (its servers stop),
  the snapshot is loaded again, and a new runtime is entered; :meth:`reload` waits for it
  (at most ``reload_timeout`` seconds) and reports ``reloaded`` or ``failed``;
* *busy*: it is marked ``restart_pending`` and reported ``pending``; its calls in flight are not
  interrupted and complete on the old runtime; it rebuilds when the last of them ends. Calls made
  while a rebuild is pending wait for it, so they see the new configuration;
* a *failed* rebuild (the snapshot is missing, unreadable, written for another project, names an
  invalid option; or the committed change could not be projected into its workspace, which would
  leave a stale snapshot) is reported ``failed`` with the error. **The session then serves no
  runtime** (fail closed): keeping the old one would keep serving tools, servers and credentials the
  committed change may have denied, disabled or revoked (DESIGN.md "Layers": the tools an agent can
  call are exactly what the control plane projected; the stricter rule wins). Its calls fail with
  ``mcp_server_unavailable`` (``details["code"] == "runtime_reload_failed"``) until a later reload
  succeeds (the next committed change re-projects and reloads it; or call :meth:`reload`), or it is
  closed. Nothing is rolled back: the database, credential store and OAuth writes stand.

:class:`ReloadResult` names the affected sessions with their status, and carries the stable code
``runtime_reload_failed`` when any failed, so an API can answer a committed mutation with success
plus that code and the sessions. A rebuilt runtime starts fresh: "allow for this session" approvals
and connections of the old one are not carried over.

**The hook**: :meth:`SessionHost.committed` has the shape of a
``ConnectorService.on_committed`` listener (``listener(project_id, projection_report)``). It never
blocks and never raises, from the event loop's thread or any other: it schedules the reload on
the host and returns a :class:`ReloadTicket`. A caller that wants the outcome of the mutations it
made wraps them in :func:`collect_reloads`::

    service.on_committed(host.committed)                    # once, when the host starts
    with collect_reloads() as reloads:                      # per request (worker thread)
        service.update_settings("time", exclude_tools=["convert_time"])
    outcome = reloads.result()          # or: await reloads.wait() on the event loop's thread
    if outcome.code:                    # "runtime_reload_failed": saved, but sessions failed
        ...

Closing a session or the host exits its runtimes: no server process (nor its process group) is
left behind.
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
