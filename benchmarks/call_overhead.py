"""Call overhead of the governed path: bare SDK ``Client`` vs ``patchbay.Runtime``, same echo tool.

Both talk to their own copy of ``tests/fixtures/recording_server.py`` (no ``--record``) over stdio,
in one process, and are configured alike: ``settings.protocol_mode`` (legacy) and a per-request read
timeout of ``settings.request_timeout`` (the runtime always arms one, and an armed timeout costs a
timer per request). Iterations alternate between the two paths, and which goes first, so drift
(CPU frequency, other load) hits both equally. The runtime path is the full governed one: strict
resolution, policy (an explicit ``allow`` grant), seven redacted event-log appends (two writes),
result conversion. Prints one JSON line::

    {"iterations", "sdk_p50_ms", "sdk_p99_ms", "runtime_p50_ms", "runtime_p99_ms", "p50_ratio", "p99_ratio"}

Usage::

    .venv/bin/python benchmarks/call_overhead.py [--iterations 2000] [--warmup 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import StdioTarget

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "recording_server.py"
ARGS = {"text": "hello"}


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(iterations: int, warmup: int) -> dict[str, float | int]:
    with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as home:
        settings = Settings(home=Path(home))
        config = RuntimeConfig(
            project_id="bench",
            workspace=home,
            servers=(
                RuntimeServer(
                    connector_id="bench",
                    name="bench",
                    target=StdioTarget(command=sys.executable, args=(str(FIXTURE),)),
                    global_grants={"echo": "allow"},
                ),
            ),
        )
        params = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
        sdk: list[float] = []
        governed: list[float] = []
        async with (
            Client(params, mode=settings.protocol_mode, read_timeout_seconds=settings.request_timeout) as client,
            Runtime(config, settings=settings) as runtime,
        ):
            for _ in range(warmup):
                await client.call_tool("echo", ARGS)
                await runtime.call("mcp.bench.echo", ARGS)
            for index in range(iterations):
                # Alternate which path goes first, so neither always follows the other.
                order = ("sdk", "runtime") if index % 2 == 0 else ("runtime", "sdk")
                for path in order:
                    started = time.perf_counter()
                    if path == "sdk":
                        await client.call_tool("echo", ARGS)
                        sdk.append(time.perf_counter() - started)
                    else:
                        await runtime.call("mcp.bench.echo", ARGS)
                        governed.append(time.perf_counter() - started)
    sdk_p50, sdk_p99 = _quantile(sdk, 0.50) * 1000, _quantile(sdk, 0.99) * 1000
    rt_p50, rt_p99 = _quantile(governed, 0.50) * 1000, _quantile(governed, 0.99) * 1000
    return {
        "iterations": iterations,
        "sdk_p50_ms": round(sdk_p50, 4),
        "sdk_p99_ms": round(sdk_p99, 4),
        "runtime_p50_ms": round(rt_p50, 4),
        "runtime_p99_ms": round(rt_p99, 4),
        "p50_ratio": round(rt_p50 / sdk_p50, 4),
        "p99_ratio": round(rt_p99 / sdk_p99, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="SDK vs governed Runtime call overhead (one JSON line)")
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    options = parser.parse_args()
    print(json.dumps(anyio.run(run, options.iterations, options.warmup)))


if __name__ == "__main__":
    main()
