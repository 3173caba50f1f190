"""Runtimes over the recording fixture server (tests/fixtures/recording_server.py): its server
entries, its request records and the event types of a log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from patchbay import RuntimeConfig, RuntimeServer
from patchbay.core.models import StdioTarget
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "recording_server.py"


def recording(name: str, record: Path | None = None, *, page_size: int | None = None, **fields: Any) -> RuntimeServer:
    """A runtime entry for the recording server named ``name``; ``record``: where it writes each
    request it receives (one JSON line each); ``page_size``: tools per ``tools/list`` page."""
    args = [str(FIXTURE)]
    if record is not None:
        args += ["--record", str(record)]
    if page_size is not None:
        args += ["--page-size", str(page_size)]
    return RuntimeServer(
        connector_id=f"id-{name}", name=name, target=StdioTarget(command=sys.executable, args=tuple(args)), **fields
    )


def records(path: Path) -> list[dict[str, Any]]:
    """The requests a recording server wrote to ``path`` (none if it wrote nothing yet)."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def types_of(events: list[dict[str, Any]]) -> list[str]:
    """The ``type`` of each event, in order."""
    return [event["type"] for event in events]


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    """A runtime config of project ``p1`` in ``tmp_path`` with ``servers``."""
    return RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)
