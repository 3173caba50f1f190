"""The SDK's Streamable HTTP and SSE clients behind the egress guard (open_client), against a real
MCP server over HTTP (tests/fixtures/http_server.py) and a listener that counts connections."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from patchbay.adapters.transports import EgressPolicy, HttpLink, classify, open_client
from patchbay.core.errors import ErrorCode
from patchbay.core.models import HttpTarget
from tests.support.egress import http_fixture, http_response, listening, recorded_requests

pytestmark = pytest.mark.anyio

SECRET = "Bearer http-cnry-8128"


async def echo_through(target: HttpTarget, egress: EgressPolicy | None, tmp_path: Path) -> str:
    with anyio.fail_after(20):
        async with open_client(
            target, workspace=tmp_path, headers={"Authorization": SECRET}, egress=egress
        ) as connection:
            assert isinstance(connection.link, HttpLink) and connection.link.guard is not None
            result = await connection.client.call_tool("echo", {"text": "through the guard"})
            return result.content[0].text  # type: ignore[union-attr]


async def failure_of(target: HttpTarget, egress: EgressPolicy | None, tmp_path: Path) -> tuple[ErrorCode, str]:
    try:
        await echo_through(target, egress, tmp_path)
    except Exception as exc:
        return classify(exc)
    raise AssertionError("the connection was not refused")


async def test_the_default_policy_refuses_loopback_for_both_transports_before_any_connection(tmp_path: Path) -> None:
    async with listening() as listener:
        for transport in ("streamable_http", "sse"):
            target = HttpTarget(url=f"{listener.origin}/mcp", transport=transport)  # type: ignore[arg-type]
            code, message = await failure_of(target, None, tmp_path)
            assert code == ErrorCode.NETWORK_BLOCKED, message
        assert listener.connections == 0


async def test_allow_private_reaches_a_local_server_and_a_stub_resolved_name_goes_to_the_checked_address(
    tmp_path: Path,
) -> None:
    record = tmp_path / "requests.jsonl"
    asked: list[str] = []

    async def resolver(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        return ["127.0.0.1"]

    with http_fixture(record) as port:
        direct = HttpTarget(url=f"http://127.0.0.1:{port}/mcp")
        assert await echo_through(direct, EgressPolicy(allow_private=True), tmp_path) == "through the guard"
        named = HttpTarget(url=f"http://mcp.patchbay.test:{port}/mcp")
        policy = EgressPolicy(allow_private=True, resolver=resolver)
        assert await echo_through(named, policy, tmp_path) == "through the guard"
    hosts = {request["host"] for request in recorded_requests(record)}
    assert hosts == {f"127.0.0.1:{port}", f"mcp.patchbay.test:{port}"}
    assert set(asked) == {"mcp.patchbay.test"}


async def test_a_same_origin_redirect_is_followed_and_a_cross_origin_one_is_refused(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with http_fixture(record) as port:
        moved = HttpTarget(url=f"http://127.0.0.1:{port}/moved")
        assert await echo_through(moved, EgressPolicy(allow_private=True), tmp_path) == "through the guard"
        before = len(recorded_requests(record))
        away = HttpTarget(url=f"http://127.0.0.1:{port}/away")
        code, message = await failure_of(away, EgressPolicy(allow_private=True), tmp_path)
        assert code == ErrorCode.NETWORK_BLOCKED
        assert f"redirect to another origin (http://localhost:{port})" in message
    after = recorded_requests(record)[before:]
    assert [(r["method"], r["path"], r["host"]) for r in after] == [("POST", "/away", f"127.0.0.1:{port}")]
    # The credential went only where it was configured for: never to the redirect's origin.
    assert all(r["host"] == f"127.0.0.1:{port}" for r in recorded_requests(record) if r["authorization"] == SECRET)


def sse_announcing(endpoint: str) -> bytes:
    """A legacy SSE answer whose ``endpoint`` event names ``endpoint``."""
    body = f"event: endpoint\ndata: {endpoint}\n\n".encode()
    return http_response(200, body, {"Content-Type": "text/event-stream", "Cache-Control": "no-store"})


async def test_a_cross_origin_sse_endpoint_is_network_blocked_at_once_naming_the_origin(tmp_path: Path) -> None:
    async with listening() as elsewhere:
        announced = f"{elsewhere.origin}/messages?sessionId=abc"
        async with listening(lambda method, path: sse_announcing(announced)) as server:
            target = HttpTarget(url=f"{server.origin}/sse", transport="sse")
            with anyio.fail_after(10):  # the old behaviour: waiting for an endpoint until a deadline
                code, message = await failure_of(target, EgressPolicy(allow_private=True), tmp_path)
        assert code == ErrorCode.NETWORK_BLOCKED, message
        assert elsewhere.origin in message and "sessionId" not in message
        assert elsewhere.connections == 0
