"""The README's quick start, run for real: its `patchbay` steps in a shell, as a user would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.events import CALL_CHAIN
from tests.support.paths import REPO

VENV_BIN = Path(sys.executable).parent


def quickstart_patchbay_steps() -> list[str]:
    """The `patchbay ...` steps of the README's terminal walkthrough: its "Command line" section
    installs once in its first command and uses Patchbay in its second, which installs nothing
    (the quick start itself runs `patchbay serve`, tests/interfaces/cli/test_serve.py)."""
    readme = (REPO / "README.md").read_text()
    install, use = re.findall(r"```bash\n(.*?)```", readme.split("## Command line", 1)[1], re.S)[:2]
    assert "pip install" in install and "patchbay " not in install
    assert "pip install" not in use and "venv" not in use.replace(".venv/bin", "")
    steps = [step.strip() for step in use.strip().split("&&")]
    return [s for s in steps if s.startswith("patchbay ")]


def test_readme_quick_start_prints_the_time_and_logs_the_whole_chain(tmp_path: Path) -> None:
    steps = quickstart_patchbay_steps()
    assert [s.split()[1] for s in steps] == ["connector", "probe", "call"]
    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home"), "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    # The README refers to "$PWD/.venv/bin/..."; here the venv is whichever runs the tests.
    script = " && ".join(steps).replace('"$PWD/.venv/bin/', f'"{VENV_BIN}/')
    for _ in range(2):  # the quick start must stay true when run again
        done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout[done.stdout.index("{") :])
        assert answer["timezone"] == "Europe/Paris"
    session_id = re.search(r"patchbay events (\S+)", done.stderr).group(1)
    events = subprocess.run(
        ["patchbay", "events", session_id, "--json"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    types = [e["type"] for e in json.loads(events.stdout)["events"] if not e["type"].startswith("mcp.server.")]
    assert types == CALL_CHAIN


def test_readme_library_example_runs(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    example = re.findall(r"```python\n(.*?)```", readme.split("## Library", 1)[1], re.S)[0]
    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home"), "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["patchbay", "connector", "add", "time", "--", "mcp-server-time"], env=env, check=True, timeout=60)
    done = subprocess.run(
        [sys.executable, "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["timezone"] == "Asia/Tokyo"
