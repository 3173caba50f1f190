"""patchbay.adapters.oauth.provider, the runtime's OAuth 2.1 provider.

Sections, in this order:

- Login, pinning and refresh against a real authorization server: OAuth 2.1 in the runtime, against
  a real authorization server + MCP server (tests/fixtures/ oauth_server.py): no surprise logins, a
  login through the host's authorizer, pinning of the resource origin and the authorization server,
  single-flight refresh, ``invalid_grant`` versus a transient refresh failure. What the official
  conformance suite does not check.
- The origins the provider opens in the egress guard: The OAuth provider opens the egress guard only
  for the origins it trusts, written the way the guard writes them (an authorization server at a
  default port is the usual production layout)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import httpx2
import pytest

from patchbay.adapters.credentials import CredentialStore
from patchbay.adapters.oauth.provider import PatchbayOAuthProvider
from patchbay.adapters.oauth.storage import BundleStorage
from patchbay.adapters.transports.egress import EgressGuard, EgressPolicy
from patchbay.core.errors import ToolCallError
from patchbay.core.oauth import OAuthConfig
from tests.support.oauth import HeadlessBrowser, add_oauth_connector, control_plane, oauth_server, whoami

pytestmark = pytest.mark.anyio


# --- Login, pinning and refresh against a real authorization server ---

NAME = "svc"


async def login(plane, fixture) -> None:
    result, status = await plane.oauth.login(
        NAME, authorizer=HeadlessBrowser(), workspace=plane.workspace, login_timeout=20
    )
    assert result.state == "ready", result.message
    assert status["state"] == "authorized"


async def unavailable(plane, **runtime_kwargs) -> ToolCallError:
    with pytest.raises(ToolCallError) as caught:
        await whoami(plane, NAME, **runtime_kwargs)
    assert caught.value.reason == "mcp_server_unavailable"
    return caught.value


async def test_without_authorizer_and_without_grant_it_fails_auth_required_and_registers_nothing(
    tmp_path: Path,
) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        error = await unavailable(plane)
        assert error.details["code"] == "auth_required"
        counts = fixture.control()["counts"]
        assert counts["main"] == {} and counts["alt"] == {}  # no discovery, no registration, no browser
        assert plane.bundle(NAME) is None
        assert plane.oauth.status(NAME)["state"] == "not_authorized"


async def test_with_an_authorizer_the_runtime_logs_in_and_calls(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        browser = HeadlessBrowser()
        me = await whoami(plane, NAME, authorizer=browser)
        assert me["scopes"] == ["mcp"] and me["issuer"] == fixture.issuer("main")
        assert len(browser.urls) == 1 and browser.urls[0].startswith(fixture.issuer("main") + "/authorize?")
        assert "code_challenge_method=S256" in browser.urls[0]
        counts = fixture.control()["counts"]
        assert counts["main"]["register"] == 1 and counts["main"]["authorization_code"] == 1
        assert counts["alt"] == {}  # an authorization server the metadata does not name: never contacted
        status = plane.oauth.status(NAME)
        assert status["state"] == "authorized" and status["issuer"] == fixture.issuer("main")
        assert me["client_id"] == plane.bundle(NAME).client_info["client_id"]

        # The grant is reused: no browser, no registration, no token request.
        assert (await whoami(plane, NAME))["client_id"] == me["client_id"]
        assert fixture.counts("main")["token"] == 1


async def test_an_expired_access_token_is_refreshed_once_and_the_call_succeeds(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        before = plane.bundle(NAME).tokens
        plane.expire_access_token(NAME)
        fixture.control(reject_access_tokens=True)  # the server agrees it expired

        assert (await whoami(plane, NAME))["scopes"] == ["mcp"]
        assert fixture.counts("main").get("refresh") == 1
        after = plane.bundle(NAME)
        assert after.tokens["access_token"] != before["access_token"]
        assert after.tokens["refresh_token"] != before["refresh_token"]  # rotated, and the new one kept
        assert after.refreshed_at is not None
        assert plane.oauth.status(NAME)["state"] == "authorized"


async def test_an_access_token_the_server_refuses_is_refreshed_once(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        fixture.control(reject_access_tokens=True)  # still valid by its expiry, refused by the server

        assert (await whoami(plane, NAME))["scopes"] == ["mcp"]
        assert fixture.counts("main").get("refresh") == 1


async def test_two_runtimes_with_one_expired_credential_refresh_it_once(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        plane.expire_access_token(NAME)
        fixture.control(reject_access_tokens=True)

        answers: list[dict] = []

        async def one() -> None:
            answers.append(await whoami(plane, NAME))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(one)
        assert len(answers) == 3 and all(answer["scopes"] == ["mcp"] for answer in answers)
        # Single flight: one refresh; with rotation a second would have spent a dead token.
        assert fixture.counts("main").get("refresh") == 1
        assert plane.oauth.status(NAME)["state"] == "authorized"


async def test_a_refused_refresh_token_turns_the_connector_to_needs_auth(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        plane.expire_access_token(NAME)
        fixture.control(reject_access_tokens=True, refresh="invalid_grant")

        error = await unavailable(plane)
        assert error.details["code"] == "auth_expired"
        assert fixture.counts("main").get("refresh") == 1
        status = plane.oauth.status(NAME)
        assert (status["state"], status["reason"]) == ("needs_auth", "invalid_grant")
        assert status["has_refresh_token"] is False
        assert not plane.bundle(NAME).tokens

        # A void grant is not retried behind the user's back: still auth_required, no new refresh.
        fixture.control(refresh="ok")
        assert (await unavailable(plane)).details["code"] in ("auth_required", "auth_expired")
        assert fixture.counts("main").get("refresh") == 1


async def test_a_transient_refresh_failure_keeps_the_refresh_token(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        kept = plane.bundle(NAME).tokens["refresh_token"]
        plane.expire_access_token(NAME)
        fixture.control(reject_access_tokens=True, refresh="503")

        error = await unavailable(plane)
        assert error.details["code"] not in ("auth_required", "auth_expired")
        assert fixture.counts("main").get("refresh") == 1
        status = plane.oauth.status(NAME)
        assert status["has_refresh_token"] is True and status["state"] == "expired"
        assert plane.bundle(NAME).tokens["refresh_token"] == kept

        fixture.control(refresh="ok")
        assert (await whoami(plane, NAME))["scopes"] == ["mcp"]
        assert fixture.counts("main").get("refresh") == 2
        assert plane.oauth.status(NAME)["state"] == "authorized"


async def test_changing_the_connector_url_origin_voids_the_grant(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        connector = plane.service.get(NAME)
        moved = fixture.url.replace("127.0.0.1", "localhost")  # the same server under another origin
        changed = plane.service.update_target(
            NAME, plane.service.remote_target(moved), expected_revision=connector.revision
        )
        assert changed.revision == connector.revision + 1 and changed.runtime_config == connector.runtime_config

        status = plane.oauth.status(NAME)
        assert (status["state"], status["reason"]) == ("needs_auth", "origin_changed")
        tokens_before = fixture.counts("main").get("token", 0)
        error = await unavailable(plane)
        assert error.details["code"] == "auth_required"
        assert fixture.counts("main").get("token", 0) == tokens_before  # the old refresh token was not used


async def test_a_new_authorization_server_voids_the_grant_without_authorizer(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        fixture.control(authorization_server="alt")  # the metadata now names another server

        error = await unavailable(plane)
        assert error.details["code"] == "auth_required"
        assert fixture.counts("alt") == {}  # nothing is sent to a server the grant was not pinned to
        status = plane.oauth.status(NAME)
        assert (status["state"], status["reason"]) == ("needs_auth", "issuer_changed")


async def test_with_an_authorizer_a_new_authorization_server_gets_a_new_login(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        fixture.control(authorization_server="alt")

        browser = HeadlessBrowser()
        me = await whoami(plane, NAME, authorizer=browser)
        assert me["issuer"] == fixture.issuer("alt")
        assert len(browser.urls) == 1 and browser.urls[0].startswith(fixture.issuer("alt") + "/authorize?")
        assert fixture.counts("alt")["register"] == 1
        status = plane.oauth.status(NAME)
        assert (status["state"], status["issuer"]) == ("authorized", fixture.issuer("alt"))


@pytest.mark.parametrize("fault", ["408", "invalid_request"])
async def test_a_refusal_other_than_invalid_grant_keeps_the_refresh_token(tmp_path: Path, fault: str) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        await login(plane, fixture)
        kept = plane.bundle(NAME).tokens["refresh_token"]
        plane.expire_access_token(NAME)
        fixture.control(reject_access_tokens=True, refresh=fault)

        await unavailable(plane)
        status = plane.oauth.status(NAME)
        assert status["has_refresh_token"] is True and status["state"] == "expired"
        assert plane.bundle(NAME).tokens["refresh_token"] == kept

        fixture.control(refresh="ok")
        assert (await whoami(plane, NAME))["scopes"] == ["mcp"]


async def test_a_slow_authorization_server_does_not_use_up_the_connect_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two held authorization-server answers (metadata, token) take longer together than the
    # connect timeout, each alone well within it: the MCP server itself is quick. Charging the
    # authorization server's round trips to the connect deadline made machine grants fail under
    # load although every token request succeeded.
    connect_timeout, held = 5.0, 3.0
    monkeypatch.setenv("PB_TEST_M2M_SECRET", "m2m-secret")
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        plane = dataclasses.replace(
            plane, settings=plane.settings.model_copy(update={"connect_timeout": connect_timeout})
        )
        add_oauth_connector(
            plane,
            NAME,
            fixture.url,
            grant="client_credentials",
            client_id="m2m",
            client_secret="@env:PB_TEST_M2M_SECRET",
        )
        fixture.control(as_delay=held)
        started = anyio.current_time()
        assert (await whoami(plane, NAME))["client_id"] == "m2m"
        assert anyio.current_time() - started > connect_timeout  # the fault really outlasted the old deadline
        counts = fixture.counts("main")
        assert counts["client_credentials"] == 1 and counts["metadata"] >= 1


# --- The origins the provider opens in the egress guard ---


def provider(tmp_path: Path, url: str) -> PatchbayOAuthProvider:
    storage = BundleStorage(
        CredentialStore(tmp_path), connector_id="con_x", resource_url=url, grant="authorization_code"
    )
    return PatchbayOAuthProvider(url, config=OAuthConfig(), storage=storage, connector="x")


def test_an_authorization_server_on_another_origin_at_the_default_port_is_permitted(tmp_path: Path) -> None:
    oauth = provider(tmp_path, "https://mcp.example.com/mcp")
    guard = EgressGuard(EgressPolicy(), origins=["https://mcp.example.com/mcp"])
    oauth.bind_guard(guard)
    oauth.context.auth_server_url = "https://auth.example.com"  # named by protected-resource metadata
    request = httpx2.Request("GET", "https://auth.example.com/.well-known/oauth-authorization-server")
    oauth._prepare(request)
    assert "https://auth.example.com:443" in guard.origins
    assert request.extensions["patchbay.egress_note"] == "mcp_oauth_discovery"


def test_an_origin_nothing_named_stays_refused(tmp_path: Path) -> None:
    oauth = provider(tmp_path, "https://mcp.example.com/mcp")
    guard = EgressGuard(EgressPolicy(), origins=["https://mcp.example.com/mcp"])
    oauth.bind_guard(guard)
    oauth.context.auth_server_url = "https://auth.example.com"
    oauth._prepare(httpx2.Request("POST", "https://evil.example.net/token"))
    assert guard.origins == {"https://mcp.example.com:443"}
