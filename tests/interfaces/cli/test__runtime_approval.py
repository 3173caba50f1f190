"""`patchbay call` on a real terminal asks before an `ask` tool runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pexpect
import pytest

from tests.support.servers import fixture_server


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home"), "COLUMNS": "200", "TERM": "dumb"}
    target = fixture_server("recording_server.py", "--record", str(tmp_path / "calls.jsonl"))
    subprocess.run(
        ["patchbay", "connector", "add", "rec", "--", target.command, *target.args], env=environment, check=True
    )
    return environment


def spawn_call(env: dict[str, str], cwd: Path) -> pexpect.spawn:
    return pexpect.spawn(
        "patchbay",
        ["call", "mcp.rec.echo", '{"text": "from a terminal"}'],
        env=env,
        cwd=str(cwd),
        encoding="utf-8",
        timeout=60,
    )


def recorded(tmp_path: Path) -> list[dict]:
    path = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_answering_once_runs_the_call(env: dict[str, str], tmp_path: Path) -> None:
    child = spawn_call(env, tmp_path)
    child.expect(r"echo from connector rec wants to run \(risk: \w+\)")
    child.expect(r"Allow\? \[o\]nce, for this \[s\]ession, \[d\]eny")
    child.sendline("o")
    child.expect("from a terminal")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [c["tool"] for c in recorded(tmp_path)] == ["echo"]


def test_answering_deny_refuses_the_call_before_it_reaches_the_server(env: dict[str, str], tmp_path: Path) -> None:
    child = spawn_call(env, tmp_path)
    child.expect(r"Allow\?")
    child.sendline("d")
    child.expect(r"error\[permission_denied\]")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert recorded(tmp_path) == []


def test_the_end_of_input_at_the_question_is_a_denial_not_a_missing_terminal(
    env: dict[str, str], tmp_path: Path
) -> None:
    child = spawn_call(env, tmp_path)
    child.expect(r"Allow\?")
    child.sendeof()
    child.expect(r"end of input: denied")
    child.expect(r"error\[permission_denied\]")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "no terminal" not in (child.before or "")
    assert recorded(tmp_path) == []
