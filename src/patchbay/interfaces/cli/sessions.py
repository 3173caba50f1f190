"""``patchbay sessions``: the recent sessions of this data home, open or closed, newest first.

Each is read from its event log's ends and the metadata record beside it
(:class:`~patchbay.runtime.events.reading.SessionLogs`), never from the whole log.
"""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.table import Table
from rich.text import Text

from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, handle_errors, out_console, state
from patchbay.runtime.events import MAX_PAGE

__all__ = ["sessions"]


@handle_errors
def sessions(
    limit: int = typer.Option(20, "--limit", min=1, max=MAX_PAGE, help="Show at most this many sessions."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List recent sessions, newest first: id, workspace, start, tool calls, last event.

    Show one session's events with: patchbay events SESSION_ID.
    """
    from patchbay.runtime.events.backend import session_logs  # loaded only when this command runs

    recent = session_logs(state.settings).recent(limit=limit)
    if as_json:
        emit_json({"sessions": [asdict(s) for s in recent]})
        return
    if not recent:
        out_console.print(Text("no sessions yet; a governed call starts one: patchbay call mcp.NAME.TOOL '{...}'"))
        return
    table = Table("session", "workspace", "started", "calls", "events", "last event")
    for s in recent:
        table.add_row(
            s.session_id,
            s.workspace or "-",
            s.started_at or "-",
            str(s.calls),
            str(s.events),
            s.last_event_at or "-",
        )
    out_console.print(table)
