"""The one connect step: what a probe and a runtime connection announce and how failures read."""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import patchbay.adapters.transports.connect as connect_module
from patchbay.adapters.egress_audit import EgressAudit, audit_path
from patchbay.adapters.transports.connect import CLIENT_INFO, ConnectorRef, EgressAccount, connect
from patchbay.core.settings import Settings
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


def test_patchbay_announces_its_name_and_package_version() -> None:
    assert CLIENT_INFO.name == "patchbay"
    assert CLIENT_INFO.version == importlib.metadata.version("patchbay")


async def test_connect_always_sends_the_one_client_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real_open_client = connect_module.open_client

    @asynccontextmanager
    async def open_client(target: Any, **kwargs: Any) -> AsyncIterator[Any]:
        seen.append(kwargs["client_info"])
        async with real_open_client(target, **kwargs) as connection:
            yield connection

    monkeypatch.setattr(connect_module, "open_client", open_client)
    settings = Settings(home=tmp_path / "home")
    ref = ConnectorRef("con_echo", "echo", fixture_server("recording_server.py"), {})
    egress = EgressAccount(ref, EgressAudit(audit_path(settings.home)), None)
    with anyio.fail_after(30):
        async with connect(ref, workspace=tmp_path, settings=settings, egress=egress, credentials=None) as conn:
            assert (await conn.client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
            assert conn.link.http_status is None and conn.link.limit_exceeded() is None
    assert seen == [CLIENT_INFO]
