"""Latency of the REST call path, ``POST /api/sessions/{id}/call``, beside bare SDK ``call_tool`` calls.

Every path calls the ``echo`` tool of ``benchmarks/call_server.py`` (``{"text": "hello"}``), one
call at a time; each server process is its own:

* ``sdk_stdio``: a bare ``mcp.Client`` in this process, the server over stdio;
* ``sdk_http``: a bare ``mcp.Client`` in this process, the server over Streamable HTTP (its own
  uvicorn process on 127.0.0.1): the same class of transport cost as a REST call, one HTTP
  request and its answer over a kept-alive loopback connection;
* ``rest``: an ``httpx2.AsyncClient`` in this process (one, reused: keep-alive, no connection set
  up per call) posting to the REST API in a process of its own, served as ``patchbay serve``
  serves it (``benchmarks/rest_server.py``: uvloop and httptools when installed, ``--loop`` and
  ``--http`` pick others), with its API token; the API's session calls the connector ``bench``
  (that server over stdio, every tool allowed) on the governed path: route, session host,
  permission check, event log, output guard, the redacted answer;
* ``empty``: the same client posting the same body to an empty route of that API process
  (behind the same middleware, it reads the body and answers a few bytes): the HTTP round trip
  through the app and nothing else;
* with ``--breakdown``, also ``rest_raw`` and ``empty_raw``: the same two requests sent by a
  minimal HTTP/1.1 client (pre-built request bytes on one kept-alive socket; it reads the head
  and ``Content-Length`` bytes of body): what the server side costs without the client's own.

Each SDK client is set up as the API's runtime is (``settings.protocol_mode``, a read timeout of
``settings.request_timeout``) and has listed the tools once. After a warm-up, each iteration times
one call of every path, rotating which goes first so drift (CPU frequency, other load) hits all
alike. The empty route answers with the client port it saw: ``connections`` is how many
connections the REST client used for every timed request (1: no connection set up per call).
Prints one JSON line: per path ``<path>_p50_ms`` and ``<path>_p99_ms``, and::

    {"iterations", "loop", "http", "connections",
     "p50_ratio", "p99_ratio",            # rest / sdk_stdio
     "http_p50_ratio", "http_p99_ratio",  # rest / sdk_http
     "floor_p50_ratio",                   # (sdk_stdio_p50 + empty_p50) / sdk_stdio_p50
     "beyond_floor_p50_ratio"}            # (rest_p50 - empty_p50) / sdk_stdio_p50

``floor_p50_ratio`` is what ``p50_ratio`` would be if the REST call path added nothing to a bare
SDK call but the HTTP round trip; ``beyond_floor_p50_ratio`` is the call path past that round
trip (route, session host, governed call) against the bare call.

Usage::

    .venv/bin/python benchmarks/rest_overhead.py [--iterations 1000] [--warmup 100]
        [--loop auto|asyncio|uvloop] [--http auto|h11|httptools] [--breakdown]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import ByteStream
from mcp import Client, StdioServerParameters

from patchbay.adapters.api_token import api_token
from patchbay.core.settings import Settings

HERE = Path(__file__).resolve().parent
CALL_SERVER = HERE / "call_server.py"
REST_SERVER = HERE / "rest_server.py"
ARGS = {"text": "hello"}

Call = Callable[[], Awaitable[Any]]


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _checked(response: httpx2.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise SystemExit(f"{response.request.method} {response.request.url}: {response.status_code} {response.text}")
    return response.json()


@asynccontextmanager
async def _server(argv: list[str]) -> AsyncIterator[list[str]]:
    """A server process that prints ``ready <port> ...``; yields the words after ``ready``, stops
    the process."""
    async with await anyio.open_process(argv, stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        line = b""
        with anyio.fail_after(60):
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        if not line.startswith(b"ready "):
            raise RuntimeError(f"benchmark server did not start: {line!r}")
        try:
            yield line.decode().split()[1:]
        finally:
            process.terminate()  # rest_server.py: uvicorn's graceful shutdown closes the sessions
            with anyio.move_on_after(30):
                await process.wait()


class _RawClient:
    """The least an HTTP/1.1 client does: one pre-built request, one kept-alive socket, the answer
    read to its ``Content-Length`` (the API always sends one)."""

    def __init__(self, stream: ByteStream, request: bytes) -> None:
        self._stream = stream
        self._request = request

    async def call(self) -> bytes:
        await self._stream.send(self._request)
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += await self._stream.receive()
        head, _, body = buffer.partition(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += await self._stream.receive()
        if status != b"200":
            raise SystemExit(f"raw client: {head.decode('latin-1')} {body[:500]!r}")
        return body


async def _raw_client(stack: AsyncExitStack, port: int, path: str, token: str, body: bytes) -> _RawClient:
    stream = await stack.enter_async_context(await anyio.connect_tcp("127.0.0.1", port))
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode("ascii") + body
    return _RawClient(stream, request)


async def run(
    iterations: int, warmup: int, loop: str = "auto", http_choice: str = "auto", breakdown: bool = False
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        settings = Settings(home=home)
        client_options: dict[str, Any] = {
            "mode": settings.protocol_mode,
            "read_timeout_seconds": settings.request_timeout,
        }
        samples: dict[str, list[float]] = {}
        ports: set[int | None] = set()
        async with AsyncExitStack() as stack:
            rest_argv = [sys.executable, str(REST_SERVER), "--home", str(home), "--workspace", str(workspace)]
            ready = await stack.enter_async_context(_server([*rest_argv, "--loop", loop, "--http", http_choice]))
            rest_port, loop, http_choice = int(ready[0]), ready[1], ready[2]  # what "auto" resolved to
            mcp_port = int((await stack.enter_async_context(_server([sys.executable, str(CALL_SERVER), "--http"])))[0])
            token = api_token(home)
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    base_url=f"http://127.0.0.1:{rest_port}", headers={"Authorization": f"Bearer {token}"}, timeout=60
                )
            )
            stdio = StdioServerParameters(command=sys.executable, args=[str(CALL_SERVER)])
            sdk_stdio = await stack.enter_async_context(Client(stdio, **client_options))
            sdk_http = await stack.enter_async_context(Client(f"http://127.0.0.1:{mcp_port}/mcp", **client_options))
            for client in (sdk_stdio, sdk_http):
                await client.list_tools()

            target = {"transport": "stdio", "command": sys.executable, "args": [str(CALL_SERVER)]}
            _checked(
                await http.post("/api/mcp/connectors", json={"name": "bench", "target": target, "enabled": True}), 201
            )
            _checked(
                await http.put("/api/mcp/connectors/bench/settings", json={"revision": 1, "approval_mode": "allow_all"})
            )
            session = _checked(await http.post("/api/sessions", json={"cwd": str(workspace)}), 201)["session_id"]
            call = {"tool": "mcp.bench.echo", "arguments": ARGS}
            url, empty_url = f"/api/sessions/{session}/call", f"/api/sessions/{session}/empty"

            async def rest() -> None:
                _checked(await http.post(url, json=call))

            async def empty() -> None:
                ports.add(_checked(await http.post(empty_url, json=call))["client_port"])

            paths: dict[str, Call] = {
                "sdk_stdio": lambda: sdk_stdio.call_tool("echo", ARGS),
                "sdk_http": lambda: sdk_http.call_tool("echo", ARGS),
                "rest": rest,
                "empty": empty,
            }
            if breakdown:
                body = json.dumps(call).encode("utf-8")
                paths["rest_raw"] = (await _raw_client(stack, rest_port, url, token, body)).call
                paths["empty_raw"] = (await _raw_client(stack, rest_port, empty_url, token, body)).call
            for _ in range(warmup):
                for path in paths.values():
                    await path()
            ports.clear()
            names = list(paths)
            samples = {name: [] for name in names}
            for index in range(iterations):
                shift = index % len(names)
                for name in names[shift:] + names[:shift]:
                    started = time.perf_counter()
                    await paths[name]()
                    samples[name].append(time.perf_counter() - started)
            _checked(await http.delete(f"/api/sessions/{session}"))
    p50 = {name: _quantile(values, 0.50) * 1000 for name, values in samples.items()}
    p99 = {name: _quantile(values, 0.99) * 1000 for name, values in samples.items()}
    report: dict[str, Any] = {"iterations": iterations, "loop": loop, "http": http_choice, "connections": len(ports)}
    for name in samples:
        report[f"{name}_p50_ms"] = round(p50[name], 4)
        report[f"{name}_p99_ms"] = round(p99[name], 4)
    report.update(
        p50_ratio=round(p50["rest"] / p50["sdk_stdio"], 4),
        p99_ratio=round(p99["rest"] / p99["sdk_stdio"], 4),
        http_p50_ratio=round(p50["rest"] / p50["sdk_http"], 4),
        http_p99_ratio=round(p99["rest"] / p99["sdk_http"], 4),
        floor_p50_ratio=round((p50["sdk_stdio"] + p50["empty"]) / p50["sdk_stdio"], 4),
        beyond_floor_p50_ratio=round((p50["rest"] - p50["empty"]) / p50["sdk_stdio"], 4),
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description="bare SDK calls vs a REST call on the governed path (one JSON line)")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto", help="the API server's loop")
    parser.add_argument("--http", choices=("auto", "h11", "httptools"), default="auto", help="the API server's HTTP")
    parser.add_argument("--breakdown", action="store_true", help="also time both requests from a minimal raw client")
    options = parser.parse_args()
    report = anyio.run(run, options.iterations, options.warmup, options.loop, options.http, options.breakdown)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
