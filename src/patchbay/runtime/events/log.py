"""The session event log: append-only JSONL, one file per session (DESIGN.md "Events").

Each line is one event, ``{"seq", "type", "ts", "sessionId", "payload"}``; ``seq`` is strictly
increasing per session from 1 and payloads are redacted before they are written. :class:`EventLog`
appends (:meth:`~EventLog.append`, :meth:`~EventLog.append_json` for the call path's queued
events, written by :meth:`~EventLog.run_writer`); every queued line is on disk once
:meth:`~EventLog.flush`, :meth:`~EventLog.stop_writer` or :meth:`~EventLog.close` returns. One
writer per file (an advisory ``flock``); ``<session_id>.meta.json`` beside the log describes the
session for listings.

Design: docs/event-log.md
"""

from __future__ import annotations

import contextlib
import json
import os
import os.path
import re
import secrets
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import anyio

from patchbay.adapters.atomic import replace_file
from patchbay.core.errors import ErrorCode, PatchbayError, ValidationError
from patchbay.core.redaction import REDACTED, is_secret_key, redact_text, registry_version

try:  # pragma: no cover - POSIX everywhere the SDK's stdio transport runs
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CALL_EVENT",
    "EVENT_TYPES",
    "EventLog",
    "Redacted",
    "MAX_PENDING",
    "encode_json",
    "flush_open_log",
    "new_session_id",
    "read_events",
    "session_log_path",
    "session_meta_path",
]

EVENT_TYPES: frozenset[str] = frozenset(
    {
        "user.message",
        "model.tool_call_requested",
        "tool.ambiguous_call",
        "permission.requested",
        "permission.resolved",
        "mcp.call.started",
        "mcp.call.completed",
        "mcp.call.failed",
        "tool.started",
        "tool.completed",
        "tool.failed",
        "mcp.server.connected",
        "mcp.server.crashed",
        "mcp.server.restarting",
        "mcp.server.permanently_failed",
        "mcp.server.shutdown",
        "mcp.server.tools_changed",
        "mcp.resource.requested",
        "mcp.resource.fetched",
        "mcp.prompt.invoked",
        "mcp.prompt.expanded",
        "context.built",
        "content.screened",
        "turn.completed",
    }
)
"""Every event type a session log may hold (DESIGN.md "Events")."""

CALL_EVENT = "model.tool_call_requested"
"""The event that starts every tool call (allowed or not): what a session's call count counts."""

_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
# The C encoder made once (JSONEncoder.encode builds a new one per call): about twice as fast.
# No circular check: payloads are JSON-like values that redaction has already walked.
# typeshed does not declare the private ``c_make_encoder`` (None without the C accelerator).
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = (
    _MAKE_ENCODER(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    if _MAKE_ENCODER is not None
    else None
)


def encode_json(value: Any) -> str:
    """Compact JSON (no spaces, UTF-8 kept, non-JSON leaves as ``str``), as written to the log."""
    return "".join(_C_ENCODE(value, 0)) if _C_ENCODE is not None else _ENCODER.encode(value)


MAX_PENDING = 4096
"""The most lines an :class:`EventLog` holds in memory for its background writer."""

# Every open log by its absolute path, so in-process readers can have it flushed first.
_OPEN_LOGS: weakref.WeakValueDictionary[str, EventLog] = weakref.WeakValueDictionary()


def flush_open_log(path: Path) -> None:
    """Write what the background writer of the open :class:`EventLog` of ``path`` in this process
    still holds, if there is one: what a reader of the file calls first. (Lines deferred without a
    writer stay with the caller that deferred them; see :meth:`EventLog.append`.)"""
    log = _OPEN_LOGS.get(os.path.abspath(path))
    if log is not None and log.writer_running:
        log.flush()


_CACHE_MAX_ENTRIES = 4096
_CACHE_MAX_CHARS = 256
_EMPTY: tuple[object, ...] = (None, "", {}, [])


def new_session_id() -> str:
    """A fresh session id: ``ses_`` + 16 hex digits (valid for :func:`session_log_path`)."""
    return f"ses_{secrets.token_hex(8)}"


def session_log_path(sessions_dir: Path, session_id: str) -> Path:
    """``<sessions_dir>/<session_id>.jsonl``.

    Raises:
        ValidationError: code ``validation_error`` unless ``session_id`` matches
            ``^[A-Za-z0-9_-]{1,64}$`` (it becomes a file name, so no separators or dots).
    """
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ValidationError(
            f"{session_id!r} is not a session ID: use up to 64 letters, digits, '_' or '-'",
            details={"field": "session_id"},
        )
    return Path(sessions_dir) / f"{session_id}.jsonl"


def session_meta_path(log_path: Path) -> Path:
    """The metadata record beside a session log: ``<session_id>.meta.json``."""
    path = Path(log_path)
    return path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every event in a session log, in file order; ``[]`` when the file does not exist.

    A torn last line (a crash mid-write) is skipped.

    Raises:
        PatchbayError: ``validation_error`` when a line other than the last is not valid JSON.
    """
    flush_open_log(path)
    try:
        lines = Path(path).read_bytes().split(b"\n")
    except FileNotFoundError:
        return []
    events: list[dict[str, Any]] = []
    last = len(lines) - 1
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            if index == last:
                break
            raise PatchbayError(
                f"{path}: line {index + 1} is not valid JSON", code=ErrorCode.VALIDATION_ERROR
            ) from None
    return events


def _scan_last_seq(path: Path) -> tuple[int, int | None]:
    """``(last seq, torn)`` of an existing log, reading from the end.

    ``torn`` is the length of the file without an unterminated last line (a crash mid-write), or
    None when the file ends with a newline.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0, None
    if size == 0:
        return 0, None
    torn: int | None = None
    with path.open("rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) != b"\n":
            # Where the unterminated last line starts: after the last newline, or at 0.
            position = size
            while position > 0 and torn is None:
                step = min(65536, position)
                position -= step
                handle.seek(position)
                index = handle.read(step).rfind(b"\n")
                if index >= 0:
                    torn = position + index + 1
            torn = torn or 0
        end = size if torn is None else torn
        position, carry = end, b""
        while position > 0:
            step = min(65536, position)
            position -= step
            handle.seek(position)
            lines = (handle.read(step) + carry).split(b"\n")
            # Unless we reached the start, the first piece may be the tail of an earlier line.
            carry = lines.pop(0) if position > 0 else b""
            for line in reversed(lines):
                if not line.strip():
                    continue
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    return int(json.loads(line)["seq"]), torn
    return 0, torn


_CALL_ID = re.compile(rb'"toolCallId":"tc_(\d+)"')


def _last_call_number(path: Path) -> int:
    """The highest ``tc_<n>`` in an existing log (read once, when a session is appended to)."""
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    return max((int(m.group(1)) for m in _CALL_ID.finditer(data)), default=0)


class Redacted(dict):  # type: ignore[type-arg]
    """A payload (or part of one) whose values are already redacted; ``append`` does not re-scan it.

    Either what :meth:`EventLog.redact` returned, or a dict the runtime builds from such parts plus
    values it generated itself (ids, numbers, fixed literals), which redaction leaves unchanged (a
    test pins that every payload the runtime writes is a fixed point of ``redact_value``). This is
    how one call's arguments are redacted once for the three events that carry them.
    """

    __slots__ = ()


class EventLog:
    """Append-only JSONL event log of one session.

    Usage::

        with EventLog(session_log_path(settings.sessions_dir, sid), sid) as log:
            log.append("tool.started", {"tool": "mcp.time.get_current_time", "toolCallId": "tc_1"})

    Args:
        path: the log file (created with mode 0600; its directory, when missing, with mode
            0700). Opened for appending at construction.
        session_id: written into every event as ``sessionId``.
        known_secrets: exact secret values to redact in addition to the pattern rules.
        metadata: what describes a new session in its metadata record (``workspace``,
            ``projectId``; JSON values, redacted); a continued session keeps the record it has.
        keep: identifiers (the session's connector names) an exact secret value never masks:
            the audit trail must say which server an event is about.

    Raises:
        PatchbayError: ``validation_error`` when another open ``EventLog`` (any process) is
            writing the same file.
    """

    def __init__(
        self,
        path: Path,
        session_id: str,
        *,
        known_secrets: tuple[str, ...] = (),
        metadata: dict[str, Any] | None = None,
        keep: tuple[str, ...] = (),
    ):
        self.path = Path(path)
        self._init_state(session_id, known_secrets, keep)
        if not self.path.parent.is_dir():  # the logs hold call arguments: only the owner may list them
            self.path.parent.parent.mkdir(parents=True, exist_ok=True)
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            self._claim(self._fd)
            self._seq, torn = _scan_last_seq(self.path)
            if torn is not None:
                # The fragment was never a complete event: drop it so the file stays valid JSONL.
                os.ftruncate(self._fd, torn)
            self._calls = 0
            self._meta = self._open_meta(metadata or {})
            self._tool_calls = _last_call_number(self.path) if self._seq else 0
            _OPEN_LOGS[os.path.abspath(self.path)] = self
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def _init_state(self, session_id: str, known_secrets: tuple[str, ...], keep: tuple[str, ...]) -> None:
        """The state every log keeps, whatever it writes to (the file, or a database table)."""
        self.session_id = session_id
        self._known_secrets = known_secrets
        self._keep = tuple(keep)
        self._lock = threading.Lock()
        self._text_cache: dict[str, str] = {}
        self._json_cache: dict[str, str] = {}
        self._registry_seen = registry_version()
        self._key_cache: dict[str, bool] = {}
        self._ts_second = -1
        self._ts_prefix = ""
        self._ts_ms = -1
        self._ts = ""
        self._session_json = json.dumps(session_id)
        # Appended, not yet written: (seq, type, unix ms, payload JSON), rendered when written.
        self._pending: list[tuple[int, str, int, str]] = []
        self._writer: int | None = None  # the thread whose event loop runs run_writer()
        self._wake: anyio.Event | None = None
        self._writer_stopped = False

    def _claim(self, fd: int) -> None:
        if fcntl is None:  # pragma: no cover
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PatchbayError(
                f"session {self.session_id} is already being written by another runtime",
                code=ErrorCode.VALIDATION_ERROR,
                details={"sessionId": self.session_id},
            ) from None
        except OSError:  # pragma: no cover - filesystems without flock: best effort
            pass

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    @property
    def seq(self) -> int:
        """The seq of the last event written (0 for an empty log)."""
        return self._seq

    def next_tool_call_id(self) -> str:
        """A new ``toolCallId``: ``tc_<n>`` for the session's n-th tool call (an appended log
        continues after the highest id already in it)."""
        with self._lock:
            self._tool_calls += 1
            return f"tc_{self._tool_calls}"

    @property
    def writer_running(self) -> bool:
        """Whether :meth:`run_writer` runs (appended call-path events may be queued)."""
        return self._writer is not None

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, type: str, payload: dict[str, Any] | None = None, *, defer: bool = False) -> int:
        """Redact ``payload`` and append one event; return its seq.

        Args:
            type: one of :data:`EVENT_TYPES`.
            payload: a JSON-like dict (non-JSON leaves are written with ``str``); parts that are
                :class:`Redacted` are not walked again.
            defer: keep the line in memory until the next non-deferred append, :meth:`flush`,
                :meth:`release` or :meth:`close`, which write every pending line in one
                ``write``. For an event that is followed by another before anything else happens.
                File order is always seq order.

        Not queued for the background writer: a non-deferred event is in the file when this
        returns.

        Raises:
            ValueError: unknown event type, or the log is closed.
        """
        return self._append(type, encode_json(self._redact(payload) if payload else {}), defer, queue=False)

    def append_json(self, type: str, payload_json: str, *, defer: bool = False) -> int:
        """Append one event whose payload is already redacted and rendered as a JSON object text.

        For the runtime's hot path, which renders the payloads of one call from parts redacted
        and encoded once (:meth:`redact`, :meth:`redact_json`) plus values it generated itself
        (ids, numbers, fixed literals). While the background writer of this thread's event loop
        runs (:meth:`run_writer`), the event is only queued for it; else ``defer`` is as in
        :meth:`append`.

        Raises:
            ValueError: unknown event type, or the log is closed.
        """
        return self._append(type, payload_json, defer, queue=True)

    def append_jsons(self, events: list[tuple[str, str]]) -> int:
        """:meth:`append_json` of each ``(type, payload_json)`` in turn, every one but the last
        deferred, in one operation (one lock, one queue append); returns the last seq.

        For the runs of events of one call that nothing else may come between. Nothing is
        appended when a type is unknown.

        Raises:
            ValueError: unknown event type, or the log is closed.
        """
        for type, _payload in events:
            if type not in EVENT_TYPES:
                raise ValueError(f"unknown event type {type!r}")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"event log {self.path} is closed")
            seq = self._seq
            ms = int(time.time() * 1000)
            pending = self._pending
            for type, payload_json in events:
                seq += 1
                if type == CALL_EVENT:
                    self._calls += 1
                pending.append((seq, type, ms, payload_json))
            self._seq = seq
            if self._writer == threading.get_ident() and len(pending) < MAX_PENDING:
                wake, self._wake = self._wake, None
                if wake is not None:
                    wake.set()
            else:
                self._write_pending()
        return seq

    def _append(self, type: str, payload_json: str, defer: bool, *, queue: bool) -> int:
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"event log {self.path} is closed")
            seq = self._seq = self._seq + 1
            if type == CALL_EVENT:
                self._calls += 1
            pending = self._pending
            pending.append((seq, type, int(time.time() * 1000), payload_json))
            if queue and self._writer == threading.get_ident() and len(pending) < MAX_PENDING:
                wake, self._wake = self._wake, None
                if wake is not None:
                    wake.set()
            elif not defer:
                self._write_pending()
        return seq

    def _write_pending(self) -> None:
        """Render and write every pending line in one ``write`` (the lock is held, the log open)."""
        assert self._fd is not None
        parts = []
        session = self._session_json
        for seq, type, ms, payload_json in self._pending:
            ts = self._ts if ms == self._ts_ms else self._timestamp(ms)
            parts.append(
                f'{{"seq":{seq},"type":"{type}","ts":"{ts}","sessionId":{session},"payload":{payload_json}}}\n'
            )
        self._write(self._fd, "".join(parts).encode())
        self._pending.clear()

    def flush(self) -> None:
        """Write every pending line now (one ``write``); a no-op when nothing is pending."""
        if not self._pending:
            return
        with self._lock:
            if self._pending and self._fd is not None:
                self._write_pending()

    def release(self) -> None:
        """Let deferred lines go: written now, unless the background writer of this thread's event
        loop runs (it has them already). Called before every await that may suspend for long."""
        if self._writer != threading.get_ident():
            self.flush()

    async def run_writer(self) -> None:
        """Write the lines :meth:`append_json` queues, in the background, until :meth:`stop_writer`
        or :meth:`close` (see the module docstring). Run it in a task of the event loop whose tasks
        append; it returns at once when a writer already runs, or ran and was stopped, or the log
        is closed. An ``OSError``
        of a write ends it: the lines stay pending and the next append or flush writes them (and
        raises what the file raises)."""
        with self._lock:
            if self._fd is None or self._writer is not None or self._writer_stopped:
                return
            thread = self._writer = threading.get_ident()
        try:
            while True:
                wake = anyio.Event()
                with self._lock:
                    if self._writer != thread:
                        return
                    self._wake = wake
                await wake.wait()
                with self._lock:
                    if self._pending and self._fd is not None:
                        self._write_pending()
        except OSError:
            pass
        finally:
            with self._lock:
                if self._writer == thread:
                    self._writer = self._wake = None

    def stop_writer(self) -> None:
        """Write everything pending and end :meth:`run_writer`; later appends write at once."""
        with self._lock:
            wake = self._wake
            self._writer = self._wake = None
            self._writer_stopped = True
            if self._pending and self._fd is not None:
                self._write_pending()
        if wake is not None:
            wake.set()

    def redact(self, value: Any) -> Any:
        """Redact a JSON-like value exactly as ``append`` would (memoised for short strings).

        A dict comes back as :class:`Redacted`, so it can be embedded in several payloads and is
        not walked again.
        """
        redacted = self._redact(value)
        return Redacted(redacted) if isinstance(redacted, dict) and not isinstance(redacted, Redacted) else redacted

    def redact_json(self, text: str) -> str:
        """``encode_json(redact(text))`` for a string, memoised (tool and connector names repeat)."""
        if self._registry_seen != registry_version():
            self._text("")  # clears both caches
        cached = self._json_cache.get(text)
        if cached is None:
            cached = encode_json(self._text(text))
            if len(text) <= _CACHE_MAX_CHARS:
                if len(self._json_cache) >= _CACHE_MAX_ENTRIES:
                    self._json_cache.clear()
                self._json_cache[text] = cached
        return cached

    def close(self) -> None:
        """Write pending lines, bring the metadata record's call count up to date and close the
        file (releasing the writer lock); idempotent."""
        self.stop_writer()
        with self._lock:
            if self._fd is not None:
                self._close_meta(self._fd)
                os.close(self._fd)
                self._fd = None
                if _OPEN_LOGS.get(os.path.abspath(self.path)) is self:
                    del _OPEN_LOGS[os.path.abspath(self.path)]

    def _open_meta(self, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """The session's metadata record, written now for a new session; None when it cannot be
        kept (a listing then reads the log instead)."""
        size = os.fstat(self._fd).st_size if self._fd is not None else 0
        meta_path = session_meta_path(self.path)
        try:
            existing = json.loads(meta_path.read_bytes())
        except (OSError, ValueError):
            existing = None
        if isinstance(existing, dict):
            counted = existing.get("counted")
            # Only a count that covers the log exactly as it is now can be continued.
            if isinstance(counted, dict) and counted.get("bytes") == size and isinstance(counted.get("calls"), int):
                existing["_base_calls"] = counted["calls"]
            return existing
        record = {
            "sessionId": self.session_id,
            "workspace": None,
            "projectId": None,
            **self._redact({k: v for k, v in metadata.items() if k in ("workspace", "projectId")}),
            "startedAt": self._timestamp(int(time.time() * 1000)),
            "counted": {"bytes": size, "calls": 0} if size == 0 else None,
            "_base_calls": 0 if size == 0 else None,
        }
        return record if self._write_meta(record) else None

    def _close_meta(self, fd: int) -> None:
        meta = self._meta
        if meta is None or meta.get("_base_calls") is None:
            return  # what came before this writer was never counted: a reader counts it
        meta["counted"] = {"bytes": os.fstat(fd).st_size, "calls": meta["_base_calls"] + self._calls}
        self._write_meta(meta)

    def _write_meta(self, record: dict[str, Any]) -> bool:
        data = encode_json({k: v for k, v in record.items() if not k.startswith("_")}).encode()
        try:
            dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return False
        try:
            replace_file(dir_fd, session_meta_path(self.path).name, data, 0o600, strict_dir_sync=False)
        except OSError:
            return False
        finally:
            os.close(dir_fd)
        return True

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _timestamp(self, ms: int) -> str:
        """ISO-8601 UTC with milliseconds for ``ms`` (Unix ms); cached until the ms changes."""
        second, milli = divmod(ms, 1000)
        if second != self._ts_second:
            self._ts_second = second
            self._ts_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        self._ts_ms = ms
        self._ts = f"{self._ts_prefix}.{milli:03d}Z"
        return self._ts

    def _redact(self, value: Any) -> Any:
        """``redact_value(value, known_secrets, keep)``, with memoised results for short strings and keys.

        Mirrors :func:`patchbay.core.redaction.redact_value` exactly (a test pins the equivalence);
        the per-string pattern scan is what costs, and most event strings repeat.
        """
        kind = type(value)
        if kind is str:
            return self._text(value)
        if kind is Redacted:
            return value
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if isinstance(key, str) and self._is_secret_key(key) and item not in _EMPTY:
                    out[key] = REDACTED
                elif type(item) is str:
                    out[key] = self._text(item)
                elif isinstance(item, dict | list | tuple | str):
                    out[key] = self._redact(item)
                else:
                    out[key] = item
            return out
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list | tuple):
            return [self._redact(item) for item in value]
        return value

    def _text(self, value: str) -> str:
        if self._registry_seen != registry_version():  # a secret registered since: forget
            self._registry_seen = registry_version()
            self._text_cache.clear()
            self._json_cache.clear()
        cached = self._text_cache.get(value)
        if cached is None:
            cached = redact_text(value, self._known_secrets, self._keep)
            if len(value) <= _CACHE_MAX_CHARS:
                if len(self._text_cache) >= _CACHE_MAX_ENTRIES:
                    self._text_cache.clear()
                self._text_cache[value] = cached
        return cached

    def _is_secret_key(self, key: str) -> bool:
        secret = self._key_cache.get(key)
        if secret is None:
            secret = is_secret_key(key)
            if len(self._key_cache) < _CACHE_MAX_ENTRIES:
                self._key_cache[key] = secret
        return secret
