"""The official MCP client conformance suite judges Patchbay's connection layer.

Runs ``@modelcontextprotocol/conformance`` (all client scenarios, in parallel, on 127.0.0.1 only)
with ``patchbay_client.py`` as the client under test, through ``run_suite.py``; see there for how
scenarios are judged and why a failed ``sse-retry`` is re-run solo once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance import run_suite

EXPECTED_SCENARIO_COUNT = 26
"""Client scenarios of the pinned suite (0.1.16): every one of them must pass."""


def _require_suite() -> None:
    """Skip (fail under CI) when ``npm ci`` has not installed Node 22 and the suite."""
    try:
        run_suite.check_installed()
    except run_suite.SuiteUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.mark.peers
def test_the_client_conformance_suite_passes_against_patchbay(tmp_path: Path) -> None:
    _require_suite()
    report = run_suite.run(output_dir=tmp_path / "conformance")
    table = run_suite.format_table(report)

    scenarios = run_suite.suite_scenarios()
    assert len(scenarios) == EXPECTED_SCENARIO_COUNT, table
    assert {r.scenario for r in report.results} == set(scenarios), table
    failing = [name for name in scenarios if not getattr(report.result(name), "ok", False)]
    assert failing == [], f"conformance scenarios failed: {', '.join(failing)}\n{table}"
    assert report.listeners_seen > 0, table
    assert report.non_loopback_listeners == [], table
