"""Run the official MCP client conformance suite against Patchbay and judge every scenario.

Usage (from the repository root, after ``npm ci``)::

    .venv/bin/python tests/conformance/run_suite.py                     # all 26 client scenarios
    .venv/bin/python tests/conformance/run_suite.py --scenario sse-retry  # one scenario
    .venv/bin/python tests/conformance/run_suite.py --json -o results/conformance

It runs ``@modelcontextprotocol/conformance`` (pinned in package.json; its ``dist`` needs Node >= 22,
which the pinned npm package ``node`` provides as ``node_modules/node/bin/node``; the system node
is left alone) as::

    node22 -r tests/fixtures/loopback-only.cjs node_modules/@modelcontextprotocol/conformance/dist/index.js \\
        client --command "<python> <abs path>/tests/conformance/patchbay_client.py" --suite all -o <outdir>

The preload keeps every scenario server on 127.0.0.1 (they call ``listen(port)`` with no host);
while the harness runs, the listening sockets of its whole process tree are sampled and any that
is not on a loopback address fails the run. The harness splits ``--command`` on single spaces and
runs it with a shell, so neither path may contain whitespace.

Judging (the harness's own suite summary ignores exit codes and timeouts, so it is redone here from
``<outdir>/<scenario>-<time>/{checks.json,stdout.txt,stderr.txt}``): a scenario passes when its
checks have no FAILURE and no WARNING, at least one SUCCESS, and the driver printed its success
line (``patchbay-conformance: ok``), except for the scenarios where the suite allows the client to
fail (:data:`CLIENT_ERROR_ALLOWED`) -- but never when the driver said it does not support the
scenario. A scenario of the suite without results fails.

Output: one line per scenario on stderr as soon as the harness saved its results (``PASS  name
(checks; client ...)``, with the first problem of a failure; ``-q`` turns them off), then the
table (or ``--json``) on stdout. ``client: failed`` with verdict ``PASS`` appears for the scenarios
of :data:`EXPECTED_CLIENT_FAILURES` only: there the right client gives up, and the table says why.

``sse-retry`` measures the client's reconnect delay (450-700 ms) and runs late when 26 scenarios
start at once on a small machine (notes/mcp-sdk-2.3-client.md §2.4), so when it fails in a
multi-scenario run it is re-run once on its own; the output says so.

Exit status: 0 every scenario passed, 1 some failed (or a listener was not on loopback),
2 the suite cannot run (Node 22 or the conformance package missing, a path with spaces).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

try:
    from tests.conformance.loopback_watch import ListenerWatch
except ModuleNotFoundError:  # run as a script (scripts/conformance): its own directory is on sys.path
    from loopback_watch import ListenerWatch

REPO = Path(__file__).resolve().parents[2]
NODE22 = REPO / "node_modules" / "node" / "bin" / "node"
"""Node 22 from the pinned npm package ``node`` (its preinstall links the binary here)."""
CONFORMANCE = REPO / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
PRELOAD = REPO / "tests" / "fixtures" / "loopback-only.cjs"
DRIVER = Path(__file__).resolve().with_name("patchbay_client.py")

MARKER = "patchbay-conformance:"
"""The driver's verdict prefix (see patchbay_client.py)."""

EXPECTED_CLIENT_FAILURES: dict[str, str] = {
    "auth/scope-retry-limit": (
        "the server answers every token with 403 insufficient_scope; a correct client re-authorizes "
        "a bounded number of times, then gives up (the checks count its attempts)"
    ),
    "auth/resource-mismatch": (
        "the protected-resource metadata names another resource than the server's URL; a correct "
        "client refuses to authorize there and fails to connect (the checks see no authorization request)"
    ),
}
"""Scenarios whose right outcome is a client that gives up: why the client fails there. The suite
marks them ``allowClientError``; the checks judge how the client gave up."""

CLIENT_ERROR_ALLOWED = frozenset(EXPECTED_CLIENT_FAILURES)
"""Scenarios where the suite accepts a client that gives up with a non-zero exit."""

RETRY_SOLO = frozenset({"sse-retry"})
"""Timing-sensitive scenarios re-run once on their own when they fail in a parallel run."""

DEFAULT_TIMEOUT_MS = 90_000
"""The harness's per-scenario client timeout. Its own default is 30 s, but the suite starts all 26
clients at once, and each Patchbay client spends about 1.3 s of CPU on imports alone: on a
two-core machine the last ones reach their server 20-40 s after the start. The timeout only stops
a hung client; no check measures it."""

HARNESS_DEADLINE_S = 600.0
"""Wall-clock bound on one harness run (the whole suite takes well under a minute)."""

_RESULT_DIR = re.compile(r"^(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_SCENARIO_LINE = re.compile(r"^\s+-\s+(?P<name>\S+)")
_RESULTS_SAVED = re.compile(r"^Results saved to (?P<path>.+?)\s*$")
"""The harness's line once a scenario's checks.json, stdout.txt and stderr.txt are written."""


class SuiteUnavailable(Exception):
    """The suite cannot run here (exit status 2)."""


@dataclass
class ScenarioResult:
    """The judged outcome of one scenario.

    Attributes:
        scenario: e.g. ``sse-retry``, ``auth/metadata-default``.
        passed / failed / warnings / info: counts of SUCCESS / FAILURE / WARNING / INFO checks.
        client: the driver's verdict: ``ok``, ``failed`` or ``none`` (no verdict line: it crashed
            or was killed at the timeout).
        client_message: the driver's failure line, if any.
        problems: why the scenario did not pass (failing and warning checks, client failure).
        ok: the verdict.
        result_dir: where the harness saved checks.json, stdout.txt and stderr.txt.
        note: e.g. that the scenario was re-run solo.
    """

    scenario: str
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    info: int = 0
    client: str = "none"
    client_message: str = ""
    problems: list[str] = field(default_factory=list)
    ok: bool = False
    result_dir: str | None = None
    note: str = ""


@dataclass
class Report:
    """One run of the runner: every scenario's result, the listeners seen, where results are."""

    results: list[ScenarioResult]
    output_dir: str
    duration_seconds: float
    listeners_seen: int = 0
    non_loopback_listeners: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results) and not self.non_loopback_listeners

    def result(self, scenario: str) -> ScenarioResult | None:
        return next((r for r in self.results if r.scenario == scenario), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "output_dir": self.output_dir,
            "duration_seconds": self.duration_seconds,
            "listeners_seen": self.listeners_seen,
            "non_loopback_listeners": self.non_loopback_listeners,
            "notes": self.notes,
            "scenarios": [asdict(r) for r in self.results],
        }


# -- running the harness ----------------------------------------------------------------------


def check_installed() -> None:
    """Raises :class:`SuiteUnavailable` naming what ``npm ci`` should have installed."""
    for path, what in ((NODE22, "Node 22 (npm package `node`)"), (CONFORMANCE, "@modelcontextprotocol/conformance")):
        if not path.exists():
            raise SuiteUnavailable(f"{what} is not installed ({path} missing); run `npm ci` in {REPO}")


def driver_command(python: str) -> str:
    """The ``--command`` string; the harness splits it on single spaces, so no path may have one.

    Raises:
        SuiteUnavailable: a path contains whitespace.
    """
    for path in (python, str(DRIVER)):
        if any(ch.isspace() for ch in path):
            raise SuiteUnavailable(f"the conformance harness cannot run a path with whitespace: {path!r}")
    return f"{python} {DRIVER}"


def harness_argv(
    python: str, output_dir: Path, *, scenario: str | None = None, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> list[str]:
    """The harness command line: one ``scenario``, or the whole client suite (``--suite all``)."""
    selection = ["--scenario", scenario] if scenario else ["--suite", "all"]
    return [
        str(NODE22),
        "-r",
        str(PRELOAD),
        str(CONFORMANCE),
        "client",
        "--command",
        driver_command(python),
        *selection,
        "--timeout",
        str(timeout_ms),
        "-o",
        str(output_dir),
    ]


def suite_scenarios(side: str = "client") -> list[str]:
    """Every ``side`` scenario the pinned suite has (``conformance list --client``, or
    ``--server`` for the scenarios that test a server)."""
    check_installed()
    listed = subprocess.run(
        [str(NODE22), str(CONFORMANCE), "list", f"--{side}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [m["name"] for line in listed.stdout.splitlines() if (m := _SCENARIO_LINE.match(line))]


def _kill_group(process: subprocess.Popen) -> None:
    """Stop the harness's process group: the harness, and any client it left behind at a timeout."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _copy_output(stream: Any, log: Any, on_result: Callable[[Path], None] | None) -> None:
    """Copy the harness's output to its log line by line; hand each saved result dir to ``on_result``."""
    for raw in iter(stream.readline, b""):
        log.write(raw)
        log.flush()
        saved = _RESULTS_SAVED.match(raw.decode("utf-8", errors="replace"))
        if saved and on_result is not None:
            with contextlib.suppress(Exception):  # a progress line must never stop the run
                on_result(Path(saved["path"]))


def run_harness(
    argv: Sequence[str], log_path: Path, on_result: Callable[[Path], None] | None = None
) -> tuple[int, ListenerWatch]:
    """Run the harness (own process group, output to ``log_path``); sample its listeners meanwhile.

    ``on_result(result_dir)`` is called (from a reader thread) as each scenario's results are
    saved. Every process of its group is killed afterwards (the harness kills only the shell of a
    client that timed out). Returns the harness's exit status and the listener watch.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            list(argv),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        reader = threading.Thread(target=_copy_output, args=(process.stdout, log, on_result), daemon=True)
        reader.start()
        try:
            with ListenerWatch(process.pid) as watch:
                returncode = process.wait(timeout=HARNESS_DEADLINE_S)
        except subprocess.TimeoutExpired:
            returncode = -1
        finally:
            _kill_group(process)
            process.wait()
            reader.join(timeout=30)  # the pipe closes once the whole group is gone
            process.stdout.close()  # type: ignore[union-attr]
    return returncode, watch


# -- judging ----------------------------------------------------------------------------------


def _scenario_of(result_dir: Path, root: Path) -> str | None:
    match = _RESULT_DIR.match(result_dir.relative_to(root).as_posix())
    return match["scenario"] if match else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def judge(scenario: str, result_dir: Path) -> ScenarioResult:
    """Judge one scenario from the files the harness saved in ``result_dir``."""
    result = ScenarioResult(scenario=scenario, result_dir=str(result_dir))
    try:
        checks = json.loads((result_dir / "checks.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        result.problems.append(f"no readable checks.json ({type(exc).__name__})")
        checks = []
    for check in checks:
        status = check.get("status")
        if status == "SUCCESS":
            result.passed += 1
        elif status == "FAILURE":
            result.failed += 1
        elif status == "WARNING":
            result.warnings += 1
        elif status == "INFO":
            result.info += 1
        if status in ("FAILURE", "WARNING"):
            why = check.get("errorMessage") or check.get("description") or ""
            result.problems.append(f"{status} {check.get('id', '?')}: {' '.join(str(why).split())[:300]}")
    stdout, stderr = _read(result_dir / "stdout.txt"), _read(result_dir / "stderr.txt")
    if any(line.startswith(f"{MARKER} ok") for line in stdout.splitlines()):
        result.client = "ok"
    else:
        failures = [line for line in stderr.splitlines() if line.startswith(f"{MARKER} FAILED")]
        result.client = "failed" if failures else "none"
        result.client_message = failures[-1] if failures else " ".join(stderr.split()[-40:])
    # A driver that does not support the scenario never ran it, whatever the checks say.
    unsupported = f"{MARKER} FAILED {scenario}: not supported:" in result.client_message
    client_fine = result.client == "ok" or (scenario in CLIENT_ERROR_ALLOWED and not unsupported)
    if not client_fine:
        what = result.client_message or "the client printed no verdict (crashed or timed out)"
        result.problems.append(f"client: {what[:500]}")
    if checks and result.passed == 0 and not result.failed and not result.warnings:
        result.problems.append("no SUCCESS check")
    result.ok = bool(checks) and result.passed > 0 and not result.failed and not result.warnings and client_fine
    return result


def collect(root: Path, expected: Iterable[str]) -> list[ScenarioResult]:
    """Judge every scenario with results under ``root``; an expected scenario without results fails.

    A scenario with several result directories (should not happen) is judged by the latest.
    """
    found: dict[str, Path] = {}
    for checks in sorted(root.rglob("checks.json")):
        scenario = _scenario_of(checks.parent, root)
        if scenario is not None:
            found[scenario] = checks.parent
    results = {name: judge(name, path) for name, path in found.items()}
    for name in expected:
        if name not in results:
            results[name] = ScenarioResult(scenario=name, problems=["no results: the harness did not run it"])
    order = {name: i for i, name in enumerate(expected)}
    return sorted(results.values(), key=lambda r: (order.get(r.scenario, len(order)), r.scenario))


def run(
    *,
    scenario: str | None = None,
    output_dir: Path | None = None,
    python: str = sys.executable,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    retry_solo: bool = True,
    progress: Callable[[ScenarioResult], None] | None = None,
) -> Report:
    """Run the whole client suite (or one ``scenario``) against Patchbay and judge it.

    Args:
        scenario: one scenario name; default the whole suite (``--suite all``, run in parallel).
        output_dir: where the harness saves results (default: a new temporary directory, kept).
        python: the interpreter that runs the driver (default: this one, the venv's).
        timeout_ms: the harness's per-scenario client timeout.
        retry_solo: re-run a failed :data:`RETRY_SOLO` scenario once on its own after a suite run.
        progress: called with each scenario's judged result as soon as the harness saved it (a
            re-run solo is reported again, with its note).

    Raises:
        SuiteUnavailable: Node 22 or the suite is not installed, a path contains whitespace, or
            ``scenario`` is no client scenario of the suite.
    """
    check_installed()
    root = Path(output_dir) if output_dir else Path(tempfile.mkdtemp(prefix="patchbay-conformance-"))
    root.mkdir(parents=True, exist_ok=True)
    known = suite_scenarios()
    if scenario is not None and scenario not in known:
        raise SuiteUnavailable(f"no client scenario {scenario!r} in the suite (known: {', '.join(known)})")
    expected = [scenario] if scenario else known
    started = time.monotonic()
    suite_dir = root / "suite"

    def reporter(base: Path, note: str = "") -> Callable[[Path], None] | None:
        if progress is None:
            return None

        def report_one(result_dir: Path) -> None:
            name = _scenario_of(result_dir, base)
            if name is not None:
                result = judge(name, result_dir)
                result.note = note
                progress(result)

        return report_one

    _, watch = run_harness(
        harness_argv(python, suite_dir, scenario=scenario, timeout_ms=timeout_ms),
        root / "harness.log",
        reporter(suite_dir),
    )
    results = collect(suite_dir, expected)
    listeners = set(watch.seen)
    non_loopback = set(watch.non_loopback)
    report = Report(results=results, output_dir=str(root), duration_seconds=0.0)
    if retry_solo and scenario is None:
        for index, first in enumerate(results):
            if first.scenario not in RETRY_SOLO or first.ok:
                continue
            solo_dir = root / f"retry-{first.scenario.replace('/', '_')}"
            _, solo_watch = run_harness(
                harness_argv(python, solo_dir, scenario=first.scenario, timeout_ms=timeout_ms),
                root / f"harness-retry-{first.scenario.replace('/', '_')}.log",
                reporter(solo_dir, "re-run solo"),
            )
            listeners |= solo_watch.seen
            non_loopback |= set(solo_watch.non_loopback)
            (again,) = collect(solo_dir, [first.scenario])
            again.note = (
                f"re-run solo ({'passed' if again.ok else 'failed again'}) after failing in the parallel run: "
                + "; ".join(first.problems)[:400]
            )
            results[index] = again
            report.notes.append(
                f"{first.scenario} failed in the parallel suite run and was re-run solo once "
                f"(timing-flaky under load, notes/mcp-sdk-2.3-client.md §2.4): {'passed' if again.ok else 'failed'}"
            )
    report.duration_seconds = round(time.monotonic() - started, 1)
    report.listeners_seen = len(listeners)
    report.non_loopback_listeners = sorted(non_loopback)
    if not listeners:
        report.notes.append("no listening socket was sampled (the scenarios ended between samples?)")
    return report


# -- output -----------------------------------------------------------------------------------


def format_progress(result: ScenarioResult) -> str:
    """One line for a scenario as it finishes: verdict, name, checks, the client's outcome."""
    counts = f"{result.passed} passed, {result.failed} failed, {result.warnings} warnings"
    if result.client == "ok":
        client = "client ok"
    elif result.ok and result.scenario in EXPECTED_CLIENT_FAILURES:
        client = "client failed, as it should here"
    else:
        client = f"client {result.client}"
    line = f"{'PASS' if result.ok else 'FAIL'}  {result.scenario}  ({counts}; {client})"
    if result.note:
        line += f" [{result.note}]"
    if not result.ok and result.problems:
        line += f": {result.problems[0][:300]}"
    return line


def format_table(report: Report) -> str:
    """The per-scenario table, the problems of failed scenarios, notes and a summary line."""
    width = max([len("scenario"), *(len(r.scenario) for r in report.results)])
    lines = [f"{'scenario':<{width}}  passed  failed  warnings  client  verdict"]
    for r in report.results:
        verdict = "PASS" if r.ok else "FAIL"
        if r.note:
            verdict += " (re-run solo)"
        lines.append(f"{r.scenario:<{width}}  {r.passed:>6}  {r.failed:>6}  {r.warnings:>8}  {r.client:<6}  {verdict}")
    failing = [r for r in report.results if not r.ok]
    if failing:
        lines.append("")
        lines.append("problems:")
        for r in failing:
            for problem in r.problems or ["(no details)"]:
                lines.append(f"  {r.scenario}: {problem}")
    expected = [r for r in report.results if r.ok and r.client != "ok" and r.scenario in EXPECTED_CLIENT_FAILURES]
    if expected:
        lines.append("")
        lines.append("client: failed with verdict PASS is the right outcome there:")
        for r in expected:
            lines.append(f"  {r.scenario}: {EXPECTED_CLIENT_FAILURES[r.scenario]}")
    for note in report.notes:
        lines.append(f"note: {note}")
    lines.append(
        f"listeners: {report.listeners_seen} seen, "
        + (
            f"NOT on loopback: {', '.join(report.non_loopback_listeners)}"
            if report.non_loopback_listeners
            else "all on loopback"
        )
    )
    passed = sum(r.ok for r in report.results)
    lines.append(
        f"scenarios: {passed}/{len(report.results)} passed in {report.duration_seconds:g}s; results in {report.output_dir}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the MCP client conformance suite against Patchbay.")
    parser.add_argument("--scenario", help="run only this scenario (default: the whole client suite)")
    parser.add_argument("-o", "--output-dir", type=Path, help="where to keep results (default: a new temp dir)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the driver (default: this one)")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_MS, help="per-scenario client timeout (ms)")
    parser.add_argument("--no-retry", action="store_true", help="do not re-run a failed sse-retry solo")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per scenario as it finishes (stderr)")
    args = parser.parse_args(argv)

    def progress(result: ScenarioResult) -> None:
        print(format_progress(result), file=sys.stderr, flush=True)

    try:
        report = run(
            scenario=args.scenario,
            output_dir=args.output_dir,
            python=args.python,
            timeout_ms=args.timeout,
            retry_solo=not args.no_retry,
            progress=None if args.quiet else progress,
        )
    except SuiteUnavailable as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(f"conformance: listing the suite's scenarios failed: {exc.stderr.strip()[:500]}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_dict(), indent=2) if args.json else format_table(report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
