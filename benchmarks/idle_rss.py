"""Memory per idle stdio session: ``patchbay.Runtime`` connectors vs bare SDK ``Client`` sessions.

Each kind is measured in a fresh Python process (so neither inherits the other's heap), which:

1. warms up: one session of that kind opened, used once and closed, so imports and first-use
   caches are paid before the baseline;
2. opens the container (``patchbay``: a Runtime with max(N) lazy stdio connectors, none connected
   yet, ``idle_timeout`` 3600 s so none closes; ``sdk``: a task group), ``gc.collect()``, and reads
   this process's RSS (psutil): the baseline. The container's own cost is printed as "fixed";
3. for each N in ascending order, opens sessions until N are open, each to its own
   ``tests/fixtures/lifecycle_server.py`` over stdio, calling ``echo`` once on each new one (at most
   ``--parallel`` connecting at a time, for both kinds); ``sdk`` holds every ``mcp.Client`` open in
   its own task, with the protocol mode and read timeout the runtime uses;
4. after ``--settle`` idle seconds and ``gc.collect()``, reads this process's RSS again and the RSS
   and PSS of its child processes (PSS splits shared pages among the processes sharing them, so
   summing it does not count the interpreter N times);
5. closes everything and waits for every child it measured to be gone; the parent checks the pids
   (with their start times) again after the measuring process exited.

Per session: (RSS - baseline) / N for this process, total / N for the children.

Usage::

    .venv/bin/python benchmarks/idle_rss.py [--sizes 1 10 50] [--parallel 4] [--settle 1.0]

Measured on the 2-vCPU dev machine while other engineers' test suites ran (two runs of the default
command, 2 min 20 s - 2 min 45 s each; KiB per session, run 1 / run 2):

    ====  ===================  ===================  =============  ================
    N     client, patchbay     client, sdk          child RSS      child PSS
    ====  ===================  ===================  =============  ================
    1     72 / 68              4 / 12               66 800 (both)  48 500-52 000
    10    99 / 99              63 / 67              66 800 (both)  47 400-47 700
    50    101 / 99             66 / 66              66 800 (both)  46 700 (both)
    ====  ===================  ===================  =============  ================

Patchbay/SDK for the client process: 1.55 / 1.48 at N=10, 1.53 / 1.50 at N=50 (about 33 KiB more
per session: the owner task, the stream watcher and stderr pump tasks, their events and exit
stacks, the cached catalog; tracemalloc agrees: 95 vs 61 KiB of Python allocations per session).
At N=1 the SDK figure is page-granularity noise. The runtime's fixed cost before any session
(50 configured connectors) was 84 / 92 KiB. Children: ratio 1.00 (same server, one process per
session, no extra launcher process). No child process was left after close in any run.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client, StdioServerParameters

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import StdioTarget

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "lifecycle_server.py"
KINDS = ("patchbay", "sdk")
_KIB = 1024
_CONNECT_TIMEOUT = 600.0  # 50 Python servers starting on 2 busy vCPUs
_CHILD_GONE_TIMEOUT = 15.0
_RUN_TIMEOUT = 900.0

OpenMore = Callable[[int], Awaitable[None]]
"""``open_more(n)``: open sessions until ``n`` are open, calling ``echo`` once on each new one."""


@contextlib.asynccontextmanager
async def patchbay_sessions(most: int, home: Path, parallel: int) -> AsyncIterator[OpenMore]:
    """A Runtime with ``most`` lazy stdio connectors (none connected yet); yields ``open_more``."""
    settings = Settings(home=home, connect_timeout=_CONNECT_TIMEOUT, idle_timeout=3600)
    servers = tuple(
        RuntimeServer(
            connector_id=f"idle-{index}",
            name=f"s{index}",
            target=StdioTarget(command=sys.executable, args=(str(FIXTURE),)),
            global_grants={"echo": "allow"},
        )
        for index in range(most)
    )
    limiter = anyio.CapacityLimiter(parallel)
    opened = 0
    async with Runtime(RuntimeConfig(project_id="idle", workspace=str(home), servers=servers), settings=settings) as rt:

        async def call(index: int) -> None:
            async with limiter:
                await rt.call(f"mcp.s{index}.echo", {"text": "hi"})

        async def open_more(n: int) -> None:
            nonlocal opened
            async with anyio.create_task_group() as group:
                for index in range(opened, n):
                    group.start_soon(call, index)
            opened = n

        yield open_more


@contextlib.asynccontextmanager
async def sdk_sessions(most: int, home: Path, parallel: int) -> AsyncIterator[OpenMore]:
    """Up to ``most`` tasks, each holding its own bare ``Client`` open; yields ``open_more``."""
    settings = Settings(home=home)
    params = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
    limiter = anyio.CapacityLimiter(parallel)
    stop = anyio.Event()
    opened = 0

    async def session(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with AsyncExitStack() as stack:
            async with limiter:  # held while connecting and calling, not while idle
                client = await stack.enter_async_context(
                    Client(params, mode=settings.protocol_mode, read_timeout_seconds=settings.request_timeout)
                )
                await client.call_tool("echo", {"text": "hi"})
            task_status.started()
            await stop.wait()

    async with anyio.create_task_group() as sessions:

        async def open_more(n: int) -> None:
            nonlocal opened
            async with anyio.create_task_group() as starting:
                for _ in range(opened, n):
                    starting.start_soon(sessions.start, session)
            opened = n

        try:
            yield open_more
        finally:
            stop.set()


OPENERS = {"patchbay": patchbay_sessions, "sdk": sdk_sessions}


def _children() -> list[psutil.Process]:
    """Every descendant process of this one (the servers; the SDK spawns them directly)."""
    return psutil.Process().children(recursive=True)


def _memory(processes: list[psutil.Process]) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) in bytes over ``processes`` that still exist."""
    rss = pss = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            info = process.memory_full_info()
            rss += info.rss
            pss += info.pss
    return rss, pss


async def measure(kind: str, sizes: list[int], parallel: int, settle: float) -> dict[str, Any]:
    """The measurements of one kind in this process (see the module docstring), JSON-able."""
    me = psutil.Process()
    opener = OPENERS[kind]
    rows = []
    with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as home:
        async with opener(1, Path(home) / "warmup", parallel) as open_more:
            await open_more(1)
        gc.collect()
        empty = me.memory_info().rss
        async with opener(max(sizes), Path(home) / "run", parallel) as open_more:
            gc.collect()
            base = me.memory_info().rss
            for n in sorted(sizes):
                await open_more(n)
                await anyio.sleep(settle)
                gc.collect()
                client = me.memory_info().rss
                children = _children()
                child_rss, child_pss = _memory(children)
                rows.append(
                    {
                        "n": n,
                        "client_growth_kib": (client - base) / _KIB,
                        "children": len(children),
                        "child_rss_kib": child_rss / _KIB,
                        "child_pss_kib": child_pss / _KIB,
                    }
                )
            identities = [(child.pid, child.create_time()) for child in children]
        _gone, alive = await anyio.to_thread.run_sync(lambda: psutil.wait_procs(children, timeout=_CHILD_GONE_TIMEOUT))
    return {
        "kind": kind,
        "fixed_kib": (base - empty) / _KIB,
        "rows": rows,
        "leftover": [process.pid for process in alive],
        "child_ids": identities,
    }


def _still_running(identities: list[list[float]]) -> list[int]:
    """The pids of ``(pid, create_time)`` that name a live (non-zombie) process still."""
    running = []
    for pid, created in identities:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(int(pid))
            if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
                running.append(int(pid))
    return running


def run_one(kind: str, sizes: list[int], parallel: int, settle: float) -> dict[str, Any]:
    """Run :func:`measure` in a fresh interpreter; check afterwards that its children are gone."""
    command = [sys.executable, __file__, "--one", kind, "--sizes", *map(str, sizes)]
    command += ["--parallel", str(parallel), "--settle", str(settle)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = process.communicate(timeout=_RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.terminate()  # its servers see stdin EOF and exit
        process.communicate()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"{kind}: the measuring process exited with {process.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["leftover_after_exit"] = _still_running(result.pop("child_ids"))
    return result


def report(sizes: list[int], parallel: int, settle: float) -> None:
    """Measure each kind in its own process and print the per-session table and the ratios."""
    print(
        f"idle stdio sessions (lifecycle_server.py), KiB per session; parallel connects {parallel}, settle {settle:g} s"
    )
    results = {kind: run_one(kind, sizes, parallel, settle) for kind in KINDS}
    header = f"{'N':>3}  {'kind':<9}{'children':>9}{'client/sess':>12}{'child RSS/sess':>15}{'child PSS/sess':>15}"
    print(header)
    print("-" * len(header))
    for index, n in enumerate(sorted(sizes)):
        for kind in KINDS:
            row = results[kind]["rows"][index]
            print(
                f"{n:>3}  {kind:<9}{row['children']:>9}{row['client_growth_kib'] / n:>12.1f}"
                f"{row['child_rss_kib'] / n:>15.0f}{row['child_pss_kib'] / n:>15.0f}"
            )
    print()
    print(f"{'N':>3}  {'patchbay/sdk':<12}{'client':>9}{'child RSS':>11}{'child PSS':>11}")
    for index, n in enumerate(sorted(sizes)):
        pb, sdk = results["patchbay"]["rows"][index], results["sdk"]["rows"][index]
        ratios = [
            pb[key] / sdk[key] if sdk[key] > 0 else float("nan")
            for key in ("client_growth_kib", "child_rss_kib", "child_pss_kib")
        ]
        print(f"{n:>3}  {'':<12}{ratios[0]:>9.2f}{ratios[1]:>11.2f}{ratios[2]:>11.2f}")
    print()
    for kind in KINDS:
        result = results[kind]
        leftover = result["leftover"] + result["leftover_after_exit"]
        print(
            f"{kind}: fixed cost before any session {result['fixed_kib']:.0f} KiB; "
            f"child processes left after close: {len(leftover)}{' ' + str(leftover) if leftover else ''}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description="RSS per idle stdio session, Patchbay vs bare SDK")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--parallel", type=int, default=4, help="sessions connecting at the same time")
    parser.add_argument("--settle", type=float, default=1.0, help="idle seconds before measuring")
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(anyio.run(measure, options.one, options.sizes, options.parallel, options.settle)))
    else:
        report(options.sizes, options.parallel, options.settle)


if __name__ == "__main__":
    main()
