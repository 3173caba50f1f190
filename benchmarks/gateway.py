"""The Patchbay gateway against a direct SDK connection, and against other MCP proxies, in one run.

Every path is an official SDK ``Client`` calling the ``echo`` tool of ``benchmarks/call_server.py``:

* ``direct``: straight to the server over stdio;
* ``gateway-stdio``: through ``patchbay gateway --stdio --mode direct`` (the full governed path:
  router, permissions, event log, supervised connection, output guard, redaction) to the
  server over stdio;
* ``gateway-http``: through ``/mcp?mode=direct`` of a ``patchbay serve`` on 127.0.0.1 (Streamable
  HTTP, with the API token) to the server over stdio;
* ``fastmcp-proxy`` (with ``--fastmcp-python PY``): FastMCP's proxy (``create_proxy``) over stdio
  to the server over stdio, run by a Python that has ``fastmcp`` installed;
* ``mcp-proxy`` (with ``--mcp-proxy EXE``): sparfenyuk's ``mcp-proxy`` serving the stdio server
  over Streamable HTTP.

FastMCP and mcp-proxy need an MCP SDK 1.x, so they live in their own virtualenv, e.g.::

    python3 -m venv /tmp/proxies && /tmp/proxies/bin/pip install fastmcp mcp-proxy
    .venv/bin/python benchmarks/gateway.py --fastmcp-python /tmp/proxies/bin/python \\
        --mcp-proxy /tmp/proxies/bin/mcp-proxy

Measured for each path, as a ratio to ``direct`` in the same run: p50 and p99 of one call at a time
(iterations go round the paths, the first one rotating, so drift hits all alike), and calls/s with
16 and 64 calls in flight (median of the rounds, which rotate the same way).

Usage::

    .venv/bin/python benchmarks/gateway.py [--iterations 500] [--warmup 50] [--rounds 3]
        [--round-calls 320] [--fastmcp-python PY] [--mcp-proxy EXE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import call_overhead  # the sibling benchmark: its quantile and rounds (run as a script, benchmarks/ is on sys.path)
import httpx2
from call_overhead import _quantile
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

SERVER = Path(__file__).resolve().parent / "call_server.py"
PATCHBAY = str(Path(sys.executable).parent / "patchbay")
ARGS = {"text": "hello"}
INFLIGHT = (16, 64)
_FASTMCP_PROXY = """
import sys
from fastmcp.server import create_proxy
create_proxy({"mcpServers": {"bench": {"command": sys.argv[1], "args": [sys.argv[2]]}}}).run()
"""

Call = Callable[[], Awaitable[Any]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _patchbay(home: Path, *args: str, cwd: Path) -> None:
    env = {**os.environ, "PATCHBAY_BUILTINS": "off"}
    subprocess.run([PATCHBAY, "--home", str(home), *args], cwd=cwd, env=env, check=True, capture_output=True)


def _gateway_home(home: Path, workspace: Path) -> None:
    _patchbay(home, "connector", "add", "bench", "--", sys.executable, str(SERVER), cwd=workspace)
    _patchbay(home, "probe", "bench", "--project", str(workspace), cwd=workspace)
    _patchbay(home, "grant", "bench", "echo", "allow", cwd=workspace)


@asynccontextmanager
async def _serve(home: Path, workspace: Path) -> AsyncIterator[tuple[str, str]]:
    """``patchbay serve`` on a free port; yields its URL and API token."""
    env = {**os.environ, "PATCHBAY_BUILTINS": "off"}
    command = [PATCHBAY, "--home", str(home), "serve", "--port", "0", "--json"]
    async with await anyio.open_process(command, cwd=workspace, env=env, stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        text = ""
        with anyio.fail_after(60):
            while True:  # the start document is the first JSON value serve prints
                text += (await process.stdout.receive()).decode()
                try:
                    info, _ = json.JSONDecoder().raw_decode(text.lstrip())
                    break
                except ValueError:
                    continue
        try:
            yield info["url"], info["token"]
        finally:
            process.terminate()


@asynccontextmanager
async def _mcp_proxy(executable: str) -> AsyncIterator[str]:
    port = _free_port()
    command = [executable, "--host", "127.0.0.1", "--port", str(port), "--", sys.executable, str(SERVER)]
    async with await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            async with httpx2.AsyncClient() as probe:
                while True:  # no readiness line to wait on: poll the port
                    try:
                        await probe.get(url)
                        break
                    except httpx2.TransportError:
                        await anyio.sleep(0.1)
        try:
            yield url
        finally:
            process.terminate()


@asynccontextmanager
async def _paths(fastmcp_python: str | None, mcp_proxy: str | None) -> AsyncIterator[dict[str, Call]]:
    async with AsyncExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="patchbay-gateway-bench-")))
        home, workspace = root / "home", root / "ws"
        workspace.mkdir()
        _gateway_home(home, workspace)
        calls: dict[str, Call] = {}

        async def add(label: str, client: Client, tool: str) -> None:
            entered = await stack.enter_async_context(client)
            await entered.list_tools()

            async def call() -> Any:
                result = await entered.call_tool(tool, ARGS)
                if result.is_error:
                    raise RuntimeError(f"{label}: {result.content}")
                return result

            calls[label] = call

        await add("direct", Client(StdioServerParameters(command=sys.executable, args=[str(SERVER)])), "echo")
        gateway = [
            "--home",
            str(home),
            "gateway",
            "--stdio",
            "--project",
            str(workspace),
            "--mode",
            "direct",
        ]
        env = {**os.environ, "PATCHBAY_BUILTINS": "off"}
        await add(
            "gateway-stdio", Client(StdioServerParameters(command=PATCHBAY, args=gateway, env=env)), "bench__echo"
        )
        url, token = await stack.enter_async_context(_serve(home, workspace))
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60))
        )
        endpoint = f"{url}/mcp?cwd={workspace}&mode=direct"
        await add("gateway-http", Client(streamable_http_client(endpoint, http_client=http)), "bench__echo")  # type: ignore[arg-type]
        if fastmcp_python:
            proxy = StdioServerParameters(
                command=fastmcp_python, args=["-c", _FASTMCP_PROXY, sys.executable, str(SERVER)]
            )
            await add("fastmcp-proxy", Client(proxy), "echo")
        if mcp_proxy:
            proxied = await stack.enter_async_context(_mcp_proxy(mcp_proxy))
            plain = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(60)))
            await add("mcp-proxy", Client(streamable_http_client(proxied, http_client=plain)), "echo")  # type: ignore[arg-type]
        yield calls


async def _latency(calls: dict[str, Call], iterations: int, warmup: int) -> dict[str, list[float]]:
    labels = list(calls)
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for _ in range(warmup):
        for label in labels:
            await calls[label]()
    for index in range(iterations):
        shift = index % len(labels)
        for label in labels[shift:] + labels[:shift]:
            started = time.perf_counter()
            await calls[label]()
            samples[label].append(time.perf_counter() - started)
    return samples


async def _round(call: Call, inflight: int, total: int) -> float:
    """Calls/s of ``total`` calls made by ``inflight`` tasks at once (the call benchmark's rounds)."""
    return await call_overhead._round(lambda _tool: call(), "", inflight, total)


async def _throughput(calls: dict[str, Call], inflight: int, rounds: int, total: int) -> dict[str, float]:
    labels = list(calls)
    rates: dict[str, list[float]] = {label: [] for label in labels}
    for label in labels:
        await _round(calls[label], inflight, inflight)
    for index in range(rounds):
        shift = index % len(labels)
        for label in labels[shift:] + labels[:shift]:
            rates[label].append(await _round(calls[label], inflight, total))
    return {label: statistics.median(values) for label, values in rates.items()}


async def run(options: argparse.Namespace) -> dict[str, Any]:
    async with _paths(options.fastmcp_python, options.mcp_proxy) as calls:
        samples = await _latency(calls, options.iterations, options.warmup)
        inflight = {n: await _throughput(calls, n, options.rounds, options.round_calls) for n in INFLIGHT}
    base = {q: _quantile(samples["direct"], q) for q in (0.5, 0.99)}
    rows = []
    for label, values in samples.items():
        row: dict[str, Any] = {"path": label}
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            value = _quantile(values, q)
            row[f"{name}_ms"] = round(value * 1000, 3)
            row[f"{name}_ratio"] = round(value / base[q], 3)
        for n in INFLIGHT:
            row[f"calls_per_s_{n}"] = round(inflight[n][label], 1)
            row[f"ratio_{n}"] = round(inflight[n][label] / inflight[n]["direct"], 3)
        rows.append(row)
    return {
        "iterations": options.iterations,
        "rounds": options.rounds,
        "round_calls": options.round_calls,
        "paths": rows,
    }


def _table(report: dict[str, Any]) -> str:
    header = f"{'path':<15}{'p50 ms':>9}{'x':>7}{'p99 ms':>9}{'x':>7}" + "".join(
        f"{f'{n} in flight/s':>16}{'x':>7}" for n in INFLIGHT
    )
    lines = [header, "-" * len(header)]
    for row in report["paths"]:
        line = f"{row['path']:<15}{row['p50_ms']:>9.3f}{row['p50_ratio']:>7.2f}{row['p99_ms']:>9.3f}{row['p99_ratio']:>7.2f}"
        for n in INFLIGHT:
            line += f"{row[f'calls_per_s_{n}']:>16.0f}{row[f'ratio_{n}']:>7.2f}"
        lines.append(line)
    lines.append(
        f"(one call at a time: {report['iterations']} iterations; calls/s: median of {report['rounds']} rounds of "
        f"{report['round_calls']} calls; x = ratio to direct)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="the Patchbay gateway vs a direct SDK call and other proxies")
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--round-calls", type=int, default=320)
    parser.add_argument("--fastmcp-python", help="a Python with fastmcp installed (adds fastmcp-proxy)")
    parser.add_argument("--mcp-proxy", help="the mcp-proxy executable (adds mcp-proxy over Streamable HTTP)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    options = parser.parse_args()
    report = anyio.run(run, options)
    print(json.dumps(report) if options.json else _table(report))


if __name__ == "__main__":
    main()
