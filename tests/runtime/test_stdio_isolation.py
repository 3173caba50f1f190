"""A stdio child sees a small system whitelist, never Patchbay's own environment (seed 003, 2026-09-04)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import StdioTarget
from support import everything_stdio_command

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
