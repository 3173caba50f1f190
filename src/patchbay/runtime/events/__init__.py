"""The session event log: writing it, and reading it back.

* :mod:`~patchbay.runtime.events.log` - ``EventLog``: the append-only JSONL log of one session.
* :mod:`~patchbay.runtime.events.reading` - ``SessionLogs``: pages and summaries of the logs.

Design: docs/event-log.md
"""

__all__ = ["MAX_PAGE"]

MAX_PAGE = 1000
"""The most events (or sessions) one read of the logs returns
(:meth:`~patchbay.runtime.events.reading.SessionLogs.page`, ``recent``). Here rather than in
``reading`` so the CLI can name it in its options without loading the log reader."""
