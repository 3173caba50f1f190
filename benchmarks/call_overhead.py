"""Call overhead of the governed path: bare SDK ``mcp.Client`` vs ``patchbay.Runtime``, in one run.

For each transport (stdio, Streamable HTTP) the bare SDK ``Client`` and a ``Runtime`` each talk to
their own copy of ``benchmarks/call_server.py``, in one process, configured alike:
``settings.protocol_mode`` and a per-request read timeout of ``settings.request_timeout`` (the
runtime always arms one); the SDK client lists the tools once, as the runtime does on connect.
Two tools: ``echo`` (no ``outputSchema``) and ``typed_echo`` (an ``outputSchema``, as every typed
tool of an SDK ``MCPServer`` has). The runtime path is the full governed one: strict resolution,
policy (an explicit ``allow`` grant), the redacted event-log chain, the output guard, result
conversion and, for the typed tool, the ``outputSchema`` check.

Measured, each as a ratio to the bare SDK in the same run:

* **latency**: p50 and p99 of one call at a time; iterations alternate between the two paths, and
  which goes first, so drift (CPU frequency, other load) hits both equally;
* **throughput**: calls/s with 16 and 64 calls in flight (that many tasks calling in a loop);
  rounds alternate between the two paths the same way, and the median round counts.

Prints a table, or with ``--json`` one JSON object::

    {"iterations", "rounds", "results": [{"transport", "tool", "sdk_p50_ms", "runtime_p50_ms",
      "p50_ratio", "sdk_p99_ms", "runtime_p99_ms", "p99_ratio",
      "inflight": {"16": {"sdk_calls_per_s", "runtime_calls_per_s", "ratio"}, "64": {...}}}, ...]}

Usage::

    .venv/bin/python benchmarks/call_overhead.py [--iterations 1000] [--warmup 100] [--rounds 5]
        [--round-calls 320] [--transport stdio|streamable_http|both] [--json]
"""

from __future__ import annotations

import argparse
import json
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
from mcp import Client, StdioServerParameters

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import ConnectorTarget, HttpTarget, StdioTarget

SERVER = Path(__file__).resolve().parent / "call_server.py"
ARGS = {"text": "hello"}
TOOLS = ("echo", "typed_echo")
INFLIGHT = (16, 64)

Call = Callable[[str], Awaitable[Any]]


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@asynccontextmanager
async def _http_server() -> AsyncIterator[str]:
    """One server process on a free loopback port; yields its endpoint URL."""
    async with await anyio.open_process([sys.executable, str(SERVER), "--http"], stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        line = b""
        with anyio.fail_after(30):
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        if not line.startswith(b"ready "):
            raise RuntimeError(f"benchmark server did not start: {line!r}")
        try:
            yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
        finally:
            process.terminate()


@asynccontextmanager
async def _paths(transport: str, settings: Settings, home: str) -> AsyncIterator[tuple[Call, Call]]:
    """``(sdk_call, runtime_call)``: each calls a tool by its name on its own server."""
    async with AsyncExitStack() as stack:
        target: ConnectorTarget
        sdk_server: Any
        if transport == "stdio":
            sdk_server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
            target = StdioTarget(command=sys.executable, args=(str(SERVER),))
        else:
            sdk_server = await stack.enter_async_context(_http_server())
            target = HttpTarget(url=await stack.enter_async_context(_http_server()))
        config = RuntimeConfig(
            project_id="bench",
            workspace=home,
            servers=(
                RuntimeServer(
                    connector_id="bench",
                    name="bench",
                    target=target,
                    global_grants=dict.fromkeys(TOOLS, "allow"),
                    runtime_config={"allow_private": True},  # the servers listen on loopback
                ),
            ),
        )
        async with (
            Client(sdk_server, mode=settings.protocol_mode, read_timeout_seconds=settings.request_timeout) as client,
            Runtime(config, settings=settings) as runtime,
        ):
            await client.list_tools()

            async def sdk_call(tool: str) -> Any:
                return await client.call_tool(tool, ARGS)

            async def runtime_call(tool: str) -> Any:
                return await runtime.call(f"mcp.bench.{tool}", ARGS)

            yield sdk_call, runtime_call


async def _latency(call: dict[str, Call], tool: str, iterations: int, warmup: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"sdk": [], "runtime": []}
    for _ in range(warmup):
        await call["sdk"](tool)
        await call["runtime"](tool)
    for index in range(iterations):
        # Alternate which path goes first, so neither always follows the other.
        for path in ("sdk", "runtime") if index % 2 == 0 else ("runtime", "sdk"):
            started = time.perf_counter()
            await call[path](tool)
            samples[path].append(time.perf_counter() - started)
    return samples


async def _round(call: Call, tool: str, inflight: int, calls: int) -> float:
    """Calls/s of ``calls`` calls made by ``inflight`` tasks at once."""
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call(tool)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(inflight):
            tg.start_soon(worker)
    return calls / (time.perf_counter() - started)


async def _throughput(call: dict[str, Call], tool: str, inflight: int, rounds: int, calls: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {"sdk": [], "runtime": []}
    await _round(call["sdk"], tool, inflight, inflight)
    await _round(call["runtime"], tool, inflight, inflight)
    for index in range(rounds):
        for path in ("sdk", "runtime") if index % 2 == 0 else ("runtime", "sdk"):
            rates[path].append(await _round(call[path], tool, inflight, calls))
    sdk, runtime = statistics.median(rates["sdk"]), statistics.median(rates["runtime"])
    return {
        "sdk_calls_per_s": round(sdk, 1),
        "runtime_calls_per_s": round(runtime, 1),
        "ratio": round(runtime / sdk, 4),
    }


async def run(
    transports: tuple[str, ...], iterations: int, warmup: int, rounds: int, round_calls: int
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for transport in transports:
        with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as home:
            settings = Settings(home=Path(home))
            async with _paths(transport, settings, home) as (sdk_call, runtime_call):
                call = {"sdk": sdk_call, "runtime": runtime_call}
                for tool in TOOLS:
                    samples = await _latency(call, tool, iterations, warmup)
                    row: dict[str, Any] = {"transport": transport, "tool": tool}
                    for q, label in ((0.50, "p50"), (0.99, "p99")):
                        sdk_q = _quantile(samples["sdk"], q) * 1000
                        rt_q = _quantile(samples["runtime"], q) * 1000
                        row[f"sdk_{label}_ms"] = round(sdk_q, 4)
                        row[f"runtime_{label}_ms"] = round(rt_q, 4)
                        row[f"{label}_ratio"] = round(rt_q / sdk_q, 4)
                    row["inflight"] = {str(n): await _throughput(call, tool, n, rounds, round_calls) for n in INFLIGHT}
                    results.append(row)
    return {"iterations": iterations, "rounds": rounds, "round_calls": round_calls, "results": results}


def _table(report: dict[str, Any]) -> str:
    header = (
        f"{'transport':<16}{'tool':<12}{'p50 sdk':>9}{'p50 rt':>9}{'ratio':>7}"
        f"{'p99 sdk':>9}{'p99 rt':>9}{'ratio':>7}"
        + "".join(f"{f'{n}: sdk/s':>11}{'rt/s':>8}{'ratio':>7}" for n in INFLIGHT)
    )
    lines = [header, "-" * len(header)]
    for row in report["results"]:
        line = (
            f"{row['transport']:<16}{row['tool']:<12}"
            f"{row['sdk_p50_ms']:>9.3f}{row['runtime_p50_ms']:>9.3f}{row['p50_ratio']:>7.2f}"
            f"{row['sdk_p99_ms']:>9.3f}{row['runtime_p99_ms']:>9.3f}{row['p99_ratio']:>7.2f}"
        )
        for n in INFLIGHT:
            t = row["inflight"][str(n)]
            line += f"{t['sdk_calls_per_s']:>11.0f}{t['runtime_calls_per_s']:>8.0f}{t['ratio']:>7.2f}"
        lines.append(line)
    lines.append(
        f"(ms per call, one at a time, {report['iterations']} iterations; calls/s = median of "
        f"{report['rounds']} rounds of {report['round_calls']} calls; ratio = runtime / bare SDK)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="bare SDK vs governed Runtime: latency and throughput")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-calls", type=int, default=320)
    parser.add_argument("--transport", choices=("stdio", "streamable_http", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    options = parser.parse_args()
    transports = ("stdio", "streamable_http") if options.transport == "both" else (options.transport,)
    report = anyio.run(run, transports, options.iterations, options.warmup, options.rounds, options.round_calls)
    print(json.dumps(report) if options.json else _table(report))


if __name__ == "__main__":
    main()
