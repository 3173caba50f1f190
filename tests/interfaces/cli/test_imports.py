"""`patchbay import preview|commit` (seed 003 §12, §14.3 "config import preview 不回显 secret，只显示
configured: true", §19.10): JSON and text output, exit codes, no value ever printed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchbay.interfaces.cli import app

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "import_configs"
CANARIES = (
    "ghp_cnryDESKTOPaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "cnryDESKTOPplain-5e6f7a8b",
    "cnryCLAUDEaccount-0badc0de",
    "cnryDEFAULTsecret-77aa88bb",
    "cnryPROJECTkey-4c3b2a19",
    "cnryCLIenvfile-13572468",
)


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    out = {name: tmp_path / name for name in ("data", "workspace", "home")}
    out["workspace"].mkdir()
    out["home"].mkdir()
    return out


def place(name: str, dest: Path, workspace: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text((SAMPLES / name).read_text().replace("__WORKSPACE__", str(workspace)))
    return dest


@pytest.fixture
def run(dirs: dict[str, Path]):
    runner = CliRunner()

    def invoke(*args: str, code: int = 0):
        places = ["--project", str(dirs["workspace"]), "--user-home", str(dirs["home"])] if args[0] == "import" else []
        result = runner.invoke(app, ["--home", str(dirs["data"]), *args, *places], catch_exceptions=False)
        for canary in CANARIES:
            assert canary not in result.stdout and canary not in result.stderr, (args, canary)
        assert result.exit_code == code, result.output
        return result

    return invoke


@pytest.fixture
def all_samples(dirs: dict[str, Path]) -> None:
    ws, home = dirs["workspace"], dirs["home"]
    place("project_mcp.json", ws / ".mcp.json", ws)
    place("vscode_mcp.json", ws / ".vscode/mcp.json", ws)
    place("pi_mcp.json", ws / ".pi/mcp.json", ws)
    (ws / "tools").mkdir()
    (ws / ".env").write_text("SECRET_TOKEN=cnryCLIenvfile-13572468\n")
    place("claude_desktop_config.json", home / ".config/Claude/claude_desktop_config.json", ws)
    place("claude.json", home / ".claude.json", ws)
    place("cursor_mcp.json", home / ".cursor/mcp.json", ws)


def test_preview_json_reports_every_entry_and_never_a_value(run, all_samples) -> None:
    standard = json.loads(run("import", "preview", "--json").stdout)
    names = [e["name"] for e in standard["entries"]]
    assert names == ["api", "plain", "vault", "sock", "shouty", "braced", "perplexity", "fetch", "with-env-file"]
    entries = {e["name"]: e for e in standard["entries"]}
    assert entries["shouty"]["transport"] == "streamable_http"
    assert entries["shouty"]["transport_spelling"] == 'transport: "STREAMABLEHTTP"'
    assert entries["vault"]["helpers"] == [{"field": "env.VAULT_TOKEN", "program": "op", "run": False}]
    assert [b["variable"] for b in entries["vault"]["bindings"] if b["source"] == "environment"] == ["VAULT_ADDR"]
    assert entries["braced"]["bindings"][0]["variable"] == "BRACED_KEY"
    assert entries["sock"]["outside_workspace"] == [{"field": "socket", "path": "/tmp/pb-import-test.sock"}]
    assert entries["with-env-file"]["plaintext"] == [{"field": "envFile:SECRET_TOKEN", "configured": True}]
    hosts = json.loads(run("import", "preview", "claude-desktop", "claude-code", "cursor", "--json").stdout)
    assert {f["host"] for f in hosts["files"]} == {"claude_desktop", "claude_code", "cursor"}
    github = next(e for e in hosts["entries"] if e["name"] == "GitHub")
    assert github["plaintext"] == [  # a random-looking value is a suspected secret even under a plain name
        {"field": "env.GITHUB_PERSONAL_ACCESS_TOKEN", "configured": True},
        {"field": "env.GITHUB_HOST", "configured": True},
    ]


def test_preview_text_names_secrets_only_as_configured(run, all_samples) -> None:
    out = run("import", "preview", "claude-desktop", "--diff").stdout
    assert "GitHub → github  [importable, lossless]" in out
    assert "env GITHUB_PERSONAL_ACCESS_TOKEN ← plaintext value (configured: true)" in out
    assert "+++ patchbay connector github" in out


def test_preview_runs_no_command_or_helper(run, dirs: dict[str, Path], tmp_path: Path) -> None:
    ran, helped = tmp_path / "ran", tmp_path / "helped"
    (dirs["workspace"] / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "w": {
                        "command": sys.executable,
                        "args": ["-c", f"open({str(ran)!r}, 'w')"],
                        "env": {"K": f"!{sys.executable} -c \"open({str(helped)!r}, 'w')\""},
                    }
                }
            }
        )
    )
    out = run("import", "preview").stdout
    assert "not run" in out and "[helper_not_run]" in out
    assert not ran.exists() and not helped.exists()


def test_a_malformed_file_exits_1_with_line_and_column(run, dirs: dict[str, Path]) -> None:
    bad = place("malformed.json", dirs["workspace"] / ".mcp.json", dirs["workspace"])
    before = bad.read_bytes()
    report = json.loads(run("import", "preview", "--json", code=1).stdout)
    [malformed] = [f for f in report["files"] if f["status"] == "malformed"]
    assert (malformed["error"]["details"]["line"], malformed["error"]["details"]["column"]) == (4, 5)
    text = run("import", "preview", code=1)
    assert "malformed (line 4, column 5)" in text.stderr
    error = json.loads(run("import", "commit", "--select", "a", "--json", code=1).stdout)["error"]
    assert error["code"] == "invalid_config" and error["details"]["line"] == 4
    assert bad.read_bytes() == before


def test_commit_select_rename_references_only_and_conflicts(run, dirs: dict[str, Path], all_samples) -> None:
    refused = json.loads(run("import", "commit", "--select", "plain", "--references-only", "--json", code=1).stdout)[
        "error"
    ]
    assert refused["code"] == "invalid_config" and refused["details"]["field"] == "references_only"
    assert json.loads(run("connector", "list", "--json").stdout)["connectors"] == []

    done = json.loads(
        run(
            "import", "commit", "--select", "api,fetch", "--rename", "fetch=fetcher", "--references-only", "--json"
        ).stdout
    )
    assert [(i["name"], i["connector"]) for i in done["imported"]] == [("api", "api"), ("fetch", "fetcher")]
    listed = {c["name"]: c for c in json.loads(run("connector", "list", "--json").stdout)["connectors"]}
    assert set(listed) == {"api", "fetcher"} and listed["api"]["source"] == "imported"

    again = json.loads(run("import", "commit", "--select", "api", "--json", code=1).stdout)["error"]
    assert again["details"]["conflict"]["connector"] == "api"
    preview = json.loads(run("import", "preview", "--json").stdout)
    api = next(e for e in preview["entries"] if e["name"] == "api")
    assert api["conflict"]["same_target"] is True and api["importable"] is False

    mapped = run("import", "commit", "--select", "perplexity", "--input", "perplexity-key=PPLX_KEY")
    assert "perplexity: imported (stdio)" in mapped.stdout and "environment variable PPLX_KEY" in mapped.stdout
    plain = run("import", "commit", "--select", "plain", "--disabled", "--json")
    assert json.loads(plain.stdout)["imported"][0]["connector"] == "plain"
    holding = [p.name for p in dirs["data"].iterdir() if "cnryPROJECTkey-4c3b2a19" in p.read_text(errors="replace")]
    assert holding == ["credentials.json"]


def test_bad_flags_are_invalid_config(run, all_samples) -> None:
    for args in (["--rename", "nope"], ["--input", "x"], ["--rename", "api=Bad Name"]):
        error = json.loads(run("import", "preview", *args, "--json", code=1).stdout)["error"]
        assert error["code"] == "invalid_config"
    missing = json.loads(run("import", "commit", "--select", "ghost", "--json", code=1).stdout)["error"]
    assert missing["code"] == "not_found"


def test_a_second_name_after_one_select_is_a_missing_file_and_the_error_says_how_to_select_two(
    run, all_samples
) -> None:
    error = json.loads(run("import", "commit", "--select", "api", "fetch", "--json", code=1).stdout)["error"]
    assert error["code"] == "not_found" and error["details"]["path"].endswith("/fetch")
    assert "no such file" in error["message"]
    assert "--select api,fetch" in error["message"] and "repeat --select" in error["message"]
    assert json.loads(run("connector", "list", "--json").stdout)["connectors"] == []
    both = json.loads(run("import", "commit", "--select", "api", "--select", "fetch", "--json").stdout)
    assert [i["name"] for i in both["imported"]] == ["api", "fetch"]


def test_a_refused_definition_names_its_field_once(run, dirs: dict[str, Path]) -> None:
    (dirs["workspace"] / ".mcp.json").write_text('{"mcpServers": {"shell": {"command": "npx -y some-server"}}}')
    error = json.loads(run("import", "commit", "--select", "shell", "--json", code=1).stdout)["error"]
    assert error["message"].startswith("select: shell cannot be imported: command: must be one executable")
    assert "command: command:" not in error["message"]
    problem = error["details"]["problems"][0]
    assert problem["field"] == "command" and not problem["message"].startswith("command:")


def test_terminal_escapes_in_a_file_are_shown_not_obeyed(run, dirs: dict[str, Path]) -> None:
    (dirs["workspace"] / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil\x1b[2J": {"command": "x"}}}))
    out = run("import", "preview").stdout
    assert "\x1b" not in out and "evil\\x1b[2J → evil-2j" in out


def test_preview_shows_the_classification_and_plain_and_secret_override_it(run, all_samples) -> None:
    preview = json.loads(run("import", "preview", "--json").stdout)
    plain = next(e for e in preview["entries"] if e["name"] == "plain")
    assert {b["name"]: (b["source"], b["plain"]) for b in plain["bindings"]} == {
        "LOG_LEVEL": ("plain", "debug"),
        "SERVICE_API_KEY": ("managed", None),
    }
    assert "plain setting (not a secret)" in run("import", "preview").stdout
    bad = json.loads(run("import", "preview", "--plain", "env.NOPE", "--json", code=1).stdout)["error"]
    assert (bad["code"], bad["details"]["field"]) == ("invalid_config", "classify")
    both = json.loads(run("import", "preview", "--plain", "env.X", "--secret", "env.X", "--json", code=1).stdout)
    assert both["error"]["details"]["field"] == "classify"
    done = json.loads(run("import", "commit", "--select", "plain", "--secret", "plain:env.LOG_LEVEL", "--json").stdout)
    views = {v["name"]: v for v in done["imported"][0]["bindings"]}
    assert views["LOG_LEVEL"]["source"] == "managed" and views["SERVICE_API_KEY"]["source"] == "managed"
