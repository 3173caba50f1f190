"""The session event log: writing it, and reading it back.

* :mod:`~patchbay.runtime.events.log` - ``EventLog``: the append-only JSONL log of one session.
* :mod:`~patchbay.runtime.events.reading` - ``SessionLogs``: pages and summaries of the logs.

Design: docs/event-log.md
"""
