"""Test helpers for the egress guard and audit: a TCP listener that counts connections (and can
answer HTTP), the Streamable HTTP fixture server, and audit-file readers. 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from tests.support.paths import FIXTURES

Answer = Callable[[str, str], bytes]
"""``answer(method, path)`` → the raw HTTP response to send."""


def http_response(status: int = 200, body: bytes = b"ok", headers: dict[str, str] | None = None) -> bytes:
    """A complete HTTP/1.1 response that closes the connection."""
    reason = {200: "OK", 302: "Found", 307: "Temporary Redirect", 308: "Permanent Redirect"}.get(status, "Status")
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class Listener:
    """A TCP listener on 127.0.0.1 that counts every connection made to it.

    With ``answer``, each connection's request head is read, kept in ``requests`` (method, path and
    headers, lower-cased names) and answered; without, the connection is closed at once.
    """

    port: int = 0
    answer: Answer | None = None
    connections: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_for_connections(self, count: int) -> None:
        """Return once at least ``count`` connections arrived (callers bound it with fail_after)."""
        while self.connections < count:
            await self._changed.wait()

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        self._changed.set()
        self._changed = anyio.Event()
        async with stream:
            if self.answer is None:
                return
            received = b""
            try:
                while b"\r\n\r\n" not in received:
                    received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return
            head = received.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            headers = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
            self.requests.append(
                {"method": method, "path": path, "headers": {k.lower(): v for k, v in headers.items()}}
            )
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await stream.send(self.answer(method, path))


@contextlib.asynccontextmanager
async def listening(answer: Answer | None = None) -> AsyncIterator[Listener]:
    """Run a :class:`Listener` for the duration of the block; it is closed on exit."""
    listener = Listener(answer=answer)
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as tcp, anyio.create_task_group() as group:
        listener.port = tcp.extra(anyio.abc.SocketAttribute.local_port)
        group.start_soon(tcp.serve, listener._handle)
        try:
            yield listener
        finally:
            group.cancel_scope.cancel()


@contextlib.contextmanager
def http_fixture(record: Path) -> Iterator[int]:
    """Run ``tests/fixtures/http_server.py`` (Streamable HTTP on 127.0.0.1); yield its port.

    Every request it receives is a JSON line in ``record`` (see the fixture's docstring).
    """
    process = subprocess.Popen(
        [sys.executable, str(FIXTURES / "http_server.py"), "--record", str(record)], stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline().split() if process.stdout else []
        assert line[:1] == ["ready"], "the HTTP fixture server did not start"
        yield int(line[1])
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


def recorded_requests(record: Path) -> list[dict[str, Any]]:
    """The requests the HTTP fixture server recorded (``[]`` if none)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


AUDIT_KEYS = {"note", "connector_id", "origin", "time", "project_id", "approved"}
"""The keys of an HTTP/SSE egress audit line (stdio/socket lines add ``runtime_call_audit``)."""


def audit_lines(home: Path) -> list[dict[str, Any]]:
    """The parsed lines of ``<home>/egress-audit.jsonl`` (``[]`` when it does not exist)."""
    path = home / "egress-audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
