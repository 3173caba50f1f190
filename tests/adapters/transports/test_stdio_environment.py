"""A stdio child sees a small system whitelist, never Patchbay's own environment (seed 003, 2026-09-04)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import get_default_environment

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.adapters.transports import open_client
from patchbay.core.models import ResourceLimits, StdioTarget
from tests.support.servers import everything_stdio_command

pytestmark = pytest.mark.anyio

CANARY = "pb-canary-7f3e9d1c0a"


@pytest.mark.peers
async def test_a_canary_in_the_parent_environment_never_reaches_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHBAY_TEST_CANARY_SECRET", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    command, *args = everything_stdio_command()
    server = RuntimeServer(
        connector_id="con_everything",
        name="everything",
        target=StdioTarget(command=command, args=tuple(args)),
        global_grants={"get-env": "allow"},
    )
    config = RuntimeConfig(project_id="prj_test", workspace=str(tmp_path), servers=(server,))
    with anyio.fail_after(30):
        async with Runtime(config, settings=Settings(home=tmp_path / "home")) as runtime:
            result = await runtime.call("mcp.everything.get-env", {})
    assert CANARY not in result.text
    assert "PATCHBAY_TEST_CANARY_SECRET" not in result.text and "OPENAI_API_KEY" not in result.text
    assert '"PATH"' in result.text and '"HOME"' in result.text


LITERAL_BINDINGS = {
    "PB_BRACED": "${HOME}",
    "PB_BARE": "$HOME",
    "PB_BANG": "!echo pwned",
    "PB_SUBSHELL": "$(id)",
    "PB_BACKTICK": "`id`",
    "PB_TILDE": "~/notes",
    "PB_PARENT": "${PATCHBAY_TEST_CANARY_SECRET}",
    "PB_SHELLISH": "a; b && c | d > /tmp/x",
}


@pytest.mark.peers
@pytest.mark.parametrize("limits", [None, ResourceLimits(open_files=4096)], ids=["direct", "launcher"])
async def test_binding_values_reach_the_child_literally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: ResourceLimits | None
) -> None:
    # Seed 003 addendum 2026-09-04: no `!command` execution, no `${VAR}` re-expansion, with or
    # without the resource-limit launcher in between.
    monkeypatch.setenv("PATCHBAY_TEST_CANARY_SECRET", CANARY)
    command, *args = everything_stdio_command()
    target = StdioTarget(command=command, args=tuple(args))
    with anyio.fail_after(30):
        async with open_client(target, workspace=tmp_path, env=LITERAL_BINDINGS, limits=limits) as connection:
            result = await connection.client.call_tool("get-env", {})
    seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert {name: seen.get(name) for name in LITERAL_BINDINGS} == LITERAL_BINDINGS
    assert CANARY not in result.content[0].text  # type: ignore[union-attr]
    assert seen == get_default_environment() | LITERAL_BINDINGS
