"""`patchbay connector add/set --env/--header/--bearer/--unset` and `patchbay credential list|show|set|rm`:
references everywhere, values nowhere (seed 003 §11.1, addendum 2026-09-07)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app
from tests.support.credentials import files_under, stdio_argv

VALUE = "cnryCLIvalue-3c4d5e6f"
ROTATED = "cnryCLIrotated-7a8b9c0d"
BEARER = "cnryCLIbearer-1f2e3d4c"
HEADER = "cnryCLIheader-5b6a7988"
ALL = (VALUE, ROTATED, BEARER, HEADER)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def run(home: Path):
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, ok: bool = True):
        result = runner.invoke(app, ["--home", str(home), *args], input=input, catch_exceptions=False)
        for value in ALL:
            assert value not in result.stdout and value not in result.stderr, (args, result.output)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return invoke


def add_local(run, *flags: str):
    return run("connector", "add", "local", *flags, "--json", "--", *stdio_argv())


def test_add_binds_by_reference_and_no_output_or_database_holds_the_value(run, home: Path) -> None:
    added = json.loads(add_local(run, "--env", f"PB_KEY={VALUE}", "--env", "PB_HOST=@env:PB_CLI_VAR").stdout)
    bindings = {b["name"]: b for b in added["bindings"]}
    assert (bindings["PB_KEY"]["source"], bindings["PB_KEY"]["kind"]) == ("managed", "api_key")
    assert (bindings["PB_HOST"]["source"], bindings["PB_HOST"]["variable"]) == ("environment", "PB_CLI_VAR")
    stored = added["connector"]["runtime_config"]["bindings"]
    assert {b["ref"] for b in stored} == {b["ref"] for b in added["bindings"]}

    shown = run("connector", "show", "local").stdout
    assert f"env PB_KEY from {bindings['PB_KEY']['ref']} (stored api_key)" in shown
    assert "environment variable PB_CLI_VAR" in shown

    listed = json.loads(run("credential", "list", "--json").stdout)["items"]
    assert {item["id"] for item in listed} == {b["ref"] for b in added["bindings"]}
    assert all(item["owner"] == "local" and item["configured"] for item in listed)
    assert all(item["last_used_at"] is None for item in listed)
    text = run("credential", "list").stdout
    assert "configured" in text and "local env PB_KEY" in text and "never" in text

    database = b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("patchbay.db"))
    assert database and VALUE.encode() not in database
    holding = [p.name for p in files_under(home) if VALUE in p.read_text(errors="replace")]
    assert holding == ["credentials.json"]


def test_remote_bearer_and_header_and_show_of_one_credential(run) -> None:
    added = run(
        "connector",
        "add",
        "remote",
        "--url",
        "https://example.com/mcp",
        "--bearer",
        BEARER,
        "--header",
        f"X-Api-Key: {HEADER}",
        "--json",
    )
    views = {b["delivery"]: b for b in json.loads(added.stdout)["bindings"]}
    assert views["bearer"]["kind"] == "bearer_token" and views["header"]["name"] == "X-Api-Key"
    shown = run("credential", "show", views["bearer"]["ref"]).stdout
    assert "bearer_token" in shown and "remote header Authorization (bearer)" in shown and "managed" in shown
    item = json.loads(run("credential", "show", views["bearer"]["ref"], "--json").stdout)["item"]
    assert item["id"] == views["bearer"]["ref"] and item["configured"] is True


def test_set_rotates_in_place_unsets_and_reads_a_value_from_stdin(run) -> None:
    ref = json.loads(add_local(run, "--env", f"PB_KEY={VALUE}").stdout)["bindings"][0]["ref"]
    rotated = json.loads(run("connector", "set", "local", "--env", f"PB_KEY={ROTATED}", "--json").stdout)
    assert rotated["bindings"][0]["ref"] == ref
    run("credential", "set", ref, "--value-stdin", input=f"{VALUE}\n")
    run("connector", "set", "local", "--env", "PB_OTHER=@env:PB_CLI_VAR")
    after = json.loads(run("connector", "set", "local", "--unset", "env:PB_KEY", "--json").stdout)
    assert [b["name"] for b in after["bindings"]] == ["PB_OTHER"]
    gone = run("credential", "show", ref, ok=False)
    assert gone.exit_code == 1 and "error[not_found]" in gone.stderr


def test_a_bound_credential_needs_force_and_its_connector_then_shows_the_problem(run) -> None:
    ref = json.loads(add_local(run, "--env", f"PB_KEY={VALUE}").stdout)["bindings"][0]["ref"]
    refused = run("credential", "rm", ref, ok=False)
    assert refused.exit_code == 1 and refused.stderr.startswith("error[invalid_config]: force:")
    assert "local (env PB_KEY)" in refused.stderr
    removed = json.loads(run("credential", "rm", ref, "--force", "--json").stdout)
    assert removed["removed"] == ref
    shown = json.loads(run("connector", "show", "local", "--json").stdout)
    assert shown["bindings"][0]["problem"] == "missing"


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--bearer", BEARER], "bindings"),
        (["--env", f"not-a-name={VALUE}"], "env"),
        (["--env", VALUE], "env"),
        (["--env", "PB_KEY=@vault:x"], "env"),
        (["--env", f"PB_KEY={VALUE}", "--env", f"PB_KEY={ROTATED}"], "bindings"),
    ],
)
def test_bad_bindings_are_one_line_errors_that_never_quote_a_value(run, flags: list[str], field: str) -> None:
    result = run("connector", "add", "local", *flags, "--", sys.executable, "-c", "pass", ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error[invalid_config]: {field}") and result.stderr.count("\n") == 1
    as_json = run("connector", "add", "local", *flags, "--json", "--", sys.executable, "-c", "pass", ok=False)
    assert json.loads(as_json.stdout)["error"]["details"]["field"] == field
    assert json.loads(run("connector", "list", "--json").stdout)["connectors"] == []
    assert json.loads(run("credential", "list", "--json").stdout)["items"] == []


def test_removing_the_connector_removes_its_credentials(run) -> None:
    add_local(run, "--env", f"PB_KEY={VALUE}")
    run("connector", "remove", "local")
    assert json.loads(run("credential", "list", "--json").stdout)["items"] == []
    assert "no stored credentials" in run("credential", "list").stdout
