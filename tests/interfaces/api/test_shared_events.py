"""Two ``patchbay serve`` processes on one PostgreSQL store (separate data homes): a session opened
on the first calls a real peer (``mcp-server-time``), and its events are read back, verified, from
the second through REST and from the CLI of a third data home; ``/api/health`` names each instance."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import requests

from tests.support.postgres import postgres_schema
from tests.support.serve import serve_process

TIME = {"transport": "stdio", "command": "mcp-server-time"}


def test_a_session_called_through_one_instance_is_read_through_another(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with postgres_schema() as url:
        env = dict(os.environ, PATCHBAY_DATABASE_URL=url)
        with (
            serve_process(tmp_path / "a", workspace, env=env) as a,
            serve_process(tmp_path / "b", workspace, env=env) as b,
        ):
            assert a.info["instance"] != b.info["instance"]
            created = a.session.post(
                f"{a.url}/api/mcp/connectors", json={"name": "time", "target": TIME, "enabled": True}, timeout=60
            )
            assert created.status_code == 201, created.text
            opened = a.session.post(f"{a.url}/api/sessions", json={"cwd": str(workspace)}, timeout=60)
            assert opened.status_code == 201, opened.text
            sid = opened.json()["session_id"]
            called = a.session.post(
                f"{a.url}/api/sessions/{sid}/call",
                json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}, "approve": "once"},
                timeout=120,
            )
            assert called.status_code == 200, called.text
            # closing the session commits every event it logged
            assert a.session.delete(f"{a.url}/api/sessions/{sid}", timeout=60).status_code == 200

            first = b.session.get(f"{b.url}/api/sessions/{sid}/events", params={"limit": 3}, timeout=30)
            assert first.status_code == 200, first.text
            page = first.json()
            assert [e["seq"] for e in page["events"]] == [1, 2, 3] and page["has_more"]
            rest = b.session.get(
                f"{b.url}/api/sessions/{sid}/events", params={"after_seq": page["next_after_seq"]}, timeout=30
            ).json()
            events = page["events"] + rest["events"]
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1)) and not rest["has_more"]
            types = [e["type"] for e in events]
            assert "model.tool_call_requested" in types and "tool.completed" in types
            assert {e["instance"] for e in events} == {a.info["instance"]}
            assert all(e["sessionId"] == sid for e in events)
            assert not (tmp_path / "a" / "sessions" / f"{sid}.jsonl").exists()  # not in a file

            health = b.session.get(f"{b.url}/api/health", timeout=30).json()
            assert health == {
                "status": "ok",
                "instance": b.info["instance"],
                "database": {"backend": "postgresql", "ok": True},
                "coordination": {"backend": "in-process", "ok": True},
                "wakeups": {"backend": "local", "state": "ok"},
            }
            assert requests.get(f"{b.url}/api/health", timeout=30).json() == {"status": "ok"}

        done = subprocess.run(
            ["patchbay", "--home", str(tmp_path / "c"), "events", sid, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["events"] == events
        done = subprocess.run(
            ["patchbay", "--home", str(tmp_path / "c"), "events", sid, "--json", "--after-seq", "2", "--limit", "2"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert [e["seq"] for e in json.loads(done.stdout)["events"]] == [3, 4]
        done = subprocess.run(
            ["patchbay", "--home", str(tmp_path / "c"), "sessions", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        listed = json.loads(done.stdout)["sessions"]
        assert [(s["session_id"], s["events"], s["calls"], s["workspace"]) for s in listed] == [
            (sid, len(events), 1, str(workspace.resolve()))
        ]
