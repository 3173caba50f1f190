"""The conformance runner's own logic: judging a scenario from the harness's files. (The suite
itself runs in test_client_suite.py.)"""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.conformance import run_suite


def _result_dir(root: Path, scenario: str, statuses: list[str], *, stdout: str = "", stderr: str = "") -> Path:
    path = root / f"{scenario}-2026-11-30T09-34-21-773Z"
    path.mkdir(parents=True)
    checks = [
        {"id": f"check-{i}", "status": status, "description": f"{status} check"} for i, status in enumerate(statuses)
    ]
    (path / "checks.json").write_text(json.dumps(checks))
    (path / "stdout.txt").write_text(stdout)
    (path / "stderr.txt").write_text(stderr)
    return path


OK = "patchbay-conformance: ok {scenario}: called the tool\n"


def test_a_scenario_passes_with_successes_only_and_the_clients_ok(tmp_path: Path) -> None:
    path = _result_dir(tmp_path, "tools_call", ["SUCCESS", "INFO"], stdout=OK.format(scenario="tools_call"))
    result = run_suite.judge("tools_call", path)
    assert (result.ok, result.passed, result.info, result.client, result.problems) == (True, 1, 1, "ok", [])


def test_a_warning_fails_the_scenario_as_the_suite_does(tmp_path: Path) -> None:
    path = _result_dir(tmp_path, "sse-retry", ["SUCCESS", "WARNING"], stdout=OK.format(scenario="sse-retry"))
    result = run_suite.judge("sse-retry", path)
    assert not result.ok and result.warnings == 1
    assert result.problems == ["WARNING check-1: WARNING check"]


def test_a_client_without_its_ok_line_fails_the_scenario_even_when_every_check_passed(tmp_path: Path) -> None:
    failed = _result_dir(
        tmp_path / "a", "initialize", ["SUCCESS"], stderr="patchbay-conformance: FAILED initialize: boom\n"
    )
    silent = _result_dir(tmp_path / "b", "initialize", ["SUCCESS"], stderr="Traceback ...\nKilled\n")
    failed_result, silent_result = run_suite.judge("initialize", failed), run_suite.judge("initialize", silent)
    assert not failed_result.ok and failed_result.client == "failed"
    assert failed_result.problems == ["client: patchbay-conformance: FAILED initialize: boom"]
    assert not silent_result.ok and silent_result.client == "none"


def test_where_the_suite_allows_a_client_error_only_an_unsupported_scenario_still_fails(tmp_path: Path) -> None:
    scenario = "auth/resource-mismatch"
    refused = _result_dir(
        tmp_path / "a", scenario, ["SUCCESS"], stderr=f"patchbay-conformance: FAILED {scenario}: auth_required\n"
    )
    unsupported = _result_dir(
        tmp_path / "b", scenario, ["SUCCESS"], stderr=f"patchbay-conformance: FAILED {scenario}: not supported: x\n"
    )
    assert run_suite.judge(scenario, refused).ok
    assert not run_suite.judge(scenario, unsupported).ok


def test_a_scenario_without_a_success_or_without_results_fails(tmp_path: Path) -> None:
    _result_dir(tmp_path, "initialize", ["INFO"], stdout=OK.format(scenario="initialize"))
    _result_dir(tmp_path / "auth", "metadata-var1", ["SUCCESS"], stdout=OK.format(scenario="auth/metadata-var1"))
    results = {r.scenario: r for r in run_suite.collect(tmp_path, ["initialize", "auth/metadata-var1", "sse-retry"])}
    assert list(results) == ["initialize", "auth/metadata-var1", "sse-retry"]
    assert not results["initialize"].ok and results["initialize"].problems == ["no SUCCESS check"]
    assert results["auth/metadata-var1"].ok
    assert not results["sse-retry"].ok and results["sse-retry"].problems == ["no results: the harness did not run it"]


def test_each_saved_result_is_reported_as_the_harness_writes_it(tmp_path: Path) -> None:
    done = _result_dir(tmp_path / "suite", "tools_call", ["SUCCESS"], stdout=OK.format(scenario="tools_call"))
    output = io.BytesIO(f"Starting scenario: tools_call\nResults saved to {done}\nChecks: 1 passed\n".encode())
    log, seen = io.BytesIO(), []
    run_suite._copy_output(output, log, seen.append)
    assert seen == [done]
    assert log.getvalue() == output.getvalue()  # the log keeps everything the harness said
    line = run_suite.format_progress(run_suite.judge("tools_call", done))
    assert line == "PASS  tools_call  (1 passed, 0 failed, 0 warnings; client ok)"


def test_an_expected_client_failure_says_why_it_passes(tmp_path: Path) -> None:
    scenario = "auth/scope-retry-limit"
    path = _result_dir(tmp_path, scenario, ["SUCCESS"], stderr=f"patchbay-conformance: FAILED {scenario}: 403\n")
    result = run_suite.judge(scenario, path)
    assert run_suite.format_progress(result).endswith(
        "(1 passed, 0 failed, 0 warnings; client failed, as it should here)"
    )
    table = run_suite.format_table(run_suite.Report(results=[result], output_dir=str(tmp_path), duration_seconds=1.0))
    assert f"  {scenario}: {run_suite.EXPECTED_CLIENT_FAILURES[scenario]}" in table


def test_a_failed_scenario_shows_its_first_problem_as_it_finishes(tmp_path: Path) -> None:
    path = _result_dir(
        tmp_path,
        "initialize",
        ["SUCCESS"],
        stderr="patchbay-conformance: FAILED initialize: timeout: connecting took longer than 15s\n",
    )
    line = run_suite.format_progress(run_suite.judge("initialize", path))
    assert line.startswith("FAIL  initialize  (1 passed, 0 failed, 0 warnings; client failed): client: ")
    assert line.endswith("connecting took longer than 15s")
