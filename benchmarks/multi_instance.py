"""Two ``patchbay serve`` instances on one PostgreSQL and one Redis against one, side by side.

Starts two real ``patchbay serve`` processes (each with a data home of its own, built-in
connectors off) on a fresh schema of one PostgreSQL database and a fresh key prefix of one Redis,
registers the connector ``bench`` (``benchmarks/call_server.py`` over stdio, every tool allowed)
through the first, probes it, and opens one session on each instance. Then, for each operation:

* ``list``: ``GET /api/mcp/connectors``;
* ``call``: ``POST /api/sessions/{id}/call`` of ``mcp.bench.echo`` (``{"text": "hello"}``), each
  instance calling through its own session (sticky, as a load balancer routes a session);

it measures two deployments with the same ``httpx2.AsyncClient`` (keep-alive):

* ``one``: every request to instance A;
* ``two``: requests alternate between A and B, as a round-robin load balancer sends them.

Latency: ``--iterations`` requests one at a time (after ``--warmup``), one and two interleaved
request by request so drift hits both alike: p50 and p99 in ms. Throughput: ``--concurrency``
workers send ``--requests`` requests as fast as they are answered: requests per second. Both
instances share this machine's cores with the client and with PostgreSQL and Redis, so ``two``
shows what a second instance costs or gains here, not on separate hosts.

Prints one JSON line: ``{"<op>_<deployment>_p50_ms", "<op>_<deployment>_p99_ms",
"<op>_<deployment>_rps", ..., "iterations", "requests", "concurrency"}`` for op ``list``/``call``
and deployment ``one``/``two``.

Usage::

    .venv/bin/python benchmarks/multi_instance.py [--iterations 300] [--warmup 30]
        [--requests 600] [--concurrency 8]
        [--database-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
        [--redis-url redis://127.0.0.1:6379/0]

The database URL (default ``PATCHBAY_TEST_POSTGRES_URL``, else the machine's test database) must
let the user create a schema; the schema and every Redis key under the prefix are removed at the
end.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import redis
from sqlalchemy import create_engine, text

HERE = Path(__file__).resolve().parent
CALL_SERVER = HERE / "call_server.py"
DEFAULT_DATABASE = os.environ.get("PATCHBAY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
CALL = {"tool": "mcp.bench.echo", "arguments": {"text": "hello"}}


@dataclass
class Instance:
    """One running ``patchbay serve``: its URL, token, and (once opened) its session."""

    url: str
    token: str
    process: subprocess.Popen[str]
    session_id: str = ""


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextlib.contextmanager
def _schema(database_url: str) -> Iterator[str]:
    """A store URL on a new schema of ``database_url``; the schema is dropped on exit."""
    admin = create_engine(database_url, connect_args={"connect_timeout": 3})
    schema = f"patchbay_bench_{uuid.uuid4().hex[:12]}"
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in database_url else "?"
    try:
        yield f"{database_url}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@contextlib.contextmanager
def _prefix(redis_url: str) -> Iterator[str]:
    """A Redis key prefix of its own; every key under it is deleted on exit."""
    prefix = f"patchbay-bench:{uuid.uuid4().hex}:"
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url(redis_url, socket_timeout=2)
        try:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


@contextlib.contextmanager
def _serve(home: Path, env: dict[str, str]) -> Iterator[Instance]:
    """``patchbay --home HOME serve --port 0 --json`` until the block ends (then SIGINT)."""
    process = subprocess.Popen(
        ["patchbay", "--home", str(home), "serve", "--port", "0", "--json"],
        cwd=home.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.rstrip() == "}":
                break
        info = json.loads("".join(lines))
        yield Instance(url=info["url"], token=info["token"], process=process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _checked(response: httpx2.Response, status: int = 200) -> Any:
    if response.status_code != status:
        raise SystemExit(f"{response.request.method} {response.request.url}: {response.status_code} {response.text}")
    return response.json()


def _auth(instance: Instance) -> dict[str, str]:
    return {"Authorization": f"Bearer {instance.token}"}


async def _setup(client: httpx2.AsyncClient, a: Instance, b: Instance, workspace: Path) -> None:
    body = {
        "name": "bench",
        "target": {"transport": "stdio", "command": sys.executable, "args": [str(CALL_SERVER)]},
        "enabled": True,
    }
    _checked(await client.post(f"{a.url}/api/mcp/connectors", json=body, headers=_auth(a)), 201)
    settings = {"revision": 1, "approval_mode": "allow_all"}
    _checked(await client.put(f"{a.url}/api/mcp/connectors/bench/settings", json=settings, headers=_auth(a)))
    report = _checked(await client.post(f"{b.url}/api/mcp/connectors/bench/probe", headers=_auth(b)))
    if report["state"] != "ready":
        raise SystemExit(f"probe through B: {report}")
    for instance in (a, b):
        opened = _checked(
            await client.post(f"{instance.url}/api/sessions", json={"cwd": str(workspace)}, headers=_auth(instance)),
            201,
        )
        instance.session_id = opened["session_id"]


async def _request(client: httpx2.AsyncClient, op: str, instance: Instance) -> None:
    if op == "list":
        response = await client.get(f"{instance.url}/api/mcp/connectors", headers=_auth(instance))
    else:
        response = await client.post(
            f"{instance.url}/api/sessions/{instance.session_id}/call", json=CALL, headers=_auth(instance)
        )
    _checked(response)


async def _latency(
    client: httpx2.AsyncClient, op: str, deployments: dict[str, list[Instance]], iterations: int, warmup: int
) -> dict[str, list[float]]:
    cycles = {name: itertools.cycle(instances) for name, instances in deployments.items()}
    samples: dict[str, list[float]] = {name: [] for name in deployments}
    names = list(deployments)
    for i in range(warmup + iterations):
        for name in names[i % len(names) :] + names[: i % len(names)]:  # rotate which goes first
            started = time.perf_counter()
            await _request(client, op, next(cycles[name]))
            if i >= warmup:
                samples[name].append((time.perf_counter() - started) * 1000)
    return samples


async def _throughput(
    client: httpx2.AsyncClient, op: str, instances: list[Instance], requests: int, concurrency: int
) -> float:
    targets = itertools.cycle(instances)
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await _request(client, op, next(targets))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    return requests / (time.perf_counter() - started)


async def run(a: Instance, b: Instance, workspace: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Set up the connector and sessions, then time every op on both deployments."""
    limits = httpx2.Limits(max_connections=args.concurrency * 2, max_keepalive_connections=args.concurrency * 2)
    results: dict[str, Any] = {
        "iterations": args.iterations,
        "requests": args.requests,
        "concurrency": args.concurrency,
    }
    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
        await _setup(client, a, b, workspace)
        deployments = {"one": [a], "two": [a, b]}
        for op in ("list", "call"):
            samples = await _latency(client, op, deployments, args.iterations, args.warmup)
            for name, instances in deployments.items():
                results[f"{op}_{name}_p50_ms"] = round(_quantile(samples[name], 0.5), 3)
                results[f"{op}_{name}_p99_ms"] = round(_quantile(samples[name], 0.99), 3)
                rps = await _throughput(client, op, instances, args.requests, args.concurrency)
                results[f"{op}_{name}_rps"] = round(rps, 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="patchbay-bench-") as tmp,
        _schema(args.database_url) as database,
        _prefix(args.redis_url) as prefix,
    ):
        root = Path(tmp)
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PATCHBAY_BUILTINS": "off",
            "PATCHBAY_DATABASE_URL": database,
            "PATCHBAY_REDIS_URL": args.redis_url,
            "PATCHBAY_REDIS_PREFIX": prefix,
        }
        with _serve(root / "a", env) as a, _serve(root / "b", env) as b:
            results = anyio.run(run, a, b, root, args)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
