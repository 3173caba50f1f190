"""The egress audit: one metadata-only JSON line per outbound operation.

``<home>/egress-audit.jsonl`` (mode 0600, append-only) gets one line per probe, connect, tool call
and OAuth operation of a connector, and one per HTTP request a built-in connector's own process
sends or has refused (``mcp_builtin_request``, with the request's origin)::

    {"note": "mcp_tool_call", "connector_id": "c_…", "origin": "https://mcp.example.com:443",
     "time": "2026-09-08T10:00:00.123Z", "project_id": "p_…", "approved": true}

``note`` is one of :data:`NOTES`; ``origin`` is ``scheme://host:port`` only (``null``, with
``"runtime_call_audit": "unavailable"``, for stdio and socket connectors); ``approved`` is false
when the egress guard refused the operation. Nothing else is ever written: no path, query, body,
header value, argument, result or secret. :class:`EgressAudit` appends (in a writer thread with
``background=True``; :meth:`EgressAudit.flush` waits for what was queued); :func:`read_audit`
reads the file back. A failed append is logged and does not fail the operation it records.

Design: docs/egress.md
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any, Literal, get_args

from patchbay.adapters.transports.egress import origin_of
from patchbay.core.models import ConnectorTarget, HttpTarget

__all__ = [
    "AUDIT_FILE",
    "BACKGROUND_QUEUE_LINES",
    "NOTES",
    "EgressAudit",
    "EgressNote",
    "audit_path",
    "read_audit",
    "target_origin",
]

logger = logging.getLogger(__name__)

AUDIT_FILE = "egress-audit.jsonl"
EgressNote = Literal[
    "mcp_probe", "mcp_connect", "mcp_tool_call", "mcp_oauth_discovery", "mcp_oauth_token", "mcp_builtin_request"
]
NOTES: frozenset[str] = frozenset(get_args(EgressNote))
"""Every operation type the egress audit records."""

BACKGROUND_QUEUE_LINES = 4096
"""Lines a background writer holds before a caller waits for room."""
_INTERVAL_SECONDS = 0.05  # how often a writer thread takes what was queued
_IDLE_SECONDS = 1.0  # a writer thread with nothing to do for this long closes its file and ends

# Exactly what origin_of() produces for a host url_host_problem() accepts (``_``: Docker names).
_ORIGIN = re.compile(r"https?://(?:[a-z0-9._-]+|\[[0-9a-f:.]+\]):\d{1,5}")


def audit_path(home: Path) -> Path:
    """``<home>/egress-audit.jsonl``."""
    return Path(home) / AUDIT_FILE


def target_origin(target: ConnectorTarget) -> str | None:
    """The origin a connector's traffic goes to: ``scheme://host:port`` for HTTP/SSE, else None.

    Raises:
        EgressBlocked: (``network_blocked``) an HTTP target URL that is not absolute http(s) or
            carries userinfo.
    """
    if isinstance(target, HttpTarget):
        return origin_of(target.url)
    return None


_second: tuple[int, str] = (-1, "")  # the last whole second formatted: one strftime per second


def _timestamp(seconds: float) -> str:
    global _second
    ms = int(seconds * 1000)
    whole = ms // 1000
    second = _second  # read once: the writer thread and callers both format
    if second[0] != whole:
        second = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{second[1]}.{ms % 1000:03d}Z"


class EgressAudit:
    """Appends egress audit lines to one file.

    Usage::

        audit = EgressAudit(audit_path(settings.home))
        audit.record("mcp_probe", connector_id=c.connector_id, origin=target_origin(c.target),
                     project_id=project_id, approved=True)

    Args:
        path: the audit file (usually :func:`audit_path` of the data home).
        background: append through the file's background writer (see the module docstring);
            :meth:`record` then returns once the line is queued.
    """

    def __init__(self, path: Path, *, background: bool = False):
        self.path = Path(path)
        self._writer = _writer_for(self.path) if background else None
        # A connector's lines differ only in time and approval: the rest is rendered once.
        self._templates: dict[tuple[str, str, str | None, str | None], _Template] = {}

    def flush(self) -> None:
        """Wait until every line this process queued for the file is written (at once when
        appends are not in the background, or nothing is queued)."""
        if self._writer is not None:
            self._writer.flush()

    def record(
        self,
        note: EgressNote,
        *,
        connector_id: str,
        origin: str | None,
        project_id: str | None,
        approved: bool,
    ) -> bool:
        """Append one line; returns False (and logs a warning) when the file cannot be written.

        In the background, returns True once the line is queued; a failed append is logged by
        the writer.

        Args:
            note: the operation (:data:`NOTES`).
            connector_id: the connector's id.
            origin: ``scheme://host:port`` of an HTTP/SSE connector (:func:`target_origin`);
                None for stdio and socket connectors (the line then says
                ``"runtime_call_audit": "unavailable"``).
            project_id: the project the operation ran for, if known.
            approved: False when the egress guard refused a request of the operation.

        Raises:
            ValueError: an unknown ``note`` or an ``origin`` that is not exactly
                ``scheme://host:port`` (a programming error: nothing but metadata may reach this
                file).
        """
        key = (note, connector_id, origin, project_id)
        template = self._templates.get(key)
        if template is None:  # a key is only remembered once its note and origin passed
            if note not in NOTES:
                raise ValueError(f"unknown egress audit note {note!r}")
            if origin is not None and not _ORIGIN.fullmatch(origin):
                raise ValueError("an egress audit origin is scheme://host:port and nothing else")
            template = self._templates[key] = _template(note, connector_id, origin, project_id)
        if self._writer is not None:
            # Rendered by the writer thread: the caller's part is a tuple and a queue append.
            self._writer.put((template, time.time(), approved))
            return True
        data = _render(template, time.time(), approved)
        try:
            fd = _open(self.path)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            _warn(self.path, exc)
            return False
        return True


_Template = tuple[bytes, bytes, bytes, bytes]
_Entry = tuple[_Template, float, bool]  # a queued line: its template, its time (Unix s), approved


def _render(template: _Template, seconds: float, approved: bool) -> bytes:
    head, middle, true_tail, false_tail = template
    return b"".join((head, _timestamp(seconds).encode(), middle, true_tail if approved else false_tail))


def _template(
    note: str, connector_id: str, origin: str | None, project_id: str | None
) -> tuple[bytes, bytes, bytes, bytes]:
    """A line as ``head + time + middle + tail``, with the tail for ``approved`` true and false:
    byte for byte what ``json.dumps(line, separators=(",", ":"))`` gives, rendered once."""
    dump = json.dumps
    head = f'{{"note":{dump(note)},"connector_id":{dump(connector_id)},"origin":{dump(origin)},"time":"'
    middle = f'","project_id":{dump(project_id)},"approved":'
    rest = ',"runtime_call_audit":"unavailable"}\n' if origin is None else "}\n"
    return head.encode(), middle.encode(), f"true{rest}".encode(), f"false{rest}".encode()


def _open(path: Path) -> int:
    """The audit file opened for appending (created 0600, tightened to 0600, never a symlink)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _warn(path: Path, exc: OSError) -> None:
    logger.warning("egress audit: cannot append to %s: %s", path, exc.strerror or type(exc).__name__)


class _BackgroundWriter:
    """Appends the lines queued for one file from one thread (see the module docstring).

    The thread wakes every :data:`_INTERVAL_SECONDS` (or at once for a flush or a full queue), so
    a caller never pays for waking it: a queued line costs an uncontended lock and an append.
    """

    def __init__(self, path: Path):
        self.path = path
        self._lines: collections.deque[_Entry] = collections.deque()
        self._changed = threading.Condition()
        self._queued = 0  # lines ever queued
        self._written = 0  # lines ever taken and written (or found unwritable)
        self._running = False

    def put(self, entry: _Entry) -> None:
        with self._changed:
            while len(self._lines) >= BACKGROUND_QUEUE_LINES:  # back pressure, never a loss
                self._changed.notify_all()
                self._changed.wait()
            self._lines.append(entry)
            self._queued += 1
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="patchbay-egress-audit", daemon=True).start()

    def flush(self) -> None:
        with self._changed:
            target = self._queued
            self._changed.notify_all()  # the writer takes the lines now rather than at its interval
            while self._written < target:
                self._changed.wait()

    def _run(self) -> None:
        fd: int | None = None
        idle_since = time.monotonic()
        try:
            while True:
                with self._changed:
                    if not self._lines:
                        self._changed.wait(timeout=_INTERVAL_SECONDS)
                    if not self._lines:
                        if time.monotonic() - idle_since >= _IDLE_SECONDS:
                            self._running = False  # a later put starts a new thread
                            return
                        continue
                    batch = list(self._lines)
                    self._lines.clear()
                    self._changed.notify_all()  # room for callers waiting on a full queue
                try:
                    if fd is None:
                        fd = _open(self.path)
                    os.write(fd, b"".join([_render(*entry) for entry in batch]))
                except OSError as exc:
                    _warn(self.path, exc)
                    if fd is not None:
                        os.close(fd)
                        fd = None
                idle_since = time.monotonic()
                with self._changed:
                    self._written += len(batch)
                    self._changed.notify_all()
        finally:
            if fd is not None:
                os.close(fd)
            with self._changed:
                if self._running:  # an unexpected error ended the thread: never leave a flush waiting
                    logger.error("egress audit: the writer of %s stopped; %d lines lost", self.path, len(self._lines))
                    self._running = False
                    self._lines.clear()
                    self._written = self._queued
                    self._changed.notify_all()


_writers: dict[Path, _BackgroundWriter] = {}
_writers_lock = threading.Lock()


def _writer_for(path: Path) -> _BackgroundWriter:
    with _writers_lock:
        writer = _writers.get(path)
        if writer is None:
            writer = _writers[path] = _BackgroundWriter(path)
        return writer


@atexit.register
def _flush_all() -> None:
    with _writers_lock:
        writers = list(_writers.values())
    for writer in writers:
        writer.flush()


def read_audit(path: Path) -> list[dict[str, Any]]:
    """Every complete line of an egress audit file, parsed ([] when it does not exist)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]
