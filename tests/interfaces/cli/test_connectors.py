"""`patchbay connector ...`: add/list/show/enable/disable/remove, --json, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app


@pytest.fixture
def run(tmp_path: Path):
    runner = CliRunner()
    home = tmp_path / "home"

    def invoke(*args: str):
        return runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)

    return invoke


def test_add_stdio_keeps_command_and_args_apart_and_lists_it(run, tmp_path: Path) -> None:
    result = run(
        "connector",
        "add",
        "time",
        "--json",
        "--project",
        str(tmp_path),
        "--",
        "mcp-server-time",
        "--local-timezone",
        "UTC",
    )
    assert result.exit_code == 0, result.output
    connector = json.loads(result.stdout)["connector"]
    assert connector["target"] == {
        "transport": "stdio",
        "command": "mcp-server-time",
        "args": ["--local-timezone", "UTC"],
        "cwd": "",
    }
    assert connector["settings"]["enabled"] is True
    listed = json.loads(run("connector", "list", "--json").stdout)["connectors"]
    assert [c["name"] for c in listed] == ["time"]


def test_add_remote_and_socket_connectors(run) -> None:
    assert run("connector", "add", "remote", "--url", "https://example.com/mcp", "--transport", "sse").exit_code == 0
    assert run("connector", "add", "sock", "--socket", "/run/user/mcp.sock", "--disabled").exit_code == 0
    shown = json.loads(run("connector", "show", "remote", "--json").stdout)
    assert shown["target"] == {"transport": "sse", "url": "https://example.com/mcp"}
    sock = json.loads(run("connector", "show", "sock", "--json").stdout)
    assert sock["target"]["path"] == "/run/user/mcp.sock" and sock["settings"]["enabled"] is False


def test_enable_disable_and_remove(run) -> None:
    run("connector", "add", "t", "--", "true")
    assert json.loads(run("connector", "disable", "t", "--json").stdout)["connector"]["settings"]["enabled"] is False
    assert json.loads(run("connector", "enable", "t", "--json").stdout)["connector"]["settings"]["enabled"] is True
    assert run("connector", "remove", "t").exit_code == 0
    gone = run("connector", "show", "t")
    assert gone.exit_code == 1
    assert "error[not_found]" in gone.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["Bad_Name", "--", "true"], "name"),
        (["ok", "--url", "ftp://example.com"], "url"),
        (["ok", "--url", "https://u:p@example.com/mcp"], "url"),
        (["ok", "--", "-rf"], "command"),
        (["ok", "--", "python server.py"], "command"),
        (["ok", "--socket", "relative.sock"], "socket_path"),
        (["ok"], "transport"),
        (["ok", "--url", "https://example.com", "--socket", "/x.sock"], "transport"),
        (["ok", "--cwd", "../outside", "--", "true"], "cwd"),
    ],
)
def test_bad_input_is_one_line_with_the_code_and_field_and_nothing_is_stored(run, args: list[str], field: str) -> None:
    result = run("connector", "add", *args)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error[invalid_config]: " + field)
    assert "Traceback" not in result.output
    as_json = run("connector", "add", "--json", *args)
    assert json.loads(as_json.stdout)["error"]["details"]["field"] == field
    assert json.loads(run("connector", "list", "--json").stdout)["connectors"] == []


def test_a_duplicate_name_is_refused_case_insensitively_but_exist_ok_is_idempotent(run) -> None:
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    again = run("connector", "add", "time", "--", "mcp-server-time")
    assert again.exit_code == 1 and "error[invalid_config]: name" in again.stderr
    same = run("connector", "add", "time", "--exist-ok", "--json", "--", "mcp-server-time")
    assert same.exit_code == 0 and json.loads(same.stdout)["created"] is False
    different = run("connector", "add", "time", "--exist-ok", "--", "other-command")
    assert different.exit_code == 1 and "different target" in different.stderr


def test_set_changes_approval_mode_and_tool_globs(run) -> None:
    run("connector", "add", "t", "--", "true")
    result = run(
        "connector",
        "set",
        "t",
        "--approval-mode",
        "allow_all",
        "--include",
        "git_*",
        "--exclude",
        "git_reset",
        "--json",
    )
    settings = json.loads(result.stdout)["connector"]["settings"]
    assert (settings["approval_mode"], settings["include_tools"], settings["exclude_tools"]) == (
        "allow_all",
        ["git_*"],
        ["git_reset"],
    )
    cleared = json.loads(run("connector", "set", "t", "--no-include", "--json").stdout)["connector"]["settings"]
    assert cleared["include_tools"] == [] and cleared["exclude_tools"] == ["git_reset"]
    bad = run("connector", "set", "t", "--approval-mode", "yolo")
    assert bad.exit_code == 1 and bad.stderr.startswith("error[invalid_config]: approval_mode")
    assert json.loads(run("connector", "show", "t", "--json").stdout)["settings"]["approval_mode"] == "allow_all"


def test_brackets_in_names_args_and_descriptions_are_printed_literally(run) -> None:
    added = run("connector", "add", "mk", "--description", "[/red] not markup", "--", "echo", "[/x]", "sh -c [curl|sh]")
    assert added.exit_code == 0, added.output
    assert "echo [/x] sh -c [curl|sh]" in added.stdout
    listed = run("connector", "list")
    assert listed.exit_code == 0 and "[curl|sh]" in listed.stdout
    shown = run("connector", "show", "mk")
    assert shown.exit_code == 0 and "[/red] not markup" in shown.stdout


def test_a_description_with_terminal_escapes_is_refused(run) -> None:
    result = run("connector", "add", "esc", "--description", "\x1b]0;pwned\x07", "--", "true")
    assert result.exit_code == 1 and result.stderr.startswith("error[invalid_config]: description")


def _shown(run, name: str = "t") -> dict:
    result = run("connector", "show", name, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_list_and_show_carry_the_last_probe_failed_or_ready(run, tmp_path: Path) -> None:
    assert run("connector", "add", "ghost", "--", "pb-no-such-command-for-cli-tests").exit_code == 0
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    assert "last probe: never (see: patchbay probe ghost)" in run("connector", "show", "ghost").stdout
    assert run("probe", "ghost", "--project", str(tmp_path)).exit_code != 0
    assert run("probe", "time", "--project", str(tmp_path)).exit_code == 0

    listed = run("connector", "list").stdout
    ghost_line = next(line for line in listed.splitlines() if "ghost" in line)
    time_line = next(line for line in listed.splitlines() if " time " in line)
    assert "error (command_not_found)" in ghost_line
    assert " ready " in time_line and " 2 " in time_line
    shown = run("connector", "show", "ghost").stdout
    assert "last probe: error command_not_found: command not found" in shown
    assert "last probe: ready, 2 tools (" in run("connector", "show", "time").stdout


def test_set_changes_the_target_keeping_grants_and_the_cache_goes_stale(run, tmp_path: Path) -> None:
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    assert run("probe", "time", "--project", str(tmp_path)).exit_code == 0
    assert run("grant", "time", "get_current_time", "allow").exit_code == 0
    before = _shown(run, "time")

    moved = run("connector", "set", "time", "--", "mcp-server-time", "--local-timezone", "UTC")
    assert moved.exit_code == 0, moved.output
    assert "time: target stdio: mcp-server-time --local-timezone UTC" in moved.stdout
    assert "tool cache: stale" in moved.stdout
    after = _shown(run, "time")
    assert after["target"]["args"] == ["--local-timezone", "UTC"]
    assert after["connector_id"] == before["connector_id"]
    assert after["revision"] == before["revision"] + 1 and after["cache"]["state"] == "stale"
    tools = json.loads(run("tools", "time", "--json").stdout)
    assert tools["cache"] == "stale" and tools["unmatched_grants"][0]["tool_name"] == "get_current_time"

    remote = run("connector", "set", "time", "--url", "http://127.0.0.1:9/mcp", "--transport", "sse", "--allow-private")
    assert remote.exit_code == 0, remote.output
    assert _shown(run, "time")["target"] == {"transport": "sse", "url": "http://127.0.0.1:9/mcp"}
    kept = run("connector", "set", "time", "--socket", "/run/user/mcp.sock")  # allow_private stays
    assert kept.exit_code == 1 and kept.stderr.startswith("error[invalid_config]: allow_private: ")
    assert "reset it in the same change (CLI: --reset allow-private;" in kept.stderr  # the way out is named
    assert run("connector", "set", "time", "--socket", "/run/user/mcp.sock", "--reset", "allow-private").exit_code == 0
    assert _shown(run, "time")["target"] == {"transport": "socket", "path": "/run/user/mcp.sock"}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--url", "ftp://example.com"], "url"),
        (["--socket", "relative.sock"], "socket_path"),
        (["--", "-rf"], "command"),
        (["--cwd", "../out", "--", "mcp-server-time"], "cwd"),
        (["--cwd", "sub"], "cwd"),
        (["--transport", "sse"], "transport"),
        (["--url", "https://example.com/mcp", "--socket", "/x.sock"], "transport"),
        (["--url", "https://example.com/mcp", "--limit-open-files", "5"], "limits"),
    ],
)
def test_set_refuses_an_invalid_target_and_changes_nothing(run, args: list[str], field: str) -> None:
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    before = _shown(run, "time")
    result = run("connector", "set", "time", *args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error[invalid_config]: {field}"), result.stderr
    assert _shown(run, "time") == before


def test_list_and_show_json_are_the_rest_apis_shapes(run, tmp_path: Path) -> None:
    from patchbay.interfaces.api.contracts import ConnectorDetail, ConnectorList

    assert run("connector", "add", "ghost", "--", "pb-no-such-command-for-cli-tests").exit_code == 0
    assert run("probe", "ghost", "--project", str(tmp_path)).exit_code != 0
    listed = json.loads(run("connector", "list", "--json").stdout)
    assert ConnectorList.model_validate(listed).model_dump(mode="json") == listed
    (item,) = listed["connectors"]
    assert (item["runtime_state"], item["tool_count"], item["last_probe"]["code"]) == ("error", 0, "command_not_found")
    shown = json.loads(run("connector", "show", "ghost", "--json").stdout)
    assert ConnectorDetail.model_validate(shown).model_dump(mode="json") == shown
    assert shown["runtime_options"]["lifecycle"] == "lazy" and shown["cache"]["state"] == "missing"
    assert shown["error"]["code"] == "command_not_found"


def test_plain_settings_and_env_defaults_are_bindings_shown_with_their_values(run, tmp_path: Path) -> None:
    added = run(
        "connector", "add", "t", "--json", "--project", str(tmp_path),
        "--env", "NODE_ENV=@plain:production", "--env", "PB_KEY=@env:PB_CLI_VAR:-fallback-value",
        "--", "mcp-server-time",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    views = {b["name"]: b for b in _shown(run)["bindings"]}
    assert (views["NODE_ENV"]["source"], views["NODE_ENV"]["plain"]) == ("plain", "production")
    assert (views["PB_KEY"]["variable"], views["PB_KEY"]["default"]) == ("PB_CLI_VAR", "fallback-value")
    shown = run("connector", "show", "t")
    assert "NODE_ENV = 'production' (plain setting" in shown.stdout
    assert "default 'fallback-value' when unset or empty" in shown.stdout


def test_the_list_table_shows_the_status_the_api_and_the_settings_page_show(run, tmp_path: Path) -> None:
    assert run("connector", "add", "off", "--disabled", "--", "mcp-server-time").exit_code == 0
    locked = run(
        "connector", "add", "locked", "--url", "https://mcp.example.com/mcp", "--bearer", "@env:PB_CLI_UNSET_VAR"
    )
    assert locked.exit_code == 0, locked.output
    assert run("connector", "add", "time", "--", "mcp-server-time").exit_code == 0
    assert run("connector", "add", "fresh", "--", "mcp-server-time").exit_code == 0
    assert run("probe", "time", "--project", str(tmp_path)).exit_code == 0

    statuses = {c["name"]: c["status"] for c in json.loads(run("connector", "list", "--json").stdout)["connectors"]}
    assert statuses == {"off": "disabled", "locked": "needs-auth", "time": "ready", "fresh": "unknown"}
    lines = run("connector", "list").stdout.splitlines()
    for name, status in statuses.items():
        line = next(line for line in lines if f" {name} " in line)
        assert f" {status} " in line, (name, line)


# -- --transport auto -----------------------------------------------------------------------------


def test_add_with_transport_auto_stores_the_detected_transport(run) -> None:
    from tests.support.servers import everything_http

    for kind, expected in (("streamableHttp", "streamable_http"), ("sse", "sse")):
        name = f"auto-{kind.lower()}"
        with everything_http(kind) as url:
            result = run("connector", "add", name, "--url", url, "--transport", "auto", "--allow-private", "--json")
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        assert body["connector"]["target"] == {"transport": expected, "url": url}
        assert body["transport_detection"]["transport"] == expected
        assert body["transport_detection"]["requested"] == "auto"
        shown = json.loads(run("connector", "show", name, "--json").stdout)
        assert shown["target"]["transport"] == expected


def test_add_with_transport_auto_and_a_closed_port_fails_and_stores_nothing(run) -> None:
    from tests.support.servers import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    result = run("connector", "add", "gone", "--url", url, "--transport", "auto", "--allow-private", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["code"] == "server_closed"
    assert json.loads(run("connector", "list", "--json").stdout)["connectors"] == []
    text = run("connector", "add", "gone", "--url", url, "--transport", "auto", "--allow-private")
    assert text.exit_code == 1 and "server_closed" in text.output


def test_set_refuses_transport_auto(run) -> None:
    assert run("connector", "add", "docs", "--url", "https://mcp.example.com/mcp").exit_code == 0
    result = run("connector", "set", "docs", "--url", "https://mcp.example.com/x", "--transport", "auto")
    assert result.exit_code == 1 and "transport" in result.output


def test_list_shows_builtins_in_their_own_group_and_remove_refuses_them(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHBAY_BUILTINS", "on")
    run("connector", "add", "mine", "--", "true")
    listed = run("connector", "list").stdout
    assert listed.index("mine") < listed.index("built-in connectors") < listed.index("paper-search")
    assert "Europe PMC" in listed.replace("\n", " ")
    removed = run("connector", "remove", "paper-search")
    assert removed.exit_code != 0
    assert "builtin_connector" in removed.stdout + removed.stderr
    assert "paper-search" in run("connector", "list").stdout
    shown = run("connector", "show", "literature-graph").stdout
    assert "OpenAlex (https://openalex.org)" in shown
    assert "terms" in shown and "https://openalex.org/terms" in shown
    assert "CC0 1.0 (https://creativecommons.org/publicdomain/zero/1.0/)" in shown
    as_json = json.loads(run("connector", "show", "literature-graph", "--json").stdout)
    assert as_json["data_sources"] == [
        {
            "name": "OpenAlex",
            "url": "https://openalex.org",
            "terms_url": "https://openalex.org/terms",
            "licence": "CC0 1.0",
            "licence_url": "https://creativecommons.org/publicdomain/zero/1.0/",
        }
    ]
    assert "data source" not in run("connector", "show", "mine").stdout


def test_a_command_that_cannot_be_found_is_stored_with_a_warning_saying_how_to_fix_it(run, tmp_path: Path) -> None:
    missing = run("connector", "add", "ghost", "--project", str(tmp_path), "--", "pb-no-such-command-xyz", "--flag")
    assert missing.exit_code == 0, missing.output  # stored: the command may be installed later
    assert "ghost: added" in missing.stdout
    assert "warning[command_not_found]" in missing.stderr and "pb-no-such-command-xyz" in missing.stderr
    assert "patchbay connector set ghost -- /path/to/command" in missing.stderr
    assert (
        json.loads(run("connector", "show", "ghost", "--json").stdout)["target"]["command"] == "pb-no-such-command-xyz"
    )

    (tmp_path / "server.sh").write_text("#!/bin/sh\n")  # exists, but is not executable
    as_json = run("connector", "add", "script", "--json", "--project", str(tmp_path), "--", "./server.sh")
    assert as_json.exit_code == 0, as_json.output
    (warning,) = json.loads(as_json.stdout)["warnings"]
    assert warning["code"] == "spawn_failed" and "not executable" in warning["message"] and warning["hint"]

    found = run("connector", "add", "sh", "--json", "--project", str(tmp_path), "--", "sh", "-c", "true")
    assert found.exit_code == 0 and json.loads(found.stdout)["warnings"] == [] and found.stderr == ""
    (tmp_path / "server.sh").chmod(0o755)
    fixed = run("connector", "set", "ghost", "--json", "--project", str(tmp_path), "--", "./server.sh")
    assert fixed.exit_code == 0 and json.loads(fixed.stdout)["warnings"] == []
    moved = run("connector", "set", "sh", "--project", str(tmp_path), "--", "pb-no-such-command-xyz")
    assert moved.exit_code == 0 and "warning[command_not_found]" in moved.stderr
