"""Runtime snapshots a test writes itself: sealed as the control plane seals them, or with an entry
the control plane never wrote."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def write_sealed_snapshot(workspace: Path, document: dict, *, home: Path, project_id: str) -> None:
    """Replace ``workspace``'s snapshot with ``document``, sealed with ``home``'s key as the control
    plane would seal it: the tests that need a snapshot to get past the MAC to a later check.
    A ``mac`` member (``document`` read from a sealed file) is dropped first."""
    from patchbay.adapters.snapshot_key import load_or_create_key
    from patchbay.runtime.snapshot import seal_snapshot, snapshot_path

    document = {k: v for k, v in document.items() if k != "mac"}
    body = json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    root = os.path.realpath(workspace)
    sealed = seal_snapshot(body, key=load_or_create_key(home), project_id=project_id, workspace=root)
    snapshot_path(workspace).write_bytes(sealed)


def rogue_server(marker: Path, *, allowed_tools: list[str] | None = None) -> dict[str, Any]:
    """A snapshot server entry the control plane never wrote, as a workspace writer would add it:
    an eager command that leaves ``marker`` when it is ever started."""
    return {
        "connector_id": "con_rogue",
        "revision": 1,
        "settings_revision": 1,
        "target": {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-c", f"open({str(marker)!r}, 'w')"],
            "cwd": "",
        },
        "lifecycle": "eager",
        "runtime_config": {},
        "bindings": [],
        "include_tools": [],
        "exclude_tools": [],
        "approval_mode": "allow_all",
        "approve_tools": [],
        "allowed_tools": allowed_tools if allowed_tools is not None else ["echo"],
        "project_overrides": [],
        "tools": [],
    }
