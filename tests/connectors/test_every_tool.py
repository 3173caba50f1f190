"""Every tool of every built-in, end to end through its real stdio server and a governed Runtime,
against a fake origin that answers everything with an oversized body, then with a redirect to
another origin: each tool refuses an unknown field without a request, caps the oversized answer and
refuses the redirect (the shared HTTP helper's rules, seen
from each tool's own request path)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, Settings, ToolCallError
from patchbay.core.builtins import BUILTINS, BuiltinSpec
from patchbay.core.errors import FailureReason
from tests.support.recording import config
from tests.support.science import EXAMPLE_ARGUMENTS, FakeOrigin, Reply, builtin_server

pytestmark = pytest.mark.anyio

OVERSIZED = Reply(200, b"[" + b"0," * (3 * 1024 * 1024) + b"0]", {"Content-Type": "application/json"})
ELSEWHERE = Reply(302, headers={"Location": "https://elsewhere.example.net/steal"})


def _tools(spec: BuiltinSpec) -> list[str]:
    return [tool.name for tool in importlib.import_module(spec.module).TOOLS]


def _code(exc: ToolCallError) -> str:
    assert exc.reason is FailureReason.TOOL_ERROR  # the connector's own error result
    return str(json.loads(exc.result.text)["code"])


@pytest.mark.parametrize("spec", BUILTINS, ids=[spec.name for spec in BUILTINS])
async def test_each_tool_caps_an_oversized_answer_and_refuses_a_cross_origin_redirect(
    tmp_path: Path, spec: BuiltinSpec
) -> None:
    codes: dict[str, tuple[str, str]] = {}
    with FakeOrigin() as origin:
        server = builtin_server(spec.name, origin)
        with anyio.fail_after(120):
            async with Runtime(config(tmp_path, server), settings=Settings(home=tmp_path / "home")) as runtime:
                for tool in _tools(spec):
                    before = len(origin.requests)
                    with pytest.raises(ToolCallError):  # an unknown field: refused, nothing sent
                        await runtime.call(f"mcp.{spec.name}.{tool}", {**EXAMPLE_ARGUMENTS[tool], "unexpected": 1})
                    assert len(origin.requests) == before, tool
                    found: list[str] = []
                    for reply in (OVERSIZED, ELSEWHERE):
                        origin.fallback = reply
                        arguments: dict[str, Any] = EXAMPLE_ARGUMENTS[tool]
                        with pytest.raises(ToolCallError) as failed:
                            await runtime.call(f"mcp.{spec.name}.{tool}", arguments)
                        found.append(_code(failed.value))
                    codes[tool] = (found[0], found[1])
    assert codes == dict.fromkeys(_tools(spec), ("source_response_too_large", "network_blocked"))
