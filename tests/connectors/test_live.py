"""Live smoke suite: each built-in tool called once against the real public API, through the real
stdio server and a governed Runtime (no override: the real origins, the real egress guard).

Opt-in, never in CI: ``.venv/bin/pytest tests/connectors/test_live.py -m live``. Set
``PATCHBAY_SCIENCE_CONTACT`` in the environment to send a contact (it is passed as a binding).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from patchbay import Runtime, RuntimeServer, Settings
from patchbay.core.builtins import BUILTINS
from patchbay.core.credentials import CredentialBinding
from patchbay.core.models import ConnectorSettings, StdioTarget
from tests.support.recording import config
from tests.support.science import EXAMPLE_ARGUMENTS as CALLS

pytestmark = [pytest.mark.anyio, pytest.mark.live]

CASES = [
    (spec, tool.name)
    for spec in BUILTINS
    for tool in importlib.import_module(spec.module).TOOLS  # type: ignore[attr-defined]
]


@pytest.mark.parametrize(("spec", "tool"), CASES, ids=[f"{spec.name}.{tool}" for spec, tool in CASES])
async def test_each_tool_answers_from_its_real_api_with_provenance(tmp_path: Path, spec: Any, tool: str) -> None:
    contact = os.environ.get("PATCHBAY_SCIENCE_CONTACT", "")
    server = RuntimeServer(
        connector_id=f"id-{spec.name}",
        name=spec.name,
        target=StdioTarget(command=sys.executable, args=("-I", "-m", spec.module)),
        settings=ConnectorSettings(approval_mode="allow_all"),
        bindings=(CredentialBinding(delivery="env", name="PATCHBAY_SCIENCE_CONTACT", value=contact),)
        if contact
        else (),
    )
    with anyio.fail_after(90):
        async with Runtime(config(tmp_path, server), settings=Settings(home=tmp_path / "home")) as runtime:
            result = await runtime.call(f"mcp.{spec.name}.{tool}", CALLS[tool])
    record = result.structured_content
    assert record["provenance"]["endpoint"].startswith("https://")
    assert record["provenance"]["retrieved_at"].endswith("Z")


LINKS = sorted(
    {url for spec in BUILTINS for s in spec.data_sources for url in (s.url, s.terms_url, s.licence_url)}
    | {spec.terms_url for spec in BUILTINS}
)


@pytest.mark.parametrize("url", LINKS)
async def test_each_data_source_link_answers(url: str) -> None:
    # the catalogue's service, terms and licence links were written without internet: this checks them
    async with httpx2.AsyncClient(
        follow_redirects=True, timeout=30, headers={"User-Agent": "patchbay-live-check"}
    ) as client:
        response = await client.get(url)
    assert response.status_code < 400, (url, response.status_code)
