"""The connector list API at scale: ``GET /api/mcp/connectors`` over many connectors with big caches.

Builds, in a temporary data home, ``--connectors`` stdio connectors (default 1,000), each with a
fresh cached catalog of ``--tools`` tools (default 100; every tool has a description and a small
input schema, as real servers send them), writing through the store directly (a mutation through
the connector service would re-project every workspace). Then it calls the list API in process
(the FastAPI app through an httpx2 ASGI transport, with the data home's API token, as the API
tests do), checks the answer (every connector, each with ``--tools`` tools), and prints the
latency of ``--rounds`` calls after ``--warmup`` unmeasured ones: p50, p90, max, p50 per
connector, and the p50 of the CPU time the process spent per call (steadier than wall-clock time
on a shared machine, whose load average is printed too). Nothing is started: the list reads
canonical state and the cache only. The first call (the app's first list: nothing kept yet) is
reported apart as ``first_ms``. With ``--mutate`` one connector's settings (``enabled``) change before
each call, through a store connection of its own (as another process, the CLI, would).

Usage::

    .venv/bin/python benchmarks/list_scale.py [--connectors 1000] [--tools 100] [--rounds 30] [--mutate] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from patchbay.adapters.api_token import api_token
from patchbay.adapters.store import open_store
from patchbay.control.queries import catalog_fingerprint
from patchbay.core.models import StdioTarget, ToolCacheEntry, ToolSummary
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app

_BATCH = 200


def _tools(count: int) -> tuple[ToolSummary, ...]:
    return tuple(
        ToolSummary(
            name=f"tool_{index:03d}",
            description=f"Tool number {index}: does one thing to the item it is given and reports the result.",
            input_schema={
                "type": "object",
                "properties": {
                    "item": {"type": "string", "description": "what to act on"},
                    "limit": {"type": "integer"},
                },
                "required": ["item"],
            },
            annotations={"readOnlyHint": index % 2 == 0},
        )
        for index in range(count)
    )


def build(home: Path, connectors: int, tools: int) -> None:
    """Write ``connectors`` connectors with a fresh ``tools``-tool cache each into ``home``'s store."""
    settings = Settings(home=home)
    repo = open_store(settings)
    try:
        catalog = _tools(tools)
        now = int(time.time() * 1000)
        for start in range(0, connectors, _BATCH):
            items = [
                {
                    "name": f"conn-{index:05d}",
                    "display_name": f"Connector {index}",
                    "target": StdioTarget(command="true"),
                }
                for index in range(start, min(start + _BATCH, connectors))
            ]
            for connector in repo.connectors.create_many(items):
                repo.tool_cache.replace(
                    ToolCacheEntry(
                        connector_id=connector.connector_id,
                        config_revision=connector.revision,
                        fingerprint=catalog_fingerprint(connector),
                        tools=catalog,
                        fetched_at=now,
                        expires_at=now + 86_400_000,
                    )
                )
    finally:
        repo.close()


async def measure(
    home: Path, workspace: Path, connectors: int, tools: int, rounds: int, warmup: int, mutate: bool = False
) -> tuple[list[float], list[float], float]:
    """Wall-clock and CPU seconds (this process, all threads) of each measured
    ``GET /api/mcp/connectors``, after checking the first answer, and the first call's seconds."""
    settings = Settings(home=home)
    app = create_app(settings, workspace=workspace)
    headers = {"Authorization": f"Bearer {api_token(home)}"}
    transport = httpx2.ASGITransport(app=app)
    writer = open_store(settings) if mutate else None
    timings: list[float] = []
    cpu: list[float] = []
    first = 0.0
    try:
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765", headers=headers) as client:
            for index in range(warmup + rounds):
                if writer is not None:
                    (changed, *_) = writer.connectors.list_all()
                    writer.connectors.update_settings(
                        changed.connector_id, changed.settings.revision, enabled=index % 2 == 0
                    )
                started, cpu_started = time.perf_counter(), time.process_time()
                response = await client.get("/api/mcp/connectors")
                elapsed, cpu_elapsed = time.perf_counter() - started, time.process_time() - cpu_started
                if index == 0:
                    first = elapsed
                    _check(response, connectors, tools)
                if index >= warmup:
                    timings.append(elapsed)
                    cpu.append(cpu_elapsed)
    finally:
        if writer is not None:
            writer.close()
        app.state.context.close()
    return timings, cpu, first


def _check(response: httpx2.Response, connectors: int, tools: int) -> None:
    if response.status_code != 200:
        raise SystemExit(f"list API answered {response.status_code}: {response.text[:500]}")
    listed = response.json()["connectors"]
    counts = {item["tool_count"] for item in listed}
    if len(listed) != connectors or counts != {tools}:
        raise SystemExit(f"list API showed {len(listed)} connectors with tool counts {sorted(counts)}")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connectors", type=int, default=1000)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--mutate", action="store_true", help="change one connector before each call")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="patchbay-list-scale-") as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        workspace.mkdir()
        started = time.perf_counter()
        build(home, args.connectors, args.tools)
        built_s = time.perf_counter() - started
        timings, cpu, first = anyio.run(
            measure, home, workspace, args.connectors, args.tools, args.rounds, args.warmup, args.mutate
        )
    p50 = statistics.median(timings)
    report: dict[str, Any] = {
        "connectors": args.connectors,
        "tools": args.tools,
        "rounds": len(timings),
        "mutate": args.mutate,
        "build_s": round(built_s, 2),
        "p50_ms": round(p50 * 1000, 2),
        "p90_ms": round(_percentile(timings, 0.9) * 1000, 2),
        "max_ms": round(max(timings) * 1000, 2),
        "first_ms": round(first * 1000, 2),
        "p50_per_connector_us": round(p50 * 1e6 / max(args.connectors, 1), 1),
        "cpu_p50_ms": round(statistics.median(cpu) * 1000, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(report))
        return
    print(
        f"GET /api/mcp/connectors, {args.connectors} connectors x {args.tools} cached tools "
        f"(built in {report['build_s']} s), {report['rounds']} calls"
        f"{', one connector changed before each' if args.mutate else ''}:"
    )
    print(
        f"  p50 {report['p50_ms']} ms   p90 {report['p90_ms']} ms   max {report['max_ms']} ms   "
        f"({report['p50_per_connector_us']} us per connector at p50)"
    )
    print(f"  first call {report['first_ms']} ms (nothing kept yet)")
    print(f"  CPU p50 {report['cpu_p50_ms']} ms (all threads)   load average {report['load_average_1m']}")


if __name__ == "__main__":
    main()
