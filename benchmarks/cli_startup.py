"""Start-up time of the CLI beside the time to import the MCP SDK.

Times, as wall clock of a fresh interpreter each, ``patchbay --help``, ``patchbay connector list``
(a data home with one connector, its store already at head) and ``python -c "import mcp"``,
interleaved run by run so drift (CPU frequency, other load) hits each alike, and prints the
median of each, its ratio to the SDK import (target: at most 0.8), and which of ``mcp``,
``fastapi``, ``uvicorn`` and ``alembic`` each command loaded. For where the time goes, run
``python -X importtime -m patchbay.interfaces.cli --help``. Prints a table, or one JSON line
with ``--json``.

Usage::

    .venv/bin/python benchmarks/cli_startup.py [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("mcp", "fastapi", "uvicorn", "alembic")
_CLI = f"""
import sys
from patchbay.interfaces.cli import main
sys.argv = ["patchbay", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
if __import__("os").environ.get("PATCHBAY_BENCH_REPORT"):
    print(",".join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)
"""


def _run(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _loaded(argv: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        argv,
        env={**env, "PATCHBAY_BENCH_REPORT": "1"},
        stdout=subprocess.DEVNULL,
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    line = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return [name for name in line.split(",") if name]


def main() -> None:
    parser = argparse.ArgumentParser(description="CLI start-up vs `import mcp` (median wall clock)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as tmp:
        home = str(Path(tmp) / "home")
        env = dict(os.environ)
        cli = [sys.executable, "-c", _CLI, "--home", home]
        add = [*cli, "connector", "add", "bench", "--", sys.executable, "-c", "pass"]
        subprocess.run(add, env=env, stdout=subprocess.DEVNULL, check=True)  # the store is at head from here on
        commands = {
            "import mcp": [sys.executable, "-c", "import mcp"],
            "patchbay --help": [*cli, "--help"],
            "patchbay connector list": [*cli, "connector", "list"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the file cache and the bytecode
            _run(argv, env)
        for index in range(options.runs):
            names = list(commands)
            names = names[index % len(names) :] + names[: index % len(names)]  # rotate who goes first
            for name in names:
                times[name].append(_run(commands[name], env))
        loaded = {name: _loaded(argv, env) for name, argv in commands.items() if name != "import mcp"}
    sdk = statistics.median(times["import mcp"])
    report = {
        "runs": options.runs,
        **{f"{name} median_ms": round(statistics.median(values) * 1000, 1) for name, values in times.items()},
        **{f"{name} ratio": round(statistics.median(times[name]) / sdk, 3) for name in loaded},
        **{f"{name} loads": names for name, names in loaded.items()},
    }
    if options.json:
        print(json.dumps(report))
        return
    print(f"{'command':<26} {'median ms':>10} {'vs import mcp':>14}  loads")
    for name, values in times.items():
        ratio = statistics.median(values) / sdk
        print(
            f"{name:<26} {statistics.median(values) * 1000:>10.1f} {ratio:>13.2f}x  {', '.join(loaded.get(name, [])) or '-'}"
        )


if __name__ == "__main__":
    main()
