"""The official MCP conformance suite's server scenarios judge the gateway at ``/mcp``.

A real ``patchbay serve`` (127.0.0.1, ephemeral port, fresh data home, ``PATCHBAY_BUILTINS=off``)
whose workspace has one real upstream connector, npm ``server-everything`` over stdio (approval
mode ``allow_all``, probed). Each scenario of :data:`APPLICABLE` is run by the pinned harness
(``conformance server --url <serve>/mcp?cwd=<ws>&mode=<mode> --scenario <name>``, through
:func:`tests.conformance.run_suite.run_harness`) in direct and in proxy mode, and must pass:
every check SUCCESS (no FAILURE, no WARNING), the harness exiting 0. The listing scenarios'
details are checked too, so an empty (vacuously valid) list cannot pass.

``serve`` runs with ``--no-auth`` (loopback only): the harness's server mode takes a URL and
nothing else, and ``dns-rebinding-protection`` sends its requests through undici directly, so no
``Authorization`` header can be added. The ``Host``/``Origin`` guard still applies (that scenario
judges it); the API token's guard on ``/mcp`` is tested in
``tests/interfaces/api/test_gateway_endpoint.py``.

Every server scenario of the suite is either in :data:`APPLICABLE` or in :data:`NOT_APPLICABLE`
with the reason (checked against ``conformance list --server``). The suite's server scenarios are
written for its reference server: most call a tool, resource or prompt by an exact name
(``test_simple_text``, ``test://static-text``, ``test_simple_prompt``) that a proxy cannot offer,
since the gateway names every upstream item after its connector (``<connector>__<tool>``,
``patchbay://<connector>/<uri>``, ``<connector>__<prompt>``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.conformance import run_suite
from tests.support.serve import Served, serve_process
from tests.support.servers import everything_stdio_command, require_peers

BIN = str(Path(sys.executable).parent)
CONNECTOR = "everything"
MODES = ("direct", "proxy")

APPLICABLE: dict[str, str] = {
    "server-initialize": "the initialize handshake of a 2025-era session",
    "ping": "ping answers an empty result",
    "tools-list": "tools/list: every tool has a name, a description and an input schema",
    "resources-list": "resources/list: every resource has a uri and a name",
    "prompts-list": "prompts/list: every prompt has a name",
    "server-sse-multiple-streams": "three concurrent POST requests of one session, each on its own SSE stream",
    "dns-rebinding-protection": "a foreign Host/Origin is refused (403 origin_refused), the loopback one accepted",
}
"""Server scenarios that judge what a proxy itself does: they pass in direct and proxy mode."""

_NAMED_TOOL = (
    "calls the reference server's tool `{}`, a name the gateway cannot offer (upstream tools are `<connector>__<tool>`)"
)
_NAMED_RESOURCE = (
    "reads the reference server's resource `{}`; the gateway's resources are `patchbay://<connector>/<uri>`"
)
_NAMED_PROMPT = "gets the reference server's prompt `{}`; the gateway's prompts are `<connector>__<prompt>`"

NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": (
        "logging/setLevel: the gateway declares no `logging` capability (it relays no server's log "
        "messages), so -32601 is the right answer"
    ),
    "completion-complete": (
        "completion/complete for the reference server's prompt `test_prompt_with_arguments`; the "
        "gateway declares no `completions` capability (-32601)"
    ),
    "tools-call-simple-text": _NAMED_TOOL.format("test_simple_text")
    + "; it would pass vacuously on the gateway's `unknown_tool` error result, which has a text block",
    "tools-call-image": _NAMED_TOOL.format("test_image_content"),
    "tools-call-audio": _NAMED_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": _NAMED_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": _NAMED_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": _NAMED_TOOL.format("test_tool_with_logging")
    + ", after logging/setLevel (no `logging` capability)",
    "tools-call-error": _NAMED_TOOL.format("test_error_handling")
    + "; it would pass vacuously on the gateway's `unknown_tool` error result (`isError: true`)",
    "tools-call-with-progress": _NAMED_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": _NAMED_TOOL.format("test_sampling") + ", and the gateway relays no sampling",
    "tools-call-elicitation": _NAMED_TOOL.format("test_elicitation") + ", and the gateway relays no elicitation",
    "json-schema-2020-12": _NAMED_TOOL.format("json_schema_2020_12_tool"),
    "elicitation-sep1034-defaults": _NAMED_TOOL.format("test_elicitation_sep1034_defaults")
    + ", and the gateway relays no elicitation",
    "elicitation-sep1330-enums": _NAMED_TOOL.format("test_elicitation_sep1330_enums")
    + ", and the gateway relays no elicitation",
    "server-sse-polling": _NAMED_TOOL.format("test_reconnection")
    + " (it closes the SSE stream mid-call); its SHOULD checks (a priming event, a `retry` field) "
    "need an event store, which the gateway's session manager does not keep",
    "resources-read-text": _NAMED_RESOURCE.format("test://static-text"),
    "resources-read-binary": _NAMED_RESOURCE.format("test://static-binary"),
    "resources-templates-read": _NAMED_RESOURCE.format("test://template/123/data"),
    "resources-subscribe": (
        "resources/subscribe to the reference server's `test://watched-resource`; the gateway "
        "declares `resources.subscribe: false` (-32601)"
    ),
    "resources-unsubscribe": (
        "resources/unsubscribe of the reference server's `test://watched-resource`; the gateway "
        "declares `resources.subscribe: false` (-32601)"
    ),
    "prompts-get-simple": _NAMED_PROMPT.format("test_simple_prompt"),
    "prompts-get-with-args": _NAMED_PROMPT.format("test_prompt_with_arguments"),
    "prompts-get-embedded-resource": _NAMED_PROMPT.format("test_prompt_with_embedded_resource"),
    "prompts-get-with-image": _NAMED_PROMPT.format("test_prompt_with_image"),
}
"""Server scenarios that need what only the suite's reference server defines: why each does not apply."""


def _require_suite() -> None:
    """Skip (fail under CI) when ``npm ci`` has not installed Node 22, the suite and the peers."""
    require_peers()
    try:
        run_suite.check_installed()
    except run_suite.SuiteUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    """``patchbay serve --no-auth`` with ``server-everything`` (allow_all, probed) in its workspace."""
    _require_suite()
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    runner = CliRunner()

    def run(*args: str) -> None:
        result = runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output

    run("connector", "add", CONNECTOR, "--", *everything_stdio_command())
    run("connector", "set", CONNECTOR, "--approval-mode", "allow_all")
    run("probe", CONNECTOR, "--project", str(workspace))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PATCHBAY_BUILTINS": "off"}
    with serve_process(home, workspace, "--no-auth", env=env) as serving:
        assert serving.info["token"] is None
        yield serving, workspace


def _checks(output_dir: Path, scenario: str) -> list[dict[str, Any]]:
    """The checks the harness saved for ``scenario`` (``<output_dir>/server-<scenario>-<time>/``)."""
    found = sorted(output_dir.glob(f"server-{scenario}-*/checks.json"))
    assert len(found) == 1, f"{scenario}: expected one result directory, found {found}"
    checks: list[dict[str, Any]] = json.loads(found[0].read_text(encoding="utf-8"))
    return checks


def _problems(checks: list[dict[str, Any]]) -> list[str]:
    """Why the checks do not pass: FAILURE and WARNING checks, or no SUCCESS at all."""
    problems = [
        f"{c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
        for c in checks
        if c.get("status") in ("FAILURE", "WARNING")
    ]
    if not any(c.get("status") == "SUCCESS" for c in checks):
        problems.append("no SUCCESS check")
    return problems


def _details(checks: list[dict[str, Any]], check_id: str) -> dict[str, Any]:
    (check,) = [c for c in checks if c.get("id") == check_id]
    details: dict[str, Any] = check["details"]
    return details


def _tools_listed(details: dict[str, Any], mode: str) -> None:
    if mode == "proxy":
        assert details["tools"] == ["mcp"], details
    else:
        assert details["toolCount"] > 1 and "everything__echo" in details["tools"], details
        assert all(name.startswith(f"{CONNECTOR}__") for name in details["tools"]), details


def _resources_listed(details: dict[str, Any], mode: str) -> None:
    assert details["resourceCount"] > 0, details
    assert all(uri.startswith(f"patchbay://{CONNECTOR}/") for uri in details["resources"]), details


def _prompts_listed(details: dict[str, Any], mode: str) -> None:
    assert f"{CONNECTOR}__simple-prompt" in details["prompts"], details
    assert all(name.startswith(f"{CONNECTOR}__") for name in details["prompts"]), details


LISTED: dict[str, Callable[[dict[str, Any], str], None]] = {
    "tools-list": _tools_listed,
    "resources-list": _resources_listed,
    "prompts-list": _prompts_listed,
}
"""Per listing scenario: what its details must show in a mode (so an empty listing cannot pass)."""


@pytest.mark.peers
def test_every_server_scenario_of_the_suite_is_either_run_or_explained() -> None:
    _require_suite()
    assert not set(APPLICABLE) & set(NOT_APPLICABLE)
    assert set(run_suite.suite_scenarios("server")) == set(APPLICABLE) | set(NOT_APPLICABLE)


@pytest.mark.peers
@pytest.mark.parametrize("mode", MODES)
def test_the_applicable_server_scenarios_pass_against_the_gateway(
    served: tuple[Served, Path], tmp_path: Path, mode: str
) -> None:
    serving, workspace = served
    url = f"{serving.url}/mcp?cwd={workspace}&mode={mode}"
    output_dir = tmp_path / "conformance"
    failing: dict[str, list[str]] = {}
    for scenario in APPLICABLE:
        argv = [str(run_suite.NODE22), str(run_suite.CONFORMANCE), "server", "--url", url]
        argv += ["--scenario", scenario, "-o", str(output_dir)]
        returncode, watch = run_suite.run_harness(argv, tmp_path / f"harness-{scenario}.log")
        assert watch.non_loopback == [], watch.non_loopback
        checks = _checks(output_dir, scenario)
        problems = _problems(checks)
        if returncode != 0:
            problems.append(f"the harness exited {returncode}")
        if problems:
            failing[scenario] = problems
        elif scenario in LISTED:
            LISTED[scenario](_details(checks, scenario), mode)
    assert failing == {}, json.dumps(failing, indent=2)
    rebinding = _details(_checks(output_dir, "dns-rebinding-protection"), "localhost-host-rebinding-rejected")
    assert rebinding["statusCode"] == 403 and rebinding["body"]["error"]["code"] == "origin_refused"
