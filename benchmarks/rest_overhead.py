"""Overhead of the REST call path: ``POST /api/sessions/{id}/call`` vs a bare SDK ``call_tool``.

The API app runs in this process under uvicorn on an ephemeral 127.0.0.1 port (its lifespan
running, so its session host too; the data home's API token required, as ``patchbay serve`` does),
with one enabled connector: ``tests/fixtures/recording_server.py`` over stdio, every tool allowed.
One session is opened and warmed, then each iteration times a REST call (an ``httpx2`` client over
TCP, keep-alive), a bare ``mcp.Client.call_tool`` to an identical server of its own, and the same
POST to an empty route (added to the app for this run only, behind the same middleware, reading the
body and answering ``{}``: the HTTP round trip and nothing else), rotating which goes first so
drift (CPU frequency, other load) hits all three equally. Prints one JSON line::

    {"iterations", "sdk_p50_ms", "sdk_p99_ms", "rest_p50_ms", "rest_p99_ms", "p50_ratio", "p99_ratio",
     "empty_p50_ms", "empty_p99_ms", "floor_p50_ratio", "beyond_floor_p50_ratio"}

``floor_p50_ratio`` is ``(sdk_p50 + empty_p50) / sdk_p50``: what ``p50_ratio`` would be if the REST
call path added nothing to a bare SDK call but the HTTP round trip itself.
``beyond_floor_p50_ratio`` is ``(rest_p50 - empty_p50) / sdk_p50``: the call path past the round
trip (route, session host, governed call) against the bare call.

``--http`` picks uvicorn's HTTP implementation; ``auto`` (what ``patchbay serve`` uses) is
``httptools`` when that package is installed, else the pure-Python ``h11``. The JSON names the one used.

Usage::

    .venv/bin/python benchmarks/rest_overhead.py [--iterations 1000] [--warmup 100] [--http auto|h11|httptools]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from fastapi import Request, Response
from mcp import Client, StdioServerParameters

from patchbay.adapters.api_token import api_token
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "recording_server.py"
ARGS = {"text": "hello"}


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _empty(request: Request) -> Response:
    await request.body()
    return Response(b"{}", media_type="application/json")


def _checked(response: httpx2.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise SystemExit(f"{response.request.method} {response.request.url}: {response.status_code} {response.text}")
    return response.json()


def _http_implementation(choice: str) -> str:
    if choice != "auto":
        return choice
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


async def run(iterations: int, warmup: int, http_choice: str = "auto") -> dict[str, float | int | str]:
    with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        settings = Settings(home=home)
        app = create_app(settings, workspace=workspace)
        app.add_api_route("/api/sessions/{session_id}/empty", _empty, methods=["POST"], include_in_schema=False)
        # IPPROTO_TCP named, as ``patchbay serve`` binds: asyncio sets TCP_NODELAY only then (else
        # Nagle holds the body behind the headers for a delayed ACK, ~40 ms per request)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        implementation = _http_implementation(http_choice)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", http=implementation))
        params = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
        sdk: list[float] = []
        rest: list[float] = []
        empty: list[float] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(30):
                while not server.started:
                    await anyio.sleep(0.01)  # uvicorn offers no started event
            headers = {"Authorization": f"Bearer {api_token(home)}"}
            async with (
                httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as http,
                Client(params, mode=settings.protocol_mode, read_timeout_seconds=settings.request_timeout) as client,
            ):
                target = {"transport": "stdio", "command": sys.executable, "args": [str(FIXTURE)]}
                body = {"name": "bench", "target": target, "enabled": True}
                _checked(await http.post("/api/mcp/connectors", json=body), 201)
                change = {"revision": 1, "approval_mode": "allow_all"}
                _checked(await http.put("/api/mcp/connectors/bench/settings", json=change))
                session = _checked(await http.post("/api/sessions", json={"cwd": str(workspace)}), 201)["session_id"]
                call = {"tool": "mcp.bench.echo", "arguments": ARGS}
                url = f"/api/sessions/{session}/call"
                empty_url = f"/api/sessions/{session}/empty"
                for _ in range(warmup):
                    _checked(await http.post(url, json=call))
                    _checked(await http.post(empty_url, json=call))
                    await client.call_tool("echo", ARGS)
                paths = ("sdk", "rest", "empty")
                for index in range(iterations):
                    for path in paths[index % 3 :] + paths[: index % 3]:
                        started = time.perf_counter()
                        if path == "sdk":
                            await client.call_tool("echo", ARGS)
                            sdk.append(time.perf_counter() - started)
                        else:
                            response = await http.post(url if path == "rest" else empty_url, json=call)
                            (rest if path == "rest" else empty).append(time.perf_counter() - started)
                            _checked(response)
                _checked(await http.delete(f"/api/sessions/{session}"))
            server.should_exit = True
        app.state.context.close()
    sdk_p50, sdk_p99 = _quantile(sdk, 0.50) * 1000, _quantile(sdk, 0.99) * 1000
    rest_p50, rest_p99 = _quantile(rest, 0.50) * 1000, _quantile(rest, 0.99) * 1000
    empty_p50, empty_p99 = _quantile(empty, 0.50) * 1000, _quantile(empty, 0.99) * 1000
    return {
        "iterations": iterations,
        "http": implementation,
        "sdk_p50_ms": round(sdk_p50, 4),
        "sdk_p99_ms": round(sdk_p99, 4),
        "rest_p50_ms": round(rest_p50, 4),
        "rest_p99_ms": round(rest_p99, 4),
        "p50_ratio": round(rest_p50 / sdk_p50, 4),
        "p99_ratio": round(rest_p99 / sdk_p99, 4),
        "empty_p50_ms": round(empty_p50, 4),
        "empty_p99_ms": round(empty_p99, 4),
        "floor_p50_ratio": round((sdk_p50 + empty_p50) / sdk_p50, 4),
        "beyond_floor_p50_ratio": round((rest_p50 - empty_p50) / sdk_p50, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="bare SDK call vs REST call on the governed path (one JSON line)")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--http", choices=("auto", "h11", "httptools"), default="auto")
    options = parser.parse_args()
    print(json.dumps(anyio.run(run, options.iterations, options.warmup, options.http)))


if __name__ == "__main__":
    main()
