"""A Streamable HTTP session the server forgot (HTTP 404) is replaced by a new one, once, against
a real SDK server (tests/fixtures/http_server.py, which can forget its sessions on request)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from patchbay.adapters.transports import EgressPolicy, HttpLink, open_client
from patchbay.core.models import HttpTarget
from tests.support.egress import http_fixture, recorded_requests

pytestmark = pytest.mark.anyio


def initializes(record: Path) -> list[dict[str, object]]:
    """The POSTs to /mcp without a session id: the initialize requests the server saw."""
    return [r for r in recorded_requests(record) if (r["method"], r["path"], r["session"]) == ("POST", "/mcp", None)]


async def forget(port: int, *, always: bool = False) -> None:
    async with httpx2.AsyncClient() as client:
        response = await client.post(f"http://127.0.0.1:{port}/forget{'?always=1' if always else ''}")
        response.raise_for_status()


async def test_a_call_after_the_server_forgot_the_session_succeeds_on_a_new_session(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port, anyio.fail_after(30):
        target = HttpTarget(url=f"http://127.0.0.1:{port}/mcp")
        async with open_client(target, workspace=tmp_path, egress=EgressPolicy(allow_private=True)) as connection:
            assert isinstance(connection.link, HttpLink) and connection.link.sessions is not None
            first = await connection.client.call_tool("echo", {"text": "one"})
            assert first.content[0].text == "one"  # type: ignore[union-attr]
            assert len(initializes(record)) == 1
            await forget(port)
            second = await connection.client.call_tool("echo", {"text": "two"})
            assert second.content[0].text == "two"  # type: ignore[union-attr]
            assert len(initializes(record)) == 2
            assert connection.link.sessions.renewals == 1
            third = await connection.client.call_tool("echo", {"text": "three"})
            assert third.content[0].text == "three"  # type: ignore[union-attr]
    sessions = {r["session"] for r in recorded_requests(record) if r["session"]}
    assert len(sessions) == 2
    # Closing ends the current session (DELETE), as the SDK's own transport does.
    posts = [r for r in recorded_requests(record) if r["method"] == "POST" and r["session"]]
    deletes = [r for r in recorded_requests(record) if r["method"] == "DELETE"]
    assert deletes[-1]["session"] == posts[-1]["session"]  # the renewed session, ended on close


async def test_a_server_answering_404_twice_fails_the_call_with_a_clear_error(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port, anyio.fail_after(30):
        target = HttpTarget(url=f"http://127.0.0.1:{port}/mcp")
        async with open_client(target, workspace=tmp_path, egress=EgressPolicy(allow_private=True)) as connection:
            await forget(port, always=True)
            with pytest.raises(MCPError) as caught:
                await connection.client.call_tool("echo", {"text": "lost"})
            assert "the server forgot the new session too (HTTP 404 twice)" in caught.value.error.message
            assert len(initializes(record)) == 2  # one renewal, not a loop
            with pytest.raises(MCPError):  # a later call renews once more and fails the same way
                await connection.client.call_tool("echo", {"text": "still lost"})
            assert len(initializes(record)) == 3
