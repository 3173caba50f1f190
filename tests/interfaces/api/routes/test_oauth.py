"""The OAuth routes against the real authorization server + MCP server of
tests/fixtures/oauth_server.py: settings through REST (secrets stored as credentials, never
answered), a page login (start → the authorization server → the callback route → a grant), and
the callback's refusals (replayed, unknown, expired state; denied consent)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2
import pytest

from tests.support.api import Api, error_of
from tests.support.oauth import OAuthFixture, oauth_server

pytestmark = pytest.mark.anyio

NAME = "svc"


@pytest.fixture(scope="module")
def fixture() -> Iterator[OAuthFixture]:
    with oauth_server(separate_as=True) as running:
        yield running


@pytest.fixture(autouse=True)
def consent(fixture: OAuthFixture) -> Iterator[None]:
    fixture.control(authorize="ok")
    yield
    fixture.control(authorize="ok")


async def add(api: Api, fixture: OAuthFixture, **oauth: Any) -> dict[str, Any]:
    created = await api.create(
        NAME,
        {"transport": "streamable_http", "url": fixture.url},
        runtime_options={"allow_private": True},
    )
    response = await api.client.put(
        f"/api/mcp/connectors/{NAME}/oauth/config", json={"revision": created["revision"], **oauth}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def authorize(authorize_url: str) -> str:
    """Play the browser at the authorization server: the ``path?query`` it redirects back to."""
    async with httpx2.AsyncClient(follow_redirects=False, trust_env=False, timeout=10.0) as http:
        response = await http.get(authorize_url)
    location = response.headers.get("location")
    assert response.is_redirect and location, response.text
    back = urlsplit(urljoin(authorize_url, location))
    assert (back.scheme, back.netloc, back.path) == ("http", "127.0.0.1:8765", "/api/mcp/oauth/callback")
    return f"{back.path}?{back.query}"


async def start(api: Api) -> str:
    response = await api.client.post(f"/api/mcp/connectors/{NAME}/oauth/start")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["state"] == "pending", body
    query = dict(part.split("=", 1) for part in urlsplit(body["authorize_url"]).query.split("&"))
    assert query["code_challenge_method"] == "S256"
    return str(body["authorize_url"])


async def test_settings_keep_the_secret_as_an_owned_credential_and_never_answer_it(
    api: Api, fixture: OAuthFixture
) -> None:
    body = await add(api, fixture, client_id="pre-registered", scope="mcp", client_secret="s3cr3t-value")
    assert body["status"]["configured"] and body["status"]["state"] == "not_authorized"
    assert body["status"]["grant"] == "authorization_code" and "runtime_reload" in body
    connector_id = api.service.get(NAME).connector_id
    records = api.service.credentials.store.load()
    owned = [r for r in records.values() if r.owner_id == connector_id and r.value == "s3cr3t-value"]
    assert len(owned) == 1
    shown = [
        json.dumps(body),
        (await api.client.get(f"/api/mcp/connectors/{NAME}")).text,
        (await api.client.get(f"/api/mcp/connectors/{NAME}/oauth/status")).text,
        (await api.client.get("/api/mcp/connectors")).text,
    ]
    assert all("s3cr3t-value" not in text for text in shown)
    stale = await api.client.put(f"/api/mcp/connectors/{NAME}/oauth/config", json={"revision": 1, "scope": "x"})
    assert stale.status_code == 409 and error_of(stale)["code"] == "revision_conflict"
    bad = await api.client.put(f"/api/mcp/connectors/{NAME}/oauth/config", json={"issuer": "not a url"})
    assert bad.status_code == 422 and error_of(bad)["code"] == "validation_error"


async def test_a_page_login_gets_a_grant_and_its_state_works_once(api: Api, fixture: OAuthFixture) -> None:
    await add(api, fixture)
    authorize_url = await start(api)
    back = await authorize(authorize_url)
    page = await api.client.get(back, headers={"authorization": ""})  # the browser has no token here
    assert page.status_code == 200 and 'data-outcome="success"' in page.text, page.text
    assert (
        page.headers["cache-control"] == "no-store" and "script-src 'self'" in page.headers["content-security-policy"]
    )
    query = dict(part.split("=", 1) for part in urlsplit(back).query.split("&"))
    assert query["code"] not in page.text and query["state"] not in page.text
    status = (await api.client.get(f"/api/mcp/connectors/{NAME}/oauth/status")).json()
    assert status["state"] == "authorized" and status["has_refresh_token"] and status["client_registered"]
    assert status["issuer"] == fixture.issuer("main")
    tokens = api.service.credentials.store.load()
    assert all(
        t not in page.text + json.dumps(status)
        for r in tokens.values()
        if isinstance(r.value, dict)
        for t in (r.value.get("tokens") or {}).values()
        if isinstance(t, str) and len(t) > 8
    )
    detail = (await api.client.get(f"/api/mcp/connectors/{NAME}")).json()
    assert detail["oauth_state"] == "authorized"

    replay = await api.client.get(back, headers={"authorization": ""})
    assert replay.status_code == 400 and 'data-outcome="failure"' in replay.text

    out = await api.client.delete(f"/api/mcp/connectors/{NAME}/oauth")
    assert out.status_code == 200 and out.json()["deleted"] is True
    after = (await api.client.get(f"/api/mcp/connectors/{NAME}/oauth/status")).json()
    assert after["state"] == "not_authorized"


async def test_unknown_and_expired_states_are_refused(api: Api, fixture: OAuthFixture) -> None:
    await add(api, fixture)
    unknown = await api.client.get("/api/mcp/oauth/callback?code=abc&state=nobody-asked", headers={"authorization": ""})
    assert unknown.status_code == 400 and 'data-outcome="failure"' in unknown.text
    back = await authorize(await start(api))
    waiting = api.app.state.context.logins.relay._waiting
    (callback,) = waiting.values()
    for pending in callback._pending.values():
        pending.expires_at = 0.0  # ten minutes have passed (the clock is monotonic seconds)
    expired = await api.client.get(back, headers={"authorization": ""})
    assert expired.status_code == 400 and 'data-outcome="failure"' in expired.text
    status = (await api.client.get(f"/api/mcp/connectors/{NAME}/oauth/status")).json()
    assert status["state"] == "not_authorized"


async def test_denied_consent_shows_failure_and_stores_no_grant(api: Api, fixture: OAuthFixture) -> None:
    await add(api, fixture)
    fixture.control(authorize="access_denied")
    back = await authorize(await start(api))
    assert "error=access_denied" in back
    page = await api.client.get(back, headers={"authorization": ""})
    assert page.status_code == 400 and 'data-outcome="failure"' in page.text
    status = (await api.client.get(f"/api/mcp/connectors/{NAME}/oauth/status")).json()
    assert status["state"] in ("not_authorized", "needs_auth") and not status["has_refresh_token"]


async def test_start_needs_oauth_settings(api: Api, fixture: OAuthFixture) -> None:
    await api.create(
        NAME, {"transport": "streamable_http", "url": fixture.url}, runtime_options={"allow_private": True}
    )
    response = await api.client.post(f"/api/mcp/connectors/{NAME}/oauth/start")
    assert response.status_code == 422 and error_of(response)["code"] == "validation_error"
