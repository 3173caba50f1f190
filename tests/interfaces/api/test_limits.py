"""Request limits: a body over ``api_max_body_bytes`` is 413 ``payload_too_large`` whether it is
declared or streamed (and is not read past the cap); ``Host`` and ``Origin`` are parsed strictly."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest

from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import Api, auth_headers, error_of
from tests.support.serve import serve_process

pytestmark = pytest.mark.anyio

CAP = 2 * 1024 * 1024
TIME = {"transport": "stdio", "command": "mcp-server-time"}


def _too_large(response: httpx2.Response, cap: int = CAP) -> None:
    assert response.status_code == 413, response.text
    error = error_of(response)
    assert error["code"] == "payload_too_large" and error["details"] == {"limit": cap}


async def test_the_default_cap_is_two_mib_for_a_declared_length(api: Api) -> None:
    assert Settings().api_max_body_bytes == CAP
    body = b'{"name": "big", "target": {"transport": "stdio", "command": "true"}, "description": "'
    padding = b"x" * (CAP - len(body) - 2)
    at_cap = await api.client.post("/api/mcp/connectors", content=body + padding + b'"}', headers=_json())
    assert at_cap.status_code == 422 and error_of(at_cap)["details"]["field"] == "body.description"  # read, refused
    over = await api.client.post("/api/mcp/connectors", content=body + padding + b'x"}', headers=_json())
    _too_large(over)
    # a route that reads no body is refused as well, before it runs
    _too_large(await api.client.request("GET", "/api/mcp/connectors", content=b"x" * (CAP + 1)))
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}


def _json() -> dict[str, str]:
    return {"content-type": "application/json"}


async def test_a_streamed_body_is_cut_off_at_the_cap_and_not_read_further(tmp_path: Path) -> None:
    cap, chunk, chunks = 4096, 1024, 64
    app = create_app(Settings(home=tmp_path / "home", api_max_body_bytes=cap), workspace=tmp_path)
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"name": "big", "target": {"transport": "stdio", "command": "true"}, "description": "'
        for _ in range(chunks):
            sent += 1
            yield b"x" * chunk

    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8765", headers=auth_headers(tmp_path / "home")
    ) as client:
        response = await client.post("/api/mcp/connectors", content=body(), headers=_json())
        _too_large(response, cap)
        assert sent <= cap // chunk + 1 < chunks  # the rest was never pulled from the client
        assert (await client.get("/api/mcp/connectors")).json() == {"connectors": []}
    app.state.context.close()


def test_the_served_api_refuses_declared_and_chunked_bodies_over_the_cap(tmp_path: Path) -> None:
    env = {**os.environ, "PATCHBAY_API_MAX_BODY_BYTES": "4096"}
    with serve_process(tmp_path / "home", tmp_path, env=env) as served:
        url = f"{served.url}/api/mcp/connectors"
        declared = served.session.post(url, data=b"{" + b" " * 5000 + b"}", headers=_json(), timeout=30)
        assert declared.status_code == 413 and declared.json()["error"]["code"] == "payload_too_large"

        def chunked() -> Iterator[bytes]:
            yield b'{"name": "big", "description": "'
            for _ in range(1000):  # 1 MB in all, never all of it read
                yield b"x" * 1000

        streamed = served.session.post(url, data=chunked(), headers=_json(), timeout=30)
        assert streamed.status_code == 413 and streamed.json()["error"]["details"] == {"limit": 4096}
        ok = served.session.post(url, json={"name": "time", "target": TIME}, timeout=30)
        assert ok.status_code == 201, ok.text  # the server is fine, and a body under the cap is read


@pytest.mark.parametrize(
    "host",
    [
        "[::1]evil.com",
        "[::1",
        "[::1]:8765x",
        "[127.0.0.1]",
        "127.0.0.1:99999999999999999999",
        "127.0.0.1:65536",
        "127.0.0.1:0",
        "127.0.0.1:",
        "127.0.0.1:80:80",
        "127.0.0.1 evil",
        "evil.com",
        "localhost.evil.com",
        "",
    ],
)
async def test_a_malformed_or_foreign_host_is_refused(api: Api, host: str) -> None:
    response = await api.client.get("/api/mcp/connectors", headers={"host": host})
    assert response.status_code == 403 and error_of(response)["code"] == "origin_refused", host
    assert error_of(response)["details"] == {"header": "Host"}  # the refused value is never echoed


@pytest.mark.parametrize(
    "origin",
    [
        "http://[",
        "http://[::1",
        "https://127.0.0.1:8765",
        "ftp://127.0.0.1:8765",
        "http://127.0.0.1:8766",
        "http://127.0.0.1",
        "http://localhost:8765",
        "http://user@127.0.0.1:8765",
        "http://127.0.0.1:8765/path",
        "null",
        "",
    ],
)
async def test_a_malformed_or_other_origin_is_refused_not_a_500(api: Api, origin: str) -> None:
    response = await api.client.get("/api/mcp/connectors", headers={"origin": origin})
    assert response.status_code == 403 and error_of(response)["code"] == "origin_refused", origin
    assert error_of(response)["details"] == {"header": "Origin"}  # the refused value is never echoed


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8765", "http://127.0.0.1:8765"),
        ("LOCALHOST:8765", "http://localhost:8765"),
        ("[::1]:8765", "http://[::1]:8765"),
        ("[0:0::1]:8765", "http://[::1]:8765"),
        ("127.0.0.1", "http://127.0.0.1:80"),
        ("localhost.", None),
    ],
)
async def test_the_servers_own_origin_is_answered(api: Api, host: str, origin: str | None) -> None:
    headers = {"host": host} | ({"origin": origin} if origin else {})
    response = await api.client.get("/api/mcp/connectors", headers=headers)
    assert response.status_code == 200, (host, origin, response.text)


async def test_duplicate_host_or_origin_headers_are_refused(api: Api) -> None:
    own = "http://127.0.0.1:8765"
    for headers in (
        [("origin", "http://evil.example"), ("origin", own)],
        [("origin", own), ("origin", own)],
        [("host", "evil.example"), ("host", "127.0.0.1:8765")],
    ):
        response = await api.client.get("/api/mcp/connectors", headers=headers)
        assert response.status_code == 403 and error_of(response)["code"] == "origin_refused", headers
