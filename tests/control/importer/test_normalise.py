"""Normalisation of one definition: every host difference (shared/notes/host-config-formats.md) and
what it maps to."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from patchbay.control.importer.discovery import Scope, SourceFile
from patchbay.control.importer.normalise import Context, Draft, connector_name_for, normalise
from patchbay.core.models import HttpTarget, SocketTarget, StdioTarget

SECRET = "cnryNORMsecret-a1b2c3d4"


def run(
    raw: Any,
    workspace: Path,
    home: Path,
    *,
    inputs: dict | None = None,
    mapped: dict | None = None,
    classify: dict | None = None,
) -> Draft:
    source = SourceFile(path=workspace / ".mcp.json", host="generic", origin="standard", label=".mcp.json")
    scope = Scope(source=source, scope="file", root_key="mcpServers", servers={"s": raw}, inputs=inputs or {})
    ctx = Context(workspace=workspace, home=home, input_variables=mapped or {}, classify=classify or {})
    return normalise("s", raw, scope, ctx)


def codes(issues: list) -> list[str]:
    return [i.code for i in issues]


def bindings(draft: Draft) -> dict[str, tuple[str, str, str | None]]:
    return {b.field: (b.delivery, b.source, b.variable) for b in draft.bindings}


# -- transports -------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["http", "streamable-http", "streamableHttp", "STREAMABLEHTTP", "streamable_http"])
@pytest.mark.parametrize("key", ["type", "transport"])
def test_every_spelling_of_streamable_http_under_type_or_transport(
    spelling: str, key: str, workspace: Path, home: Path
) -> None:
    draft = run({key: spelling, "url": "https://x.example.com/mcp"}, workspace, home)
    assert draft.problems == []
    assert draft.target == HttpTarget(transport="streamable_http", url="https://x.example.com/mcp")
    assert draft.transport_spelling == f'{key}: "{spelling}"'


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("https://x.example.com/sse", "sse"),
        ("https://x.example.com/v1/sse/", "sse"),
        ("https://x.example.com/sse?session=1", "sse"),
        ("https://x.example.com/mcp", "streamable_http"),
        ("https://x.example.com/sse-bridge/mcp", "streamable_http"),
    ],
)
def test_a_url_without_type_is_sse_only_when_its_path_ends_in_sse(
    url: str, transport: str, workspace: Path, home: Path
) -> None:
    draft = run({"url": url}, workspace, home)
    assert draft.transport == transport and draft.problems == []


def test_explicit_sse_stdio_and_socket_and_inference(workspace: Path, home: Path) -> None:
    assert run({"type": "sse", "url": "https://x.example.com/events"}, workspace, home).transport == "sse"
    stdio = run({"command": sys.executable, "args": ["-V"]}, workspace, home)
    assert (
        stdio.target == StdioTarget(command=sys.executable, args=("-V",))
        and stdio.transport_spelling == "inferred from command"
    )
    sock = run({"socket": "~/run/mcp.sock"}, workspace, home)
    assert sock.target == SocketTarget(path=str(home / "run/mcp.sock"))
    assert [(p.field, p.path) for p in sock.outside] == [("socket", str(home / "run/mcp.sock"))]  # reported only
    assert sock.problems == []


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ({"type": "ws", "url": "wss://x.example.com"}, "unsupported_transport"),
        ({"type": "stdio", "transport": "sse", "command": "x"}, "transport_mismatch"),
        ({"command": "x", "url": "https://x.example.com/mcp"}, "no_single_target"),
        ({"type": "http", "command": "x"}, "missing_field"),
        ({"type": "stdio", "command": "x", "url": "https://x.example.com/mcp"}, "conflicting_fields"),
        ({}, "no_single_target"),
        ("not an object", "not_an_object"),
    ],
)
def test_transport_contradictions_are_problems(raw: Any, code: str, workspace: Path, home: Path) -> None:
    assert code in codes(run(raw, workspace, home).problems)


# -- env and headers ----------------------------------------------------------------------------


def test_every_env_syntax_becomes_an_environment_reference(workspace: Path, home: Path) -> None:
    draft = run(
        {
            "command": "server",
            "env": {
                "A": "${VAR_A}",
                "B": "${VAR_B:-fall:-back}",
                "C": "${env:VAR_C}",
                "D": "$env:VAR_D",
                "E": "{env:VAR_E}",
                "F": "${VAR_F-only-unset}",
            },
        },
        workspace,
        home,
    )
    assert draft.problems == []
    assert bindings(draft) == {f"env.{k}": ("env", "environment", f"VAR_{k}") for k in "ABCDEF"}
    assert [b.spec.variable for b in draft.bindings] == [f"VAR_{k}" for k in "ABCDEF"]  # type: ignore[union-attr]
    assert draft.losses == []  # a default is kept with the reference, not dropped
    assert [b.has_default for b in draft.bindings] == [False, True, False, False, False, True]
    b, f = draft.bindings[1], draft.bindings[5]
    assert (b.spec.default, b.spec.default_mode, b.shown) == ("fall:-back", "unset_or_empty", "fall:-back")  # type: ignore[union-attr]
    assert (f.spec.default, f.spec.default_mode) == ("only-unset", "unset")  # type: ignore[union-attr]


def test_a_secret_default_is_flagged_and_never_stored(workspace: Path, home: Path) -> None:
    draft = run(
        {"url": "https://x.example.com/mcp", "headers": {"Authorization": f"Bearer ${{TOKEN:-{SECRET}}}"}},
        workspace,
        home,
    )
    [binding] = draft.bindings
    assert (binding.delivery, binding.source, binding.variable) == ("bearer", "environment", "TOKEN")
    assert binding.spec is not None and binding.spec.value is None
    assert draft.secrets == ["headers.Authorization"]


def test_headers_bearer_and_plaintext_values(workspace: Path, home: Path) -> None:
    draft = run(
        {
            "url": "https://x.example.com/mcp",
            "headers": {"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET, "X-Tenant": "${TENANT}"},
        },
        workspace,
        home,
    )
    assert draft.problems == []
    assert bindings(draft) == {
        "headers.Authorization": ("bearer", "managed", None),
        "headers.X-Api-Key": ("header", "managed", None),
        "headers.X-Tenant": ("header", "environment", "TENANT"),
    }
    assert [b.spec.value for b in draft.bindings[:2]] == [SECRET, SECRET]  # type: ignore[union-attr]
    assert draft.secrets == ["headers.Authorization", "headers.X-Api-Key"]
    assert SECRET not in repr(draft)


def test_plaintext_env_values_are_classified_secret_looking_ones_managed_the_rest_plain(
    workspace: Path, home: Path
) -> None:
    env = {"LOG_LEVEL": "debug", "MY_TOKEN": SECRET, "GH": "ghp_" + "a" * 36, "PORT": 8080, "NODE_ENV": "production"}
    draft = run({"command": "server", "env": env}, workspace, home)
    assert {b.field: (b.source, b.sensitive) for b in draft.bindings} == {
        "env.LOG_LEVEL": ("plain", False),
        "env.MY_TOKEN": ("managed", True),
        "env.GH": ("managed", True),
        "env.PORT": ("plain", False),
        "env.NODE_ENV": ("plain", False),
    }
    assert draft.bindings[3].spec.plain == "8080" and draft.bindings[3].shown == "8080"  # type: ignore[union-attr]
    assert draft.secrets == ["env.MY_TOKEN", "env.GH"]


def test_the_user_overrides_the_classification_of_a_value(workspace: Path, home: Path) -> None:
    env = {"REGION": "eu-west-1", "MY_TOKEN": "not-a-secret-really"}
    draft = run(
        {"command": "server", "env": env},
        workspace,
        home,
        classify={"s:env.REGION": "credential", "env.MY_TOKEN": "plain"},
    )
    assert {b.field: b.source for b in draft.bindings} == {"env.REGION": "managed", "env.MY_TOKEN": "plain"}
    assert draft.bindings[0].spec.value == "eu-west-1"  # type: ignore[union-attr]
    forced = run({"command": "server", "env": {"GH": "ghp_" + "a" * 36}}, workspace, home, classify={"env.GH": "plain"})
    assert codes(forced.problems) == ["bad_binding"]  # a key shape is never stored as a plain value


def test_pi_bearer_token_fields(workspace: Path, home: Path) -> None:
    draft = run({"url": "https://x.example.com/mcp", "bearerTokenEnv": "SHOUT"}, workspace, home)
    assert bindings(draft) == {"bearerTokenEnv": ("bearer", "environment", "SHOUT")}
    draft = run({"url": "https://x.example.com/mcp", "bearerToken": SECRET}, workspace, home)
    assert bindings(draft) == {"bearerToken": ("bearer", "managed", None)} and draft.secrets == ["bearerToken"]


@pytest.mark.parametrize(
    ("raw", "where", "code"),
    [
        ({"command": "s", "env": {"K": "prefix-${VAR}"}}, "env.K", "mixed_value"),
        (
            {"url": "https://x.example.com/mcp", "headers": {"Authorization": "token ${GH}"}},
            "headers.Authorization",
            "mixed_value",
        ),
        ({"command": "s", "env": {"K": "${command:pick}"}}, "env.K", "mixed_value"),
        ({"command": "s", "args": ["--key", "${KEY}"]}, "args[1]", "reference_not_supported"),
        ({"command": "${BIN}/server"}, "command", "reference_not_supported"),
        ({"url": "https://${HOST}/mcp"}, "url", "reference_not_supported"),
        ({"command": "s", "args": ["${config:x}"]}, "args[0]", "unsupported_variable"),
        ({"command": "s", "env": {"bad-name": "x"}}, "env.bad-name", "bad_binding"),
        (
            {"url": "https://x.example.com/mcp", "headers": {"Content-Type": "${CT}"}},
            "headers.Content-Type",
            "bad_binding",
        ),
        ({"command": "s", "env": {"K": {"nested": 1}}}, "env.K", "bad_value"),
        ({"command": "s", "args": ["--token", "ghp_" + "b" * 36]}, "args", "invalid_args"),
        ({"url": "https://user:pw@x.example.com/mcp"}, "url", "invalid_url"),
        ({"command": "s", "env": {"A": "${X}"}, "bearerToken": "t"}, None, None),
    ],
)
def test_values_that_cannot_be_imported_as_written(
    raw: dict, where: str | None, code: str | None, workspace: Path, home: Path
) -> None:
    draft = run(raw, workspace, home)
    if code is None:  # bearerToken on a local command: not a stdio key, so a loss
        assert ("bearerToken", "field_not_imported") in [(i.field, i.code) for i in draft.losses]
        return
    assert (where, code) in [(i.field, i.code) for i in draft.problems]


def test_a_plaintext_argument_secret_is_flagged_and_the_url_secret_redacted(workspace: Path, home: Path) -> None:
    draft = run({"command": "s", "args": ["--key", "ghp_" + "c" * 36]}, workspace, home)
    assert "args[1]" in draft.secrets and "ghp_" not in str(draft.target_view)
    draft = run({"url": "https://x.example.com/mcp?access_token=" + SECRET}, workspace, home)
    assert "url" in draft.secrets and SECRET not in str(draft.target_view)


def test_vscode_input_needs_user_input_unless_mapped(workspace: Path, home: Path) -> None:
    inputs = {"key": {"id": "key", "type": "promptString", "password": True}}
    raw = {"type": "stdio", "command": "s", "env": {"API_KEY": "${input:key}"}}
    draft = run(raw, workspace, home, inputs=inputs)
    assert codes(draft.problems) == ["needs_input"]
    assert [(i.id, i.masked, i.defined, i.mapped_to) for i in draft.inputs] == [("key", True, True, None)]
    mapped = run(raw, workspace, home, inputs=inputs, mapped={"key": "MY_KEY"})
    assert mapped.problems == [] and bindings(mapped) == {"env.API_KEY": ("env", "environment", "MY_KEY")}
    undefined = run({"command": "s", "env": {"K": "${input:other}"}}, workspace, home)
    assert [(i.id, i.defined) for i in undefined.inputs] == [("other", False)] and codes(undefined.problems) == [
        "needs_input"
    ]


def test_a_helper_is_reported_never_run_and_not_importable(workspace: Path, home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "helper-ran"
    draft = run({"command": "s", "env": {"TOKEN": f"!touch {marker}", "LIT": "!!x"}}, workspace, home)
    assert [(h.field, h.program, h.run) for h in draft.helpers] == [("env.TOKEN", "touch", False)]
    assert codes(draft.problems) == ["helper_not_run"]
    assert bindings(draft)["env.LIT"] == ("env", "plain", None) and draft.bindings[1].spec.plain == "!x"  # type: ignore[union-attr]
    assert not marker.exists()


# -- envFile, paths, cwd -------------------------------------------------------------------------


def test_env_file_values_are_read_not_run_and_env_wins(workspace: Path, home: Path) -> None:
    (workspace / ".env").write_text(f"# comment\nexport SECRET_TOKEN={SECRET}\nSHARED=from-file\nPLAIN='a b'\n")
    draft = run(
        {"type": "stdio", "command": "s", "envFile": "${workspaceFolder}/.env", "env": {"SHARED": "${SHARED_VAR}"}},
        workspace,
        home,
    )
    assert draft.problems == []
    assert bindings(draft) == {
        "envFile:SECRET_TOKEN": ("env", "managed", None),
        "envFile:PLAIN": ("env", "plain", None),
        "env.SHARED": ("env", "environment", "SHARED_VAR"),
    }
    assert draft.secrets == ["envFile:SECRET_TOKEN"]
    assert ("envFile", "env_file_copied") in [(i.field, i.code) for i in draft.losses]
    (workspace / "bad.env").write_text("OK=1\nthis is not an assignment\n")
    bad = run({"command": "s", "envFile": "bad.env"}, workspace, home)
    assert [(i.field, i.code) for i in bad.problems] == [("envFile", "env_file_unreadable")]
    # named by a config, not by the user: neither the line's text nor its number is shown
    assert "not a dotenv file" in bad.problems[0].message and ":2" not in bad.problems[0].message
    missing = run({"command": "s", "envFile": "nope.env"}, workspace, home)
    assert codes(missing.problems) == ["env_file_unreadable"]


def test_workspace_folder_and_user_home(workspace: Path, home: Path) -> None:
    (workspace / "tools").mkdir()
    draft = run(
        {
            "command": "${userHome}/bin/server",
            "args": ["--root", "${workspaceFolder}${/}data"],
            "cwd": "${workspaceFolder}/tools",
        },
        workspace,
        home,
    )
    assert draft.problems == []
    assert draft.target == StdioTarget(command=f"{home}/bin/server", args=("--root", f"{workspace}/data"), cwd="tools")
    assert [(i.field, i.code) for i in draft.losses] == [
        ("command", "path_variable_fixed"),
        ("args[1]", "path_variable_fixed"),
    ]


def test_cwd_outside_the_workspace_is_reported_and_refused(workspace: Path, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for cwd in (str(outside), "../elsewhere", "~/x"):
        draft = run({"command": "s", "cwd": cwd}, workspace, home)
        assert codes(draft.problems) == ["cwd_outside_workspace"], cwd
        assert [p.field for p in draft.outside] == ["cwd"]
    os.symlink(outside, workspace / "link")
    draft = run({"command": "s", "cwd": "link"}, workspace, home)
    assert codes(draft.problems) == ["cwd_outside_workspace"]
    (workspace / "sub").mkdir()
    assert run({"command": "s", "cwd": "sub"}, workspace, home).target == StdioTarget(command="s", cwd="sub")


# -- settings, names, unknown keys -----------------------------------------------------------------


def test_flags_lifecycle_tool_lists_and_unknown_keys(workspace: Path, home: Path) -> None:
    draft = run(
        {
            "command": "s",
            "disabled": True,
            "lifecycle": "keep-alive",
            "includeTools": ["read_*"],
            "excludeTools": ["delete_*"],
            "disabledTools": ["drop"],
            "autoApprove": ["read_file"],
            "oauth": {"clientSecret": SECRET},
            "timeout": 60,
            "description": "Files",
        },
        workspace,
        home,
    )
    assert draft.problems == []
    assert (draft.enabled, draft.options, draft.include_tools, draft.exclude_tools, draft.description) == (
        False,
        {"lifecycle": "keep_alive"},
        ("read_*",),
        ("delete_*", "drop"),
        "Files",
    )
    assert [(i.field, i.code) for i in draft.losses] == [
        ("autoApprove", "approvals_not_imported"),
        ("oauth", "auth_not_imported"),
        ("timeout", "field_not_imported"),
    ]
    assert run({"command": "s", "enabled": False}, workspace, home).enabled is False


def test_private_addresses_are_a_loss_not_silently_allowed(workspace: Path, home: Path) -> None:
    for url in ("http://localhost:3000/mcp", "http://127.0.0.1:8080/mcp", "http://10.0.0.5/mcp"):
        draft = run({"url": url}, workspace, home)
        assert codes(draft.losses) == ["private_address"] and draft.options == {}
    assert run({"url": "https://x.example.com/mcp"}, workspace, home).losses == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("github", "github"),
        ("GitHub", "github"),
        ("my_server.v2", "my-server-v2"),
        ("@scope/srv", "scope-srv"),
        ("___", None),
        ("x" * 70, "x" * 64),
    ],
)
def test_connector_names(name: str, expected: str | None) -> None:
    assert connector_name_for(name) == expected
