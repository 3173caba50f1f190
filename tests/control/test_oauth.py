"""OAuthService against a real authorization server + MCP server (tests/fixtures/oauth_server.py):
login through a headless browser and the loopback callback, tokens only in the CredentialStore,
egress guard and audit of the OAuth requests, logout with revocation, and the machine grant."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchbay.core.errors import AuthorizationFailed, ToolCallError
from patchbay.interfaces.cli import app
from tests.support.credentials import files_under
from tests.support.egress import AUDIT_KEYS, audit_lines
from tests.support.oauth import HeadlessBrowser, add_oauth_connector, control_plane, oauth_server, whoami
from tests.support.stored import session_ids, store_bytes

pytestmark = pytest.mark.anyio

NAME = "svc"


def token_strings(plane) -> set[str]:
    tokens = plane.bundle(NAME).tokens or {}
    return {tokens[k] for k in ("access_token", "refresh_token") if tokens.get(k)}


async def test_login_authorizes_and_the_tokens_live_only_in_credentials_json(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        browser = HeadlessBrowser()
        result, status = await plane.oauth.login(NAME, authorizer=browser, workspace=plane.workspace, login_timeout=20)
        assert result.state == "ready" and result.tool_count == 1, result.message
        assert status["state"] == "authorized" and status["has_refresh_token"] and status["client_registered"]
        assert status["issuer"] == fixture.issuer("main") and status["scope"] == "mcp"
        first = token_strings(plane)
        assert len(first) == 2

        # Use the grant, refresh it (new tokens), and use it again: events, audit, database.
        await whoami(plane, NAME)
        plane.expire_access_token(NAME)
        fixture.control(reject_access_tokens=True)
        await whoami(plane, NAME)
        assert fixture.counts("main")["refresh"] == 1
        current = token_strings(plane)
        assert len(current) == 2 and not current & first

        cli = CliRunner().invoke(app, ["--home", str(plane.home), "auth", "status", NAME, "--json"])
        assert cli.exit_code == 0, cli.output
        assert json.loads(cli.stdout)["state"] == "authorized"
        shown = [cli.stdout, cli.stderr, json.dumps(status), json.dumps(plane.oauth.status(NAME))]
        shown += [text for _, text in browser.pages]
        files = files_under(plane.home, plane.workspace)
        stored = store_bytes(plane.settings)
        for secret in first | current:
            assert secret.encode() not in stored
            assert all(secret not in text for text in shown)
            holding = [p.relative_to(tmp_path).as_posix() for p in files if secret.encode() in p.read_bytes()]
            # The current tokens in the credential store only; the replaced ones nowhere at all.
            assert holding == (["home/credentials.json"] if secret in current else []), holding
        assert session_ids(plane.settings)  # the calls were logged (a JSONL file, or the events table)
        assert stat.S_IMODE((plane.home / "credentials.json").stat().st_mode) == 0o600


async def test_oauth_requests_are_audited_with_metadata_only(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        result, _ = await plane.oauth.login(
            NAME, authorizer=HeadlessBrowser(), workspace=plane.workspace, login_timeout=20
        )
        assert result.state == "ready", result.message
        connector_id = plane.service.get(NAME).connector_id
        lines = audit_lines(plane.home)
        assert lines and all(set(line) == AUDIT_KEYS for line in lines)
        oauth = [line for line in lines if line["note"].startswith("mcp_oauth_")]
        rs_origin = f"http://127.0.0.1:{fixture.rs_port}"
        discovery = {line["origin"] for line in oauth if line["note"] == "mcp_oauth_discovery"}
        token = {line["origin"] for line in oauth if line["note"] == "mcp_oauth_token"}
        # PRM at the resource, AS metadata at the server it names; registration + code exchange there.
        assert discovery == {rs_origin, fixture.issuer("main")}
        assert token == {fixture.issuer("main")}
        assert sum(line["note"] == "mcp_oauth_token" for line in oauth) == 2
        assert all(line["connector_id"] == connector_id and line["approved"] is True for line in oauth)
        assert fixture.counts("alt") == {}
        raw = (plane.home / "egress-audit.jsonl").read_text()
        assert "/token" not in raw and "/register" not in raw and "oauth-protected-resource" not in raw


async def test_without_allow_private_the_login_fails_network_blocked(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url, allow_private=False)
        browser = HeadlessBrowser()
        result, status = await plane.oauth.login(NAME, authorizer=browser, workspace=plane.workspace, login_timeout=20)
        assert (result.state, result.code) == ("error", "network_blocked")
        assert status["state"] == "not_authorized"
        assert browser.urls == []
        outcome = plane.service.queries.last_probe(plane.service.get(NAME))  # a failed login's probe is kept
        assert outcome is not None and (outcome.state, outcome.code) == ("error", "network_blocked")
        counts = fixture.control()["counts"]
        assert counts == {"main": {}, "alt": {}, "rs": {}}  # nothing left the machine


async def test_resource_metadata_on_another_origin_is_never_fetched(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        fixture.control(resource_metadata_at="alt")  # the 401 points discovery at another origin
        browser = HeadlessBrowser()
        result, status = await plane.oauth.login(NAME, authorizer=browser, workspace=plane.workspace, login_timeout=20)
        assert result.state == "error" and status["state"] == "not_authorized"
        counts = fixture.control()["counts"]
        assert counts["alt"] == {} and counts["main"] == {} and browser.urls == []
        refused = [line for line in audit_lines(plane.home) if line["approved"] is False]
        assert ("mcp_oauth_discovery", fixture.issuer("alt")) in [(line["note"], line["origin"]) for line in refused]
        # A request the guard refused fails the operation with network_blocked.
        assert result.code == "network_blocked", result.message


async def test_a_denied_authorization_fails_the_login_and_stores_no_tokens(tmp_path: Path) -> None:
    with oauth_server() as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        fixture.control(authorize="access_denied")
        browser = HeadlessBrowser()
        result, status = await plane.oauth.login(NAME, authorizer=browser, workspace=plane.workspace, login_timeout=20)
        assert (result.state, result.code) == ("error", "auth_required")
        assert status["state"] == "not_authorized" and status["has_refresh_token"] is False
        assert fixture.counts("main").get("token", 0) == 0
        assert len(browser.urls) == 1


async def test_a_connector_changed_mid_login_refuses_the_callback(tmp_path: Path) -> None:
    with oauth_server() as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        browser = HeadlessBrowser()

        async def change_then_browse(url: str) -> None:
            # While the user is at the authorization server, the connector's URL is changed.
            connector = plane.service.get(NAME)
            moved = plane.service.remote_target(fixture.url.replace("/mcp", "/mcp2"))
            plane.service.repository.connectors.update(connector.connector_id, connector.revision, target=moved)
            await browser(url)

        result, status = await plane.oauth.login(
            NAME, authorizer=change_then_browse, workspace=plane.workspace, login_timeout=20
        )
        assert (result.state, result.code) == ("error", "auth_required")
        assert browser.pages and browser.pages[0][0] == 400  # the callback page says it failed
        assert fixture.counts("main").get("authorization_code", 0) == 0  # the code was never exchanged
        assert status["state"] != "authorized"


async def test_logout_revokes_at_the_server_and_deletes_the_tokens(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        result, _ = await plane.oauth.login(
            NAME, authorizer=HeadlessBrowser(), workspace=plane.workspace, login_timeout=20
        )
        assert result.state == "ready", result.message
        secrets = token_strings(plane)
        audit_before = len(audit_lines(plane.home))

        outcome = await plane.oauth.logout(NAME)
        assert outcome == {
            "connector": NAME,
            "revoked": ["refresh_token", "access_token"],
            "revocation": "done",
            "deleted": True,
        }
        counts = fixture.counts("main")
        assert counts["revoke"] == 2 and counts["revoked"] == 2
        assert plane.bundle(NAME) is None
        assert plane.oauth.status(NAME)["state"] == "not_authorized"
        assert all(secret not in (plane.home / "credentials.json").read_text() for secret in secrets)
        revocations = audit_lines(plane.home)[audit_before:]
        assert [(line["note"], line["origin"]) for line in revocations] == [
            ("mcp_oauth_token", fixture.issuer("main"))
        ] * 2

        with pytest.raises(ToolCallError) as caught:
            await whoami(plane, NAME)
        assert caught.value.details["code"] == "auth_required"
        assert await plane.oauth.logout(NAME) == {
            "connector": NAME,
            "revoked": [],
            "revocation": "nothing_to_revoke",
            "deleted": False,
        }


async def test_changing_the_client_voids_the_grant(tmp_path: Path) -> None:
    with oauth_server() as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        result, _ = await plane.oauth.login(
            NAME, authorizer=HeadlessBrowser(), workspace=plane.workspace, login_timeout=20
        )
        assert result.state == "ready", result.message
        plane.oauth.configure(NAME, client_id="another-client")
        status = plane.oauth.status(NAME)
        assert (status["state"], status["reason"]) == ("needs_auth", "client_changed")
        assert status["has_refresh_token"] is False and not plane.bundle(NAME).tokens


async def test_client_credentials_obtains_a_token_without_a_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "m2m-secret-5e7a91c3d2b4f608"
    monkeypatch.setenv("PB_TEST_M2M_SECRET", secret)
    with oauth_server(separate_as=True, m2m_secret=secret) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(
            plane,
            NAME,
            fixture.url,
            grant="client_credentials",
            client_id="m2m",
            client_secret="@env:PB_TEST_M2M_SECRET",
        )

        async def no_browser(url: str) -> None:
            raise AuthorizationFailed("a machine grant must not open a browser")

        result, status = await plane.oauth.login(NAME, authorizer=no_browser, workspace=plane.workspace)
        assert result.state == "ready", result.message
        assert (status["state"], status["grant"], status["issuer"]) == (
            "authorized",
            "client_credentials",
            fixture.issuer("main"),
        )
        assert fixture.counts("main")["client_credentials"] == 1
        assert (await whoami(plane, NAME))["client_id"] == "m2m"
        for path in files_under(plane.home, plane.workspace):
            assert secret.encode() not in path.read_bytes(), path  # only the variable's name is stored


def test_oauth_settings_ride_in_the_snapshot_and_leave_other_connectors_callable(tmp_path: Path) -> None:
    from patchbay.runtime.snapshot import load_snapshot

    plane = control_plane(tmp_path / "home")
    add_oauth_connector(plane, NAME, "https://mcp.example.com/mcp", client_id="cid", scope="read")
    project = plane.service.queries.project(plane.workspace)
    plane.service.projector.project(project)
    config = load_snapshot(project.path, project_id=project.project_id, home=plane.service.settings.home)
    (server,) = config.servers
    assert server.runtime_config["oauth"] == {
        "grant": "authorization_code",
        "client_id": "cid",
        "scope": "read",
        "signing_algorithm": "RS256",
    }


@pytest.mark.parametrize(
    ("field", "url"),
    [
        ("issuer", "https://user:pw@auth.example.com"),
        ("issuer", "http://auth.example.com"),
        ("issuer", "https:///x"),
        ("issuer", "https://auth.example.com/?tenant=1"),
        ("client_metadata_url", "https://u:p@cimd.example.com/c.json"),
        ("idp_token_endpoint", "ftp://idp.example.com/token"),
    ],
)
def test_bad_authorization_server_urls_are_refused_and_nothing_is_stored(tmp_path: Path, field: str, url: str) -> None:
    from patchbay.core.errors import ConfigError

    plane = control_plane(tmp_path / "home")
    plane.service.add(NAME, plane.service.remote_target("https://mcp.example.com/mcp"))
    before = plane.service.get(NAME).revision
    extra = {"client_id": "c", "client_secret": "s3cret-value-123", "idp_client_id": "i", "id_token": "tok-123456789"}
    grant = "cross_app_access" if field == "idp_token_endpoint" else "authorization_code"
    with pytest.raises(ConfigError) as info:
        plane.oauth.configure(NAME, grant=grant, **{field: url}, **extra)
    assert info.value.code == "invalid_config"
    assert plane.service.get(NAME).revision == before
    assert plane.service.credentials.store.load() == {}
    assert "pw@" not in info.value.message


def test_reconfiguring_never_deletes_a_credential_a_binding_still_uses(tmp_path: Path) -> None:
    plane = control_plane(tmp_path / "home")
    plane.service.add(NAME, plane.service.remote_target("https://mcp.example.com/mcp"))
    from patchbay.control.bindings import parse_bearer

    plane.service.set_bindings(NAME, [parse_bearer("bearer-value-1234567")])
    (ref,) = [b.ref for b in plane.service.get(NAME).bindings]
    plane.oauth.configure(NAME, client_id="c", client_secret=f"@credential:{ref}")
    plane.oauth.configure(NAME)  # the secret is no longer part of the OAuth settings
    assert ref in plane.service.credentials.store.load()
