"""The runtime option flags of ``patchbay connector add/set`` (timeouts, restarts, limits, sizes,
``--reset``) and how ``connector show`` prints them."""

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


def _shown(run, name: str = "t") -> dict:
    result = run("connector", "show", name, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_set_and_show_round_trip_every_runtime_option_as_json(run) -> None:
    assert run("connector", "add", "t", "--", "true").exit_code == 0
    defaults = _shown(run)["runtime_options"]
    assert defaults["lifecycle"] == "lazy" and defaults["restart"]["enabled"] is True
    assert defaults["request_timeout"] == 60.0 and defaults["limits"]["open_files"] is None
    result = run(
        "connector", "set", "t", "--json",
        "--lifecycle", "keep_alive", "--idle-timeout", "90", "--request-timeout", "2.5", "--max-call-seconds", "30",
        "--no-restart", "--restart-base", "1", "--restart-cap", "20", "--max-restarts", "7",
        "--limit-memory", "512M", "--limit-cpu", "60", "--limit-open-files", "128",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = {
        "lifecycle": "keep_alive",
        "idle_timeout": 90.0,
        "request_timeout": 2.5,
        "max_call_seconds": 30.0,
        "restart": {"enabled": False, "base_delay": 1.0, "max_delay": 20.0, "max_restarts": 7},
        "limits": {"address_space_bytes": 512 * 2**20, "cpu_seconds": 60, "open_files": 128},
    }
    effective = {**expected, "allow_private": False, "unresponsive_timeouts": 3}  # the setting's default
    assert json.loads(result.stdout)["runtime_options"] == effective
    shown = _shown(run)
    assert shown["runtime_options"] == effective
    assert json.loads(result.stdout)["connector"]["runtime_config"] == expected and shown["revision"] == 2


def test_allow_private_is_an_explicit_option_of_remote_connectors_only(run) -> None:
    url = "http://127.0.0.1:8931/mcp"
    added = run("connector", "add", "r", "--json", "--url", url, "--allow-private")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["connector"]["runtime_config"] == {"allow_private": True}
    assert "private addresses: allowed\n" in run("connector", "show", "r").stdout
    refused = json.loads(run("connector", "set", "r", "--no-allow-private", "--json").stdout)
    assert refused["connector"]["runtime_config"] == {"allow_private": False}
    assert _shown(run, "r")["runtime_options"]["allow_private"] is False
    reset = json.loads(run("connector", "set", "r", "--reset", "allow-private", "--json").stdout)
    assert reset["connector"]["runtime_config"] == {}
    assert "private addresses: refused (default)" in run("connector", "show", "r").stdout
    local = run("connector", "add", "t", "--allow-private", "--", "true")
    assert local.exit_code == 1 and local.stderr.startswith("error[invalid_config]: allow_private: ")
    assert run("connector", "add", "t", "--", "true").exit_code == 0
    assert "private addresses: - (remote only)" in run("connector", "show", "t").stdout
    refused = run("connector", "set", "t", "--json", "--allow-private")
    assert json.loads(refused.stdout)["error"]["details"] == {"field": "allow_private"}


def test_show_marks_defaults_and_prints_the_effective_options_as_text(run) -> None:
    run("connector", "add", "t", "--request-timeout", "5", "--limit-memory", "2G", "--", "true")
    text = run("connector", "show", "t").stdout
    assert "lifecycle: lazy (default)" in text
    assert "request timeout: 5s\n" in text and "max call: 600s (default)" in text
    assert "restart: on: 0.5s doubling up to 10s, at most 3 restarts (default)" in text
    assert "limits: memory 2 GiB" in text
    run("connector", "set", "t", "--lifecycle", "keep_alive", "--no-restart")
    text = run("connector", "show", "t").stdout
    assert "idle timeout: never (keep_alive)" in text and "restart: off: the first crash is permanent" in text


def test_unresponsive_timeouts_are_set_shown_and_reset(run) -> None:
    run("connector", "add", "t", "--", "true")
    assert "unresponsive: restarted after 3 request timeouts in a row (default)" in run("connector", "show", "t").stdout
    assert run("connector", "set", "t", "--unresponsive-timeouts", "0").exit_code == 0
    assert _shown(run)["runtime_options"]["unresponsive_timeouts"] == 0
    assert "unresponsive: never restarted for timeouts\n" in run("connector", "show", "t").stdout
    refused = run("connector", "set", "t", "--unresponsive-timeouts", "often")
    assert refused.exit_code != 0 and "unresponsive_timeouts" in refused.output
    assert run("connector", "set", "t", "--reset", "unresponsive-timeouts").exit_code == 0
    assert _shown(run)["runtime_options"]["unresponsive_timeouts"] == 3


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ("1048576", 2**20),
        ("4096K", 4096 * 2**10),
        ("512m", 512 * 2**20),
        ("2G", 2 * 2**30),
        ("1GiB", 2**30),
        ("3 MB", 3 * 2**20),
    ],
)
def test_limit_memory_takes_bytes_or_binary_suffixes(run, size: str, expected: int) -> None:
    run("connector", "add", "t", "--", "true")
    assert run("connector", "set", "t", "--limit-memory", size).exit_code == 0
    assert _shown(run)["runtime_options"]["limits"]["address_space_bytes"] == expected


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--lifecycle", "forever"], "lifecycle"),
        (["--idle-timeout", "soon"], "idle_timeout"),
        (["--idle-timeout", "0"], "idle_timeout"),
        (["--request-timeout", "-1"], "request_timeout"),
        (["--request-timeout", "inf"], "request_timeout"),
        (["--max-call-seconds", "nan"], "max_call_seconds"),
        (["--restart-base", "0"], "restart.base_delay"),
        (["--restart-cap", "x"], "restart.max_delay"),
        (["--max-restarts", "1.5"], "restart.max_restarts"),
        (["--max-restarts", "-1"], "restart.max_restarts"),
        (["--max-restarts", "1000"], "restart.max_restarts"),
        (["--limit-memory", "lots"], "limits.address_space_bytes"),
        (["--limit-memory", "1.5G"], "limits.address_space_bytes"),
        (["--limit-memory", "512"], "limits.address_space_bytes"),
        (["--limit-cpu", "0"], "limits.cpu_seconds"),
        (["--limit-open-files", "-3"], "limits.open_files"),
        (["--reset", "everything"], "reset"),
        (["--reset", "request-timeout", "--request-timeout", "3"], "request_timeout"),
        (["--reset", "restart", "--max-restarts", "3"], "restart"),
        (["--approval-mode", "allow_all", "--request-timeout", "0"], "request_timeout"),
    ],
)
def test_a_bad_runtime_option_is_one_invalid_config_line_and_changes_nothing(run, args: list[str], field: str) -> None:
    run("connector", "add", "t", "--request-timeout", "9", "--", "true")
    before = _shown(run)
    result = run("connector", "set", "t", *args)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error[invalid_config]: {field}: "), result.stderr
    as_json = run("connector", "set", "t", "--json", *args)
    assert as_json.exit_code == 1
    error = json.loads(as_json.stdout)["error"]
    assert (error["code"], error["details"]) == ("invalid_config", {"field": field})
    assert error["message"] == lines[0].removeprefix("error[invalid_config]: ")
    assert _shown(run) == before


def test_reset_puts_options_back_to_their_defaults(run) -> None:
    run(
        "connector",
        "add",
        "t",
        "--lifecycle",
        "eager",
        "--restart-base",
        "2",
        "--max-restarts",
        "1",
        "--limit-cpu",
        "5",
        "--",
        "true",
    )
    result = run(
        "connector", "set", "t", "--json", "--reset", "lifecycle", "--reset", "restart-base", "--reset", "limits"
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["connector"]["runtime_config"] == {"restart": {"max_restarts": 1}}
    assert payload["runtime_options"]["lifecycle"] == "lazy"
    assert payload["runtime_options"]["restart"] == {
        "enabled": True,
        "base_delay": 0.5,
        "max_delay": 10.0,
        "max_restarts": 1,
    }
    assert payload["runtime_options"]["limits"] == {
        "address_space_bytes": None,
        "cpu_seconds": None,
        "open_files": None,
    }


def test_add_takes_runtime_options_and_refuses_limits_on_a_remote_connector(run) -> None:
    added = run("connector", "add", "t", "--json", "--lifecycle", "eager", "--limit-open-files", "64", "--", "true")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["connector"]["runtime_config"] == {
        "lifecycle": "eager",
        "limits": {"open_files": 64},
    }
    remote = run("connector", "add", "r", "--url", "https://example.com/mcp", "--limit-cpu", "5")
    assert remote.exit_code == 1 and remote.stderr.startswith("error[invalid_config]: limits: ")
    bad = run("connector", "add", "b", "--json", "--request-timeout", "never", "--", "true")
    assert bad.exit_code == 1 and json.loads(bad.stdout)["error"]["details"] == {"field": "request_timeout"}
    assert [c["name"] for c in json.loads(run("connector", "list", "--json").stdout)["connectors"]] == ["t"]
    timed = run("connector", "add", "r", "--json", "--url", "https://example.com/mcp", "--request-timeout", "4")
    assert json.loads(timed.stdout)["runtime_options"]["request_timeout"] == 4.0
