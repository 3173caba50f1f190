"""probe / tools / grant / call / events from the CLI, on real third-party MCP servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.support.events import CALL_CHAIN as CHAIN
from tests.support.servers import everything_http, everything_stdio_command, make_git_repo


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def run(tmp_path: Path, workspace: Path):
    runner = CliRunner()
    home = tmp_path / "home"

    def invoke(*args: str):
        return runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)

    return invoke


def events_of(run, stderr: str) -> list[dict]:
    session_id = stderr.split("patchbay events ")[-1].split()[0]
    result = run("events", session_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["events"]


def test_time_server_add_probe_tools_call_and_events(run, workspace: Path) -> None:
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    probe = run("probe", "time", "--project", str(workspace))
    assert probe.exit_code == 0, probe.output
    assert "time: ready" in probe.stdout and "tools: 2" in probe.stdout

    tools = json.loads(run("tools", "time", "--json").stdout)
    by_name = {t["name"]: t for t in tools["tools"]}
    assert set(by_name) == {"get_current_time", "convert_time"}
    assert by_name["get_current_time"]["decision"] == "ask" and tools["cache"] == "fresh"

    call = run("call", "mcp.time.get_current_time", '{"timezone": "Asia/Tokyo"}', "--yes", "--project", str(workspace))
    assert call.exit_code == 0, call.output
    assert json.loads(call.stdout)["timezone"] == "Asia/Tokyo"
    events = events_of(run, call.stderr)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    chain = [e for e in events if not e["type"].startswith("mcp.server.")]
    assert [e["type"] for e in chain] == CHAIN
    assert chain[1]["payload"]["riskAtDecision"] == "read"  # get_current_time is annotated readOnlyHint
    assert "Asia/Tokyo" in chain[-1]["payload"]["resultPreview"]
    assert chain[-1]["payload"]["resultSize"] > 0
    assert {e["type"] for e in events} - set(CHAIN) <= {"mcp.server.connected", "mcp.server.shutdown"}


def test_headless_ask_is_denied_without_reaching_the_server_and_a_grant_lets_it_run(run, workspace: Path) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    run("probe", "time", "--project", str(workspace))
    denied = run("call", "mcp.time.get_current_time", '{"timezone": "UTC"}', "--project", str(workspace))
    assert denied.exit_code == 1
    assert "error[approval_unavailable]" in denied.stderr
    assert "no terminal to ask on: pass --yes to approve this call once" in " ".join(denied.stderr.split())
    assert f"patchbay grant time get_current_time allow --project {workspace}" in " ".join(denied.stderr.split())
    events = [e for e in events_of(run, denied.stderr) if not e["type"].startswith("mcp.server.")]
    assert [e["type"] for e in events] == [
        "model.tool_call_requested",
        "permission.requested",
        "permission.resolved",
        "tool.failed",
    ]
    assert events[2]["payload"]["decision"] == "deny"
    assert events[-1]["payload"]["reason"] == "approval_unavailable"

    assert run("grant", "time", "get_current_time", "allow").exit_code == 0
    allowed = run("call", "mcp.time.get_current_time", '{"timezone": "UTC"}', "--project", str(workspace))
    assert allowed.exit_code == 0, allowed.output


def test_a_project_allow_cannot_lift_a_global_deny(run, workspace: Path) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    run("probe", "time", "--project", str(workspace))
    run("grant", "time", "get_current_time", "deny")
    run("grant", "time", "get_current_time", "allow", "--project", str(workspace))
    view = json.loads(run("tools", "time", "--project", str(workspace), "--json").stdout)
    tool = next(t for t in view["tools"] if t["name"] == "get_current_time")
    assert (tool["decision"], tool["source"]) == ("deny", "global_deny")
    denied = run("call", "mcp.time.get_current_time", '{"timezone": "UTC"}', "--yes", "--project", str(workspace))
    # The snapshot excludes a denied tool (seed 003 §10.3): the runtime never lists or sends it.
    assert denied.exit_code == 1 and "error[unknown_tool]" in denied.stderr and "global deny" in denied.stderr

    cleared = run("grant", "time", "get_current_time", "--clear")
    assert cleared.exit_code == 0 and "note:" not in cleared.stderr
    view = json.loads(run("tools", "time", "--project", str(workspace), "--json").stdout)
    tool = next(t for t in view["tools"] if t["name"] == "get_current_time")
    assert (tool["decision"], tool["source"]) == ("allow", "project_grant")


def test_a_grant_for_a_tool_the_probed_catalog_lacks_is_refused_naming_close_matches(run, workspace: Path) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    run("probe", "time", "--project", str(workspace))
    refused = run("grant", "time", "get_curent_time", "allow", "--json")
    assert refused.exit_code == 1
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "not_found" and error["details"]["tool"] == "get_curent_time"
    assert error["details"]["suggestions"][0] == "get_current_time"
    human = run("grant", "time", "Convert_Time", "deny", "--project", str(workspace))
    assert human.exit_code == 1 and "error[not_found]" in human.stderr
    assert "did you mean: convert_time" in human.stderr and "--unknown-ok" in human.stderr
    view = json.loads(run("tools", "time", "--project", str(workspace), "--json").stdout)
    assert view["unmatched_grants"] == []  # nothing was stored
    assert {t["name"]: t["global_grant"] for t in view["tools"]} == {"get_current_time": None, "convert_time": None}

    known = run("grant", "time", "get_current_time", "allow", "--json")
    assert known.exit_code == 0 and json.loads(known.stdout)["tool_check"] == {"state": "known", "cache": "fresh"}


def test_unknown_ok_keeps_a_grant_for_a_tool_not_listed_yet(run, workspace: Path) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    run("probe", "time", "--project", str(workspace))
    result = run("grant", "time", "no_such_tool", "deny", "--unknown-ok", "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["matches_known_tool"] is False and body["tool_check"] == {"state": "unknown", "cache": "fresh"}
    again = run("grant", "time", "no_such_tool", "deny", "--unknown-ok")
    assert again.exit_code == 0 and "matches nothing until a probe lists the tool" in again.stderr
    view = json.loads(run("tools", "time", "--json").stdout)
    assert [g["tool_name"] for g in view["unmatched_grants"]] == ["no_such_tool"]
    cleared = run("grant", "time", "no_such_tool", "--clear")  # clearing needs no flag
    assert cleared.exit_code == 0 and "cleared" in cleared.stdout
    misused = run("grant", "time", "--resources", "allow", "--unknown-ok")
    assert misused.exit_code == 1 and "error[invalid_config]" in misused.stderr


def test_a_grant_without_a_probed_catalog_is_stored_with_a_warning(run, workspace: Path) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    never = run("grant", "time", "get_curent_time", "allow", "--json")
    assert never.exit_code == 0, never.output
    assert json.loads(never.stdout)["tool_check"] == {"state": "unchecked", "cache": "missing"}
    assert "could not be checked" in never.stderr and "never probed" in never.stderr
    assert "patchbay probe time" in never.stderr

    run("probe", "time", "--project", str(workspace))
    changed = run("connector", "set", "time", "--", "mcp-server-time", "--local-timezone", "UTC")
    assert changed.exit_code == 0, changed.output  # the cached catalog is stale now
    stale = run("grant", "time", "later_tool", "ask")
    assert stale.exit_code == 0, stale.output
    assert "could not be checked" in stale.stderr and "configuration changed" in stale.stderr
    view = json.loads(run("tools", "time", "--json").stdout)
    assert sorted(g["tool_name"] for g in view["unmatched_grants"]) == ["get_curent_time", "later_tool"]


def test_probe_of_a_missing_command_fails_with_its_code(run, workspace: Path) -> None:
    run("connector", "add", "ghost", "--", "definitely-not-a-command-xyz")
    result = run("probe", "ghost", "--project", str(workspace), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["code"] == "command_not_found"
    human = run("probe", "ghost", "--project", str(workspace))
    assert human.exit_code == 1 and "error[command_not_found]: command not found" in human.stdout


def test_a_call_to_a_server_that_cannot_start_shows_why_and_how_to_look(run, workspace: Path) -> None:
    run("connector", "add", "ghost", "--", "definitely-not-a-command-xyz")
    result = run("call", "mcp.ghost.anything", "--yes", "--project", str(workspace))
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith("error[mcp_server_unavailable]:") and "[command_not_found]" in first
    assert f"hint: patchbay probe ghost --project {workspace}" in result.stderr
    as_json = json.loads(run("call", "mcp.ghost.anything", "--yes", "--project", str(workspace), "--json").stdout)
    assert as_json["error"]["code"] == "mcp_server_unavailable"
    assert as_json["error"]["details"]["code"] == "command_not_found"


def test_calling_a_disabled_connector_says_it_is_disabled(run, workspace: Path) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    run("connector", "disable", "time")
    result = run("call", "mcp.time.get_current_time", '{"timezone": "UTC"}', "--yes", "--project", str(workspace))
    assert result.exit_code == 1
    assert result.stderr.startswith("error[unknown_tool]: connector 'time' is disabled; enable it with")


def test_git_server_status_of_a_repo_the_test_made_shows_the_file(run, tmp_path: Path, workspace: Path) -> None:
    repo = make_git_repo(tmp_path / "repo", "made-by-the-test.txt")
    run("connector", "add", "git", "--", "mcp-server-git", "--repository", str(repo))
    assert run("probe", "git", "--project", str(workspace)).exit_code == 0
    run("grant", "git", "git_status", "allow")
    call = run("call", "mcp.git.git_status", json.dumps({"repo_path": str(repo)}), "--project", str(workspace))
    assert call.exit_code == 0, call.output
    assert "made-by-the-test.txt" in call.stdout


@pytest.mark.peers
def test_everything_echo_over_stdio(run, workspace: Path) -> None:
    run("connector", "add", "everything", "--", *everything_stdio_command())
    probe = run("probe", "everything", "--project", str(workspace), "--json")
    assert probe.exit_code == 0, probe.output
    assert "echo" in json.loads(probe.stdout)["tools"]
    call = run("call", "mcp.everything.echo", '{"message": "hello patchbay"}', "--yes", "--project", str(workspace))
    assert call.exit_code == 0, call.output
    assert "hello patchbay" in call.stdout


@pytest.mark.peers
def test_everything_echo_over_streamable_http(run, workspace: Path) -> None:
    with everything_http("streamableHttp") as url:
        run("connector", "add", "everything-http", "--url", url, "--allow-private")
        probe = run("probe", "everything-http", "--project", str(workspace))
        assert probe.exit_code == 0, probe.output
        run("grant", "everything-http", "echo", "allow")
        call = run("call", "mcp.everything-http.echo", '{"message": "over http"}', "--project", str(workspace))
        assert call.exit_code == 0, call.output
        assert "over http" in call.stdout


def test_bad_arguments_and_unknown_sessions_fail_with_codes(run, workspace: Path) -> None:
    bad_json = run("call", "mcp.time.get_current_time", "{not json", "--project", str(workspace))
    assert bad_json.exit_code == 1 and bad_json.stderr.startswith("error[validation_error]: arguments")
    not_object = run("call", "mcp.time.get_current_time", "[1]", "--project", str(workspace))
    assert not_object.exit_code == 1 and "error[validation_error]" in not_object.stderr
    missing = run("events", "ses_doesnotexist")
    assert missing.exit_code == 1 and "error[not_found]" in missing.stderr
    traversal = run("events", "../../etc/passwd")
    assert traversal.exit_code == 1 and "error[validation_error]" in traversal.stderr


def test_calling_a_connector_that_does_not_exist_fails_cleanly(run, workspace: Path) -> None:
    result = run("call", "mcp.nope.tool", "--project", str(workspace), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["details"]["reason"] == "unknown_tool"


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"x": NaN}', "NaN"),
        ('{"x": Infinity}', "Infinity"),
        ('{"x": "\\ud800"}', "UTF-8"),
        ("[" * 5000 + "]" * 5000, ""),
    ],
)
def test_arguments_json_cannot_carry_nan_surrogates_or_hostile_nesting(
    run, workspace: Path, arguments: str, why: str
) -> None:
    run("connector", "add", "time", "--", "mcp-server-time")
    result = run("call", "mcp.time.get_current_time", arguments, "--yes", "--project", str(workspace))
    assert result.exit_code == 1
    assert result.stderr.startswith("error[validation_error]: arguments") and why in result.stderr


def test_sdk_tracebacks_quoting_server_output_never_reach_the_terminal(tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.support.servers import fixture_server

    env = {**os.environ, "PATCHBAY_HOME": str(tmp_path / "home")}
    env.pop("PATCHBAY_DEBUG", None)
    target = fixture_server("banner_server.py")
    subprocess.run(["patchbay", "connector", "add", "banner", "--", target.command, *target.args], env=env, check=True)
    probe = subprocess.run(
        ["patchbay", "probe", "banner"], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert probe.returncode == 0, probe.stderr
    assert "Traceback" not in probe.stderr and "Banner Server" not in probe.stderr


def test_probe_names_the_tools_left_out_for_their_schemas(run, workspace: Path) -> None:
    import sys

    from tests.support.paths import FIXTURES

    added = run("connector", "add", "schemas", "--", sys.executable, str(FIXTURES / "schema_server.py"))
    assert added.exit_code == 0, added.output
    text = run("probe", "schemas", "--project", str(workspace))
    assert text.exit_code == 0, text.output
    left_out = [line for line in text.stdout.splitlines() if line.startswith("  left out:")]
    assert len(left_out) == 3 and any("deep_input" in line for line in left_out)
    probed = json.loads(run("probe", "schemas", "--project", str(workspace), "--json").stdout)
    assert sorted(d["tool"] for d in probed["diagnostics"]) == ["deep_input", "huge_schema", "many_nodes"]
    assert "echo" in probed["tools"] and "deep_input" not in probed["tools"]


def test_tools_show_each_tools_arguments_from_the_cache(run, workspace: Path) -> None:
    repo = make_git_repo(workspace / "repo")
    assert run("connector", "add", "git", "--", "mcp-server-git", "--repository", str(repo)).exit_code == 0
    assert run("probe", "git", "--project", str(workspace)).exit_code == 0
    assert run("connector", "disable", "git").exit_code == 0  # nothing may start it: the cache answers

    listed = run("tools", "git")
    assert listed.exit_code == 0, listed.output
    text = " ".join(listed.stdout.split())
    assert "mcp.git.git_status(repo_path: string)" in text.replace("│ ", "").replace(" │", "")
    tools = {t["name"]: t for t in json.loads(run("tools", "git", "--json").stdout)["tools"]}
    log = tools["git_log"]["input_schema"]
    assert "repo_path" in log["required"] and log["properties"]["max_count"]["type"] == "integer"


def test_probe_and_tools_flag_lookalike_tool_names(run, workspace: Path) -> None:
    import sys

    from tests.support.paths import FIXTURES

    server = [sys.executable, str(FIXTURES / "dynamic_server.py"), "--initial", "danger", "--initial", "d\u0430nger"]
    assert run("connector", "add", "evil", "--", *server).exit_code == 0
    probed = run("probe", "evil", "--project", str(workspace))
    assert probed.exit_code == 0, probed.output
    assert [line for line in probed.stdout.splitlines() if line.startswith("  flagged:")] == [
        "  flagged: tool 'd\u0430nger' kept but flagged: its name contains a non-ASCII letter or digit that can look "
        "like an ASCII one (U+0430 CYRILLIC SMALL LETTER A)"
    ]
    assert run("grant", "evil", "--resources", "allow").exit_code == 0
    listed = run("tools", "evil")
    assert listed.exit_code == 0, listed.output
    assert "flagged: 'd\u0430nger': its name contains a non-ASCII letter" in listed.stdout
    assert "flagged: 'danger'" not in listed.stdout
    assert "resource reads: allow (global_grant)" in listed.stdout
    as_json = json.loads(run("tools", "evil", "--json").stdout)
    assert {t["name"]: t["name_flag"] is not None for t in as_json["tools"]}["d\u0430nger"] is True
    assert as_json["resource_reads"]["decision"] == "allow"


def test_the_approval_question_warns_about_a_flagged_tool_name() -> None:
    from patchbay.interfaces.cli.governed import _tool_question
    from patchbay.runtime.calls.permissions import ApprovalRequest

    def ask(tool: str) -> str:
        request = ApprovalRequest(f"mcp.evil.{tool}", "evil", tool, {}, "network", "approval_mode", "ses_1")
        return _tool_question(request)[0].plain

    assert "warning" not in ask("danger")
    assert "warning: the tool's name 'd\u0430nger' contains a non-ASCII letter" in ask("d\u0430nger")
    assert "'danger\\u200b'" in ask("danger\u200b")


def test_probe_shows_a_misbehaving_pagination_as_a_warning_and_keeps_the_tools(run, workspace: Path) -> None:
    import sys

    from tests.support.paths import FIXTURES

    server = [sys.executable, str(FIXTURES / "paging_server.py"), "--misbehave", "cycle"]
    added = run("connector", "add", "cycling", "--", *server)
    assert added.exit_code == 0, added.output
    text = run("probe", "cycling", "--project", str(workspace))
    assert text.exit_code == 0, text.output
    assert "  tools: 44" in text.stdout
    warnings = [line for line in text.stdout.splitlines() if line.startswith("  warning:")]
    assert len(warnings) == 1 and "repeated cursor 'p1'" in warnings[0]
    assert "left out:" not in text.stdout


def test_probe_of_a_disabled_connector_says_it_is_disabled_and_how_to_enable_it(run, workspace: Path) -> None:
    run("connector", "add", "time", "--disabled", "--", "mcp-server-time")
    human = run("probe", "time", "--project", str(workspace))
    assert human.exit_code == 0, human.output  # probed all the same: it can be checked before enabling
    assert "time: ready" in human.stdout and "connector disabled" in human.stdout
    assert "no runtime or gateway uses it" in human.stdout and "patchbay connector enable time" in human.stdout
    as_json = json.loads(run("probe", "time", "--project", str(workspace), "--json").stdout)
    assert as_json["state"] == "ready" and as_json["enabled"] is False
    assert [(w["code"], w["hint"]) for w in as_json["warnings"]] == [("disabled", "patchbay connector enable time")]

    run("connector", "enable", "time")
    enabled = run("probe", "time", "--project", str(workspace), "--json")
    assert json.loads(enabled.stdout)["enabled"] is True and json.loads(enabled.stdout)["warnings"] == []
    assert "disabled" not in run("probe", "time", "--project", str(workspace)).stdout
