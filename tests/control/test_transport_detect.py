"""Transport "auto": the service detects a URL's transport once, at add time, against real peers."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.abc
import pytest

from patchbay.adapters.store import open_store
from patchbay.control.bindings import BindingSpec
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ConfigError, ProbeError
from patchbay.core.models import HttpTarget
from patchbay.core.settings import Settings
from tests.support.egress import audit_lines, http_response, listening
from tests.support.servers import everything_http, free_port

pytestmark = pytest.mark.anyio

LOCAL = {"allow_private": True}


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    settings = Settings(home=tmp_path / "home", probe_connect_timeout=10)
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


async def test_streamable_http_server_everything_is_stored_as_streamable_http(service: ConnectorService) -> None:
    with everything_http("streamableHttp") as url:
        with anyio.fail_after(30):
            _, created, found = await service.add_auto("remote", url, runtime_options=LOCAL)
    assert created and found.transport == "streamable_http" and not found.auth_required
    assert service.get("remote").target == HttpTarget(transport="streamable_http", url=url)
    [line] = audit_lines(service.settings.home)
    assert (line["note"], line["connector_id"], line["approved"]) == ("mcp_probe", "new:remote", True)


async def test_sse_server_everything_falls_back_to_sse(service: ConnectorService) -> None:
    with everything_http("sse") as url:
        with anyio.fail_after(30):
            _, _, found = await service.add_auto("legacy", url, runtime_options=LOCAL)
    assert found.transport == "sse" and "HTTP 404" in found.message
    assert service.get("legacy").target == HttpTarget(transport="sse", url=url)
    assert len(audit_lines(service.settings.home)) == 2  # one line per attempt


async def test_a_closed_port_is_server_closed_and_nothing_is_stored(service: ConnectorService) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with anyio.fail_after(30), pytest.raises(ProbeError) as caught:
        await service.add_auto("gone", url, runtime_options=LOCAL)
    assert caught.value.code == "server_closed"
    assert caught.value.details == {"field": "url", "streamable_http": "server_closed", "sse": None}
    assert service.list_connectors() == []


async def test_401_keeps_streamable_http_and_says_it_needs_authorization(service: ConnectorService) -> None:
    async with listening(lambda method, path: http_response(401, b"")) as listener:
        with anyio.fail_after(30):
            _, _, found = await service.add_auto(
                "locked",
                f"{listener.origin}/mcp",
                runtime_options=LOCAL,
                bindings=[BindingSpec("bearer", "Authorization", value="tok-abc")],
            )
    assert found.transport == "streamable_http" and found.auth_required and "401" in found.message
    assert listener.requests[0]["method"] == "POST"
    assert listener.requests[0]["headers"]["authorization"] == "Bearer tok-abc"  # the binding went along
    assert service.get("locked").transport == "streamable_http"


async def test_a_server_that_answers_404_to_both_is_an_error_naming_both(service: ConnectorService) -> None:
    async with listening(lambda method, path: http_response(404, b"no")) as listener:
        with anyio.fail_after(30), pytest.raises(ProbeError) as caught:
            await service.add_auto("nothing", f"{listener.origin}/x", runtime_options=LOCAL)
    assert caught.value.code == "protocol_error"
    assert caught.value.details["streamable_http"] == "protocol_error" and caught.value.details["sse"]
    assert [r["method"] for r in listener.requests] == ["POST", "GET"]
    assert service.list_connectors() == []


async def test_loopback_without_allow_private_is_refused_before_anything_is_sent(service: ConnectorService) -> None:
    async with listening(lambda method, path: http_response(200)) as listener:
        with anyio.fail_after(30), pytest.raises(ProbeError) as caught:
            await service.add_auto("private", f"{listener.origin}/mcp")
    assert caught.value.code == "network_blocked"
    assert listener.connections == 0
    assert service.list_connectors() == []


async def test_a_redirect_to_another_origin_is_refused_not_followed(service: ConnectorService) -> None:
    async with listening(lambda method, path: http_response(200)) as other:
        moved = http_response(307, b"", {"Location": f"{other.origin}/mcp"})
        async with listening(lambda method, path: moved) as listener:
            with anyio.fail_after(30), pytest.raises(ProbeError) as caught:
                await service.add_auto("moved", f"{listener.origin}/mcp", runtime_options=LOCAL)
    assert caught.value.code == "network_blocked"
    assert other.connections == 0
    assert service.list_connectors() == []


async def test_a_bad_name_is_refused_before_any_connection(service: ConnectorService) -> None:
    async with listening(lambda method, path: http_response(200)) as listener:
        with pytest.raises(ConfigError):
            await service.add_auto("Bad Name", f"{listener.origin}/mcp", runtime_options=LOCAL)
    assert listener.connections == 0


async def test_a_server_that_never_answers_is_a_timeout_within_the_probe_deadline(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", probe_connect_timeout=1)
    settings.home.mkdir()
    service = ConnectorService(open_store(settings), settings)
    hold = anyio.Event()

    async def silent(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await hold.wait()

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as tcp, anyio.create_task_group() as group:
        port = tcp.extra(anyio.abc.SocketAttribute.local_port)
        group.start_soon(tcp.serve, silent)
        with anyio.fail_after(10), pytest.raises(ProbeError) as caught:
            await service.add_auto("mute", f"http://127.0.0.1:{port}/mcp", runtime_options=LOCAL)
        hold.set()
        group.cancel_scope.cancel()
    assert caught.value.code == "timeout"
    assert service.list_connectors() == []


async def test_an_html_page_is_no_streamable_answer_so_sse_is_tried_and_both_fail(service: ConnectorService) -> None:
    page = http_response(200, b"<html><body>hello</body></html>", {"Content-Type": "text/html"})
    async with listening(lambda method, path: page) as listener:
        with anyio.fail_after(30), pytest.raises(ProbeError) as caught:
            await service.add_auto("webpage", f"{listener.origin}/", runtime_options=LOCAL)
    assert caught.value.code == "protocol_error"
    assert caught.value.details["streamable_http"] == "protocol_error"
    assert [r["method"] for r in listener.requests] == ["POST", "GET"]
    assert service.list_connectors() == []
