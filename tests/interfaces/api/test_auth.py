"""Every request needs the data home's API token: the bearer header or the cookie the login URL
sets; anything else is 401 ``unauthorized`` before a route runs. ``--no-auth`` is loopback only,
and a local process that cannot read the token file cannot register a connector."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
from starlette.responses import PlainTextResponse
from starlette.types import Message, Receive, Scope, Send
from typer.testing import CliRunner

from patchbay.adapters.api_token import api_token
from patchbay.core.redaction import redact_text
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from patchbay.interfaces.api.auth import TokenAuthMiddleware
from patchbay.interfaces.cli import app as cli_app
from patchbay.interfaces.cli import serve
from tests.support.api import Api, error_of
from tests.support.serve import serve_process

pytestmark = pytest.mark.anyio

TIME = {"transport": "stdio", "command": "mcp-server-time"}


@pytest.fixture
async def anonymous(api: Api) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the same app that sends no credentials."""
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        yield client


def _every_operation(api: Api) -> list[tuple[str, str]]:
    operations = []
    for path, methods in api.app.openapi()["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        operations += [(method.upper(), concrete) for method in methods]
    docs = ["/openapi.json", "/docs", "/redoc", "/static-offline-docs/swagger-ui-bundle.js", "/no/such/path"]
    return operations + [("GET", path) for path in docs]


def _assert_unauthorized(response: httpx2.Response, *, not_quoting: str = "") -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert error_of(response)["code"] == "unauthorized"
    assert "set-cookie" not in response.headers
    if not_quoting:
        assert not_quoting not in response.text


async def test_no_token_is_401_on_every_route_family(api: Api, anonymous: httpx2.AsyncClient) -> None:
    operations = _every_operation(api)
    assert len(operations) > 20
    for method, path in operations:
        if (method, path) == ("GET", "/api/health"):
            continue  # a liveness probe: its status only (tests/interfaces/api/routes/test_health.py)
        body = {"name": "x", "target": TIME} if method in ("POST", "PUT", "PATCH") else None
        _assert_unauthorized(await anonymous.request(method, path, json=body))
    assert (await anonymous.get("/api/health")).json() == {"status": "ok"}
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}  # nothing was created
    document = (await api.client.get("/openapi.json")).json()  # and the document says so
    assert document["security"] == [{"apiToken": []}]
    assert document["components"]["securitySchemes"]["apiToken"]["scheme"] == "bearer"
    assert all("401" in operation["responses"] for item in document["paths"].values() for operation in item.values())


@pytest.mark.parametrize(
    "authorization",
    ["Bearer wrong-token-0123456789-0123456789-0123456", "Bearer ", "Basic dXNlcjpwYXNz", "{token}", "bearer{token}"],
)
async def test_a_wrong_token_is_401_and_never_quoted(
    api: Api, anonymous: httpx2.AsyncClient, authorization: str
) -> None:
    value = authorization.format(token=api_token(api.home))
    response = await anonymous.post(
        "/api/mcp/connectors", json={"name": "x", "target": TIME}, headers={"Authorization": value}
    )
    sent = value.split(" ")[-1]
    _assert_unauthorized(response, not_quoting=sent if len(sent) > 8 else "")
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}


async def test_a_bearer_token_works_in_any_case_of_the_scheme(api: Api, anonymous: httpx2.AsyncClient) -> None:
    token = api_token(api.home)
    created = await anonymous.post(
        "/api/mcp/connectors", json={"name": "time", "target": TIME}, headers={"Authorization": f"bearer {token}"}
    )
    assert created.status_code == 201, created.text
    listed = await anonymous.get("/api/mcp/connectors", headers={"Authorization": f"Bearer {token}"})
    assert [c["name"] for c in listed.json()["connectors"]] == ["time"]
    two = await anonymous.get("/api/mcp/connectors", headers=[("Authorization", f"Bearer {token}")] * 2)
    _assert_unauthorized(two)  # two Authorization headers: refused, whatever they say


async def test_the_login_url_sets_a_strict_httponly_cookie_and_redirects_without_the_token(
    api: Api, anonymous: httpx2.AsyncClient
) -> None:
    token = api_token(api.home)
    login = await anonymous.get(f"/login?token={token}")
    assert login.status_code == 303
    assert login.headers["location"] == "/ui" and token not in login.headers["location"]
    assert login.headers["cache-control"] == "no-store" and login.headers["referrer-policy"] == "no-referrer"
    cookie = login.headers["set-cookie"]
    attributes = [part.strip().lower() for part in cookie.split(";")]
    name, _, value = attributes[0].partition("=")
    assert name.startswith("patchbay_") and value and token.lower() not in cookie.lower()
    assert {"httponly", "samesite=strict", "path=/", "max-age=43200"} <= set(attributes[1:])
    assert redact_text(value) != value  # registered: no log line or response shows it
    # the cookie alone now lets this browser in (httpx2 keeps it in its cookie jar)
    assert (await anonymous.get("/api/mcp/connectors")).json() == {"connectors": []}
    docs = await anonymous.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    forged = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=forged, base_url="http://127.0.0.1:8765") as stranger:
        _assert_unauthorized(
            await stranger.get(
                "/api/mcp/connectors", headers={"Cookie": f"{name}={'1' if value[0] == '0' else '0'}{value[1:]}"}
            )
        )
        _assert_unauthorized(await stranger.get("/api/mcp/connectors", headers={"Cookie": f"{name}={token}"}))


def _page_csrf(html: str) -> str:
    match = re.search(r'<meta name="patchbay-csrf" content="([0-9a-f]*)">', html)
    assert match is not None, html[:500]
    return match.group(1)


async def test_a_cookie_authenticated_change_needs_the_pages_csrf_header(
    api: Api, anonymous: httpx2.AsyncClient
) -> None:
    await anonymous.get(f"/login?token={api_token(api.home)}")  # the browser's cookie
    page = await anonymous.get("/ui")
    csrf = _page_csrf(page.text)
    session = next(iter(anonymous.cookies.values()))
    assert len(csrf) == 64 and csrf != session  # derived from the session, not the session itself
    body = {"name": "time", "target": TIME}

    for headers in ({}, {"X-Patchbay-CSRF": "0" * 64}, {"X-Patchbay-CSRF": csrf[:-1]}):
        refused = await anonymous.post("/api/mcp/connectors", json=body, headers=headers)
        assert refused.status_code == 403 and error_of(refused)["code"] == "csrf_failed"
        assert error_of(refused)["details"] == {"header": "X-Patchbay-CSRF"} and csrf not in refused.text
    twice = await anonymous.post("/api/mcp/connectors", json=body, headers=[("X-Patchbay-CSRF", csrf)] * 2)
    assert twice.status_code == 403 and error_of(twice)["code"] == "csrf_failed"
    assert (await anonymous.get("/api/mcp/connectors")).json() == {"connectors": []}  # reads need no header

    created = await anonymous.post("/api/mcp/connectors", json=body, headers={"X-Patchbay-CSRF": csrf})
    assert created.status_code == 201, created.text
    settings = {"revision": 1, "enabled": True}
    put = "/api/mcp/connectors/time/settings"
    assert error_of(await anonymous.put(put, json=settings))["code"] == "csrf_failed"
    assert (await anonymous.put(put, json=settings, headers={"X-Patchbay-CSRF": csrf})).status_code == 200
    patch = {"revision": 1, "description": "clock"}
    assert error_of(await anonymous.patch("/api/mcp/connectors/time", json=patch))["code"] == "csrf_failed"
    assert error_of(await anonymous.delete("/api/mcp/connectors/time"))["code"] == "csrf_failed"
    assert (await api.client.get("/api/mcp/connectors/time")).json()["description"] == ""  # nothing changed
    deleted = await anonymous.delete("/api/mcp/connectors/time", headers={"X-Patchbay-CSRF": csrf})
    assert deleted.status_code == 200 and deleted.json()["removed"] is True

    # a bearer-token client needs no CSRF header; another login has another CSRF token
    assert (await api.client.post("/api/mcp/connectors", json=body)).status_code == 201
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as other:
        await other.get(f"/login?token={api_token(api.home)}")
        other_csrf = _page_csrf((await other.get("/ui")).text)
        assert other_csrf != csrf
        crossed = await other.delete("/api/mcp/connectors/time", headers={"X-Patchbay-CSRF": csrf})
        assert error_of(crossed)["code"] == "csrf_failed"


async def test_a_page_without_a_login_is_a_401_page_and_the_api_stays_json(
    api: Api, anonymous: httpx2.AsyncClient
) -> None:
    page = await anonymous.get("/ui/connectors/time", headers={"Accept-Language": "zh-CN"})
    assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
    assert "patchbay api-token" in page.text and "登录 Patchbay" in page.text and "set-cookie" not in page.headers
    assert 'content=""' in page.text  # no CSRF token without a session
    _assert_unauthorized(await anonymous.get("/api/mcp/connectors"))
    _assert_unauthorized(await anonymous.post("/ui", json={}))  # only a page GET gets through unauthenticated


@pytest.mark.parametrize("query", ["", "?token=", "?token=nope", "?token={token}&token={token}"])
async def test_a_login_url_without_the_token_sets_no_cookie(
    api: Api, anonymous: httpx2.AsyncClient, query: str
) -> None:
    response = await anonymous.get("/login" + query.format(token=api_token(api.home)))
    _assert_unauthorized(response)
    assert (await anonymous.get("/api/mcp/connectors")).status_code == 401


class _Clock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("ok")(scope, receive, send)


def _client(app: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8765")


TOKEN = "t" * 43


async def _login(guard: TokenAuthMiddleware) -> str:
    """The ``Cookie`` header a browser sends after opening ``guard``'s login URL."""
    async with _client(guard) as browser:
        login = await browser.get(f"/login?token={TOKEN}")
    assert login.status_code == 303
    return login.headers["set-cookie"].split(";")[0]


async def test_each_login_gets_its_own_random_cookie_refused_after_its_max_age() -> None:
    clock = _Clock()
    guard = TokenAuthMiddleware(_ok, token=TOKEN, session_max_age=60, clock=clock)
    first, second = await _login(guard), await _login(guard)
    assert first != second and first.startswith(guard.cookie_name + "=")
    async with _client(guard) as client:
        clock.now += 59
        assert (await client.get("/x", headers={"Cookie": first})).text == "ok"
        clock.now += 1  # 60 s after the login: expired, whatever the browser still sends
        _assert_unauthorized(await client.get("/x", headers={"Cookie": first}))
        _assert_unauthorized(await client.get("/x", headers={"Cookie": second}))
        assert (await client.get("/x", headers={"Authorization": f"Bearer {TOKEN}"})).text == "ok"
        third = await _login(guard)  # logging in again starts a new session
        assert (await client.get("/x", headers={"Cookie": third})).text == "ok"


async def test_a_cookie_of_an_earlier_serve_is_refused_after_a_restart(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", api_session_max_age=600)
    token = api_token(settings.home)
    before, after = create_app(settings, workspace=tmp_path), create_app(settings, workspace=tmp_path)
    async with _client(before) as browser:
        login = await browser.get(f"/login?token={token}")
        assert "max-age=600" in login.headers["set-cookie"].lower()
        cookie = login.headers["set-cookie"].split(";")[0]
        assert token not in cookie
    async with _client(after) as browser:  # same data home and token, a new process
        _assert_unauthorized(await browser.get("/openapi.json", headers={"Cookie": cookie}))
    async with _client(before) as browser:
        assert (await browser.get("/openapi.json", headers={"Cookie": cookie})).status_code == 200
    for app in (before, after):
        app.state.context.close()


@pytest.mark.parametrize("order", ["good-first", "bad-first"])
async def test_the_session_cookie_sent_twice_is_refused_in_either_order(order: str) -> None:
    guard = TokenAuthMiddleware(_ok, token=TOKEN, clock=_Clock())
    good = await _login(guard)
    bad = f"{guard.cookie_name}=forged"
    pairs = [good, bad] if order == "good-first" else [bad, good]
    async with _client(guard) as client:
        assert (await client.get("/x", headers={"Cookie": good})).text == "ok"
        assert (await client.get("/x", headers={"Cookie": f"other=1; {good}; x=y"})).text == "ok"
        _assert_unauthorized(await client.get("/x", headers={"Cookie": "; ".join(pairs)}))
        _assert_unauthorized(await client.get("/x", headers=[("Cookie", pairs[0]), ("Cookie", pairs[1])]))
        _assert_unauthorized(await client.get("/x", headers={"Cookie": f"{good}; {good}"}))


async def _websocket(app: Any, headers: list[tuple[bytes, bytes]]) -> list[Message]:
    """Open a websocket to ``app`` with a raw ASGI scope; what the app sent back."""
    sent: list[Message] = []
    scope = {
        "type": "websocket",
        "asgi": {"version": "3.0"},
        "scheme": "ws",
        "path": "/api/mcp/connectors",
        "raw_path": b"/api/mcp/connectors",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
        "subprotocols": [],
        "state": {},
    }
    messages = [{"type": "websocket.connect"}]

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "websocket.disconnect", "code": 1000}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


@pytest.mark.parametrize("require_token", [True, False])
async def test_a_websocket_is_closed_as_a_policy_violation_before_it_is_accepted(
    tmp_path: Path, require_token: bool
) -> None:
    settings = Settings(home=tmp_path / "home")
    app = create_app(settings, workspace=tmp_path, require_token=require_token)
    token = api_token(settings.home)
    for headers in (
        [(b"host", b"127.0.0.1:8765"), (b"authorization", f"Bearer {token}".encode())],
        [(b"host", b"127.0.0.1:8765"), (b"origin", b"http://evil.example")],
        [(b"host", b"evil.example")],
    ):
        sent = await _websocket(app, headers)
        assert [m["type"] for m in sent] == ["websocket.close"] and sent[0]["code"] == 1008
    app.state.context.close()


def test_no_auth_is_refused_with_allow_remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def bind(*args: object) -> None:
        raise AssertionError("nothing may be bound")

    monkeypatch.setattr(serve, "_bind", bind)
    home = tmp_path / "home"
    for extra in (["--allow-remote"], ["--host", "0.0.0.0", "--allow-remote"]):
        result = CliRunner().invoke(cli_app, ["--home", str(home), "serve", "--port", "0", "--no-auth", *extra])
        assert result.exit_code == 1 and result.stdout == ""
        assert result.stderr.startswith("error[invalid_config]: no-auth: ") and "loopback only" in result.stderr


def test_no_auth_on_loopback_serves_without_the_token_and_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: dict[str, Any] = {}

    def run(self: Any, sockets: Any = None) -> None:
        served["app"] = self.config.app

    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", run)
    home = tmp_path / "home"
    result = CliRunner().invoke(cli_app, ["--home", str(home), "serve", "--port", "0", "--no-auth", "--json"])
    assert result.exit_code == 0, result.output
    assert "WARNING: serving WITHOUT AUTHENTICATION (--no-auth)" in result.stderr
    assert '"token": null' in result.stdout and '"login_url": null' in result.stdout
    assert not any(m.cls.__name__ == "TokenAuthMiddleware" for m in served["app"].user_middleware)
    assert not (home / "api-token").exists()


def test_api_token_prints_the_token_login_url_and_header(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(cli_app, ["--home", str(home), "api-token", "--port", "9999", "--json"])
    assert result.exit_code == 0, result.output
    token = api_token(home)
    assert json.loads(result.stdout) == {
        "token": token,
        "login_url": f"http://127.0.0.1:9999/login?token={token}",
        "header": f"Authorization: Bearer {token}",
        "file": str(home / "api-token"),
    }
    text = CliRunner().invoke(cli_app, ["--home", str(home), "api-token", "--port", "8765"])
    assert f"Login URL: http://127.0.0.1:8765/login?token={token}\n" in text.stdout


def test_api_token_prints_no_login_url_while_no_serve_runs(tmp_path: Path) -> None:
    """Whatever listens on the default port then is not ours: it would get the token."""
    home = tmp_path / "home"
    shown = CliRunner().invoke(cli_app, ["--home", str(home), "api-token", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["login_url"] is None
    text = CliRunner().invoke(cli_app, ["--home", str(home), "api-token"])
    assert text.exit_code == 0, text.output
    assert "Login URL: none (no serve is running on this data home; start one with `patchbay serve`" in text.stdout
    assert "/login?token=" not in text.stdout and f"Token: {api_token(home)}\n" in text.stdout


def test_api_token_names_the_port_the_running_serve_really_listens_on(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    with serve_process(home, workspace) as served:  # --port 0: any free port
        shown = CliRunner().invoke(cli_app, ["--home", str(home), "api-token", "--json"])
        assert shown.exit_code == 0, shown.output
        login = json.loads(shown.stdout)["login_url"]
        assert login == served.info["login_url"] and login.startswith(f"{served.url}/login?token=")
        assert requests.get(f"{served.url}/api/mcp/connectors", headers=served.headers, timeout=30).ok
        explicit = CliRunner().invoke(cli_app, ["--home", str(home), "api-token", "--port", "9999", "--json"])
        assert json.loads(explicit.stdout)["login_url"].startswith("http://127.0.0.1:9999/")  # asked for
    assert served.process.returncode == 0
    assert not (home / serve.SERVING_FILE).exists()  # gone with the serve that wrote it
    after = CliRunner().invoke(cli_app, ["--home", str(home), "api-token", "--json"])
    assert json.loads(after.stdout)["login_url"] is None  # no serve: no login URL


_INTRUDER = """
import sys, requests
url, token_file = sys.argv[1], sys.argv[2]
try:
    open(token_file).read()
    print("read the token file")
except PermissionError:
    print("token file unreadable")
body = {"name": "x", "target": {"transport": "stdio", "command": "/bin/sh", "args": ["-c", "id"]}, "enabled": True}
print(requests.post(url + "/api/mcp/connectors", json=body, timeout=30).status_code)
print(requests.post(url + "/api/mcp/connectors/x/probe", timeout=30).status_code)
"""


def test_another_local_user_cannot_register_a_connector(tmp_path: Path) -> None:
    """As root, the intruder runs as ``nobody`` (it cannot read the 0600 token file); otherwise it
    is a process of the same user that was never given the token."""
    home = tmp_path / "home"
    with serve_process(home, tmp_path) as served:
        argv = [sys.executable, "-c", _INTRUDER, served.url, str(home / "api-token")]
        other_user = os.geteuid() == 0 and shutil.which("setpriv") is not None
        if other_user:
            os.chmod(tmp_path, 0o755)  # nobody may traverse to the home, and still not read the file
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd="/")
        assert run.returncode == 0, run.stderr
        lines = run.stdout.split()
        if other_user:
            assert run.stdout.startswith("token file unreadable")
        assert lines[-2:] == ["401", "401"]
        assert served.session.get(f"{served.url}/api/mcp/connectors", timeout=30).json() == {"connectors": []}
        assert requests.get(f"{served.url}/api/mcp/connectors", timeout=30).status_code == 401


def test_no_process_of_the_home_stores_the_api_token_in_a_connector(tmp_path: Path) -> None:
    home = tmp_path / "home"
    token = api_token(home)
    env = {**os.environ, "PATCHBAY_HOME": str(home)}
    added = subprocess.run(
        ["patchbay", "connector", "add", "bad", "--", "echo", token],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 1, added.stdout
    assert added.stderr.startswith("error[invalid_config]: args: argument 0 looks like a secret")
    assert token not in added.stdout + added.stderr
    listed = subprocess.run(["patchbay", "connector", "list", "--json"], env=env, capture_output=True, text=True)
    assert json.loads(listed.stdout)["connectors"] == []
