"""Control-plane scale: mutations and the workspace snapshot with many connectors and cached tools.

Builds ``--connectors`` stdio connectors with ``--tools`` cached tools each in a temporary data home
(straight through the store, in a few transactions), registers ``--projects`` workspaces as
projects, then times mutations end to end through
:class:`~patchbay.control.connectors.ConnectorService`: the store write, the re-projection of the
sealed snapshots (every workspace for a global change, one for a project grant) and the committed
listeners. Each mutation runs ``--repeat`` times, alternating so every run changes something; the
first projection (a cold start of the process) is timed on its own. Prints one JSON line::

    {"connectors", "tools", "projects", "build_s", "first_projection_ms", "mutations": {"toggle":
     {"p50_ms", "max_ms"}, "grant": ..., "project_grant": ..., "settings": ...}, "snapshot_bytes",
     "written", "bare": {"mac_ms", "write_ms"}}

``snapshot_bytes`` is the size of one workspace's file on disk (None when it was not written:
``written`` then holds the projection's reason). ``bare`` is the floor under one snapshot's
write, measured in the same run on the same bytes and file system (p50 of ``--repeat``):
``mac_ms`` one HMAC-SHA-256 over them, ``write_ms`` a plain ``open``/``write``/``fsync``/
``rename``/``fsync`` of the directory.

Usage::

    .venv/bin/python benchmarks/control_scale.py [--connectors 1000] [--tools 100] [--projects 1] [--repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.fingerprint import config_fingerprint
from patchbay.core.models import ConnectorSettings, StdioTarget, ToolCacheEntry, ToolSummary
from patchbay.core.settings import Settings
from patchbay.runtime.snapshot import snapshot_path


def _tools(count: int) -> tuple[ToolSummary, ...]:
    """A catalog shaped like a real server's: a sentence of description, a few typed arguments."""
    return tuple(
        ToolSummary(
            name=f"tool_{index:03d}",
            description=f"Does thing number {index} to the repository and reports what changed, in plain text.",
            input_schema={
                "type": "object",
                "properties": {
                    "repo_path": {"type": "string", "description": "Path to the repository"},
                    "max_count": {"type": "integer", "default": 10, "description": "How many entries"},
                    "mode": {"type": "string", "enum": ["short", "full"]},
                },
                "required": ["repo_path"],
            },
            annotations={"readOnlyHint": index % 3 == 0, "destructiveHint": index % 7 == 0},
        )
        for index in range(count)
    )


def build(service: ConnectorService, connectors: int, tools: int) -> None:
    repo = service.repository
    items = [
        {
            "name": f"c{index:04d}",
            "display_name": f"Connector {index}",
            "target": StdioTarget(command="/usr/bin/true", args=("--serve", str(index))),
            "settings": ConnectorSettings(),
        }
        for index in range(connectors)
    ]
    catalog = _tools(tools)
    now = int(time.time() * 1000)
    for created in repo.connectors.create_many(items):
        repo.tool_cache.replace(
            ToolCacheEntry(
                connector_id=created.connector_id,
                config_revision=created.revision,
                fingerprint=config_fingerprint(created.target, auth_type="none"),
                tools=catalog,
                fetched_at=now,
                expires_at=now + 86_400_000,
            )
        )


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def _p50(action: Callable[[], Any], repeat: int) -> float:
    return round(statistics.median(_timed(action) for _ in range(repeat)), 1)


def bare(data: bytes, directory: Path, repeat: int) -> dict[str, float]:
    """What one snapshot's bytes cost with nothing of Patchbay around them: the MAC and a durable
    replace (the same steps :func:`patchbay.adapters.atomic.replace_file` takes)."""
    key = os.urandom(32)
    directory.mkdir()
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)

    def write() -> None:
        fd = os.open(directory / "bare.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(directory / "bare.tmp", directory / "bare.json")
        os.fsync(dir_fd)

    try:
        write()  # the first one creates the file the others replace, as a projection does
        return {
            "mac_ms": _p50(lambda: hmac.new(key, data, hashlib.sha256).hexdigest(), repeat),
            "write_ms": _p50(write, repeat),
        }
    finally:
        os.close(dir_fd)


def run(connectors: int, tools: int, repeat: int, projects: int = 1) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="patchbay-scale-") as tmp:
        home = Path(tmp) / "home"
        workspaces = [Path(tmp) / f"workspace{index}" for index in range(projects)]
        workspace = workspaces[0]
        for path in workspaces:
            path.mkdir()
        settings = Settings(home=home)
        repo = open_store(settings)
        try:
            service = ConnectorService(repo, settings)
            start = time.perf_counter()
            build(service, connectors, tools)
            build_s = time.perf_counter() - start
            project = service.queries.project(workspace)
            for path in workspaces[1:]:
                service.queries.project(path)
            first = _timed(lambda: service.projector.reproject())
            name = f"c{connectors // 2:04d}"
            mutations: dict[str, Callable[[int], Any]] = {
                "toggle": lambda i: service.set_enabled(name, i % 2 == 1),
                "grant": lambda i: service.grant(name, "tool_001", ("allow", "deny")[i % 2]),
                "project_grant": lambda i: service.grant(name, "tool_002", ("allow", "ask")[i % 2], project=workspace),
                "settings": lambda i: service.update_settings(name, approval_mode=("allow_all", "ask")[i % 2]),
            }
            figures: dict[str, dict[str, float]] = {}
            for label, mutate in mutations.items():
                samples = [_timed(lambda i=i, mutate=mutate: mutate(i)) for i in range(repeat)]
                figures[label] = {"p50_ms": round(statistics.median(samples), 1), "max_ms": round(max(samples), 1)}
            report = service.last_projection
            path = snapshot_path(project.path)
            written: bool | str = bool(report and report.written)
            if not written and report is not None:
                written = "; ".join(w.message for w in report.skipped) or str(report.error)
            return {
                "connectors": connectors,
                "tools": tools,
                "projects": projects,
                "build_s": round(build_s, 1),
                "first_projection_ms": round(first, 1),
                "mutations": figures,
                "snapshot_bytes": path.stat().st_size if written is True else None,
                "written": written,
                "bare": bare(path.read_bytes(), Path(tmp) / "bare", repeat) if written is True else None,
            }
        finally:
            repo.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=1000)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--projects", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.connectors, args.tools, args.repeat, args.projects)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
