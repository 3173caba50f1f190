"""OAuth on the settings page in a real browser, against one real ``patchbay serve`` and the
SDK-built authorization server + MCP server of tests/fixtures/oauth_server.py: the form's OAuth
fields (a second write after the connector; the secret to the credential store, never shown; a
failure of that write shown while the connector stays), then Connect from the Connection and
Security tabs (a new window to the authorization server, back to the callback page, which posts
only the outcome to the page) until the grant is there. axe-core on each step, both languages,
the 390 px form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import OpenPage, axe_check, page_server, screenshot
from tests.support.oauth import OAuthFixture, oauth_server
from tests.support.serve import Served

pytestmark = pytest.mark.peers

SECRET = "pb-oauth-form-secret-7c2d9e41"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, OAuthFixture]]:
    root = tmp_path_factory.mktemp("oauth-page")
    with oauth_server(separate_as=True) as fixture, page_server(root) as served:
        yield served, fixture


def _api(served: Served, path: str) -> Any:
    response = served.session.get(f"{served.url}{path}", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _add_oauth(page: Page, name: str, url: str, **fields: str) -> Any:
    page.locator("#add-connector").click()
    page.locator('#add-connector-menu [data-add-kind="remote"]').click()
    form = page.locator("#connector-form-dialog")
    expect(form).to_be_visible()
    page.locator("#cf-name").fill(name)
    page.locator("#cf-url").fill(url)
    form.locator("summary").click()
    page.locator("#cf-transport").select_option("streamable_http")
    page.locator("#cf-auth").select_option("oauth")
    for label, value in fields.items():
        page.get_by_label(label, exact=True).fill(value)
    return form


def _save(page: Page) -> None:
    form = page.locator("#connector-form-dialog")
    with page.expect_response(lambda r: r.url.endswith("/oauth/config")) as put:
        form.locator("#cf-save").click()
    assert put.value.request.method == "PUT"
    expect(form).to_be_hidden()


def test_the_form_stores_oauth_settings_and_keeps_the_secret_out_of_every_answer(
    world: tuple[Served, OAuthFixture], pages: OpenPage
) -> None:
    served, fixture = world
    page = pages(served)
    _add_oauth(
        page,
        "oauth-secret",
        fixture.url,
        **{"Client ID (optional)": "pre-registered", "Scope (optional)": "mcp", "Client secret (optional)": SECRET},
    )
    expect(page.locator("#cf-oauth-secret")).to_have_attribute("type", "password")
    axe_check(page)
    screenshot(page, "form-oauth")
    _save(page)
    expect(page.locator("#outcome")).to_contain_text("Saved")
    status = _api(served, "/api/mcp/connectors/oauth-secret/oauth/status")
    assert status["configured"] and status["grant"] == "authorization_code" and status["state"] == "not_authorized"
    texts = [
        served.session.get(f"{served.url}{path}", timeout=30).text
        for path in (
            "/api/mcp/connectors",
            "/api/mcp/connectors/oauth-secret",
            "/api/mcp/connectors/oauth-secret/oauth/status",
        )
    ]
    assert all(SECRET not in text for text in texts)
    assert SECRET not in page.content()
    page.locator("#edit-connector").click()
    page.locator("#cf-advanced summary").click()
    expect(page.locator("#cf-auth")).to_have_value("oauth")
    expect(page.locator("#cf-oauth-secret")).to_have_value("")
    page.keyboard.press("Escape")


def test_a_failed_oauth_write_is_shown_and_the_connector_stays(
    world: tuple[Served, OAuthFixture], pages: OpenPage
) -> None:
    served, fixture = world
    page = pages(served)
    _add_oauth(page, "oauth-bad", fixture.url, **{"Issuer (optional)": "http://auth.example.com"})
    form = page.locator("#connector-form-dialog")
    with page.expect_response(lambda r: r.url.endswith("/oauth/config")) as put:
        form.locator("#cf-save").click()
    assert put.value.status == 422
    expect(form).to_be_hidden()
    expect(page.locator("#outcome")).to_contain_text("oauth-bad was saved, but its OAuth settings were not")
    assert _api(served, "/api/mcp/connectors/oauth-bad")["name"] == "oauth-bad"
    assert _api(served, "/api/mcp/connectors/oauth-bad/oauth/status")["configured"] is False


def test_connect_opens_the_authorization_server_and_shows_the_grant(
    world: tuple[Served, OAuthFixture], pages: OpenPage
) -> None:
    served, fixture = world
    page = pages(served)
    _add_oauth(page, "oauth-notes", fixture.url, **{"Scope (optional)": "mcp"})
    page.locator("#cf-enabled").check()
    _save(page)
    # the fixture listens on 127.0.0.1: this connector may reach private addresses (no form field)
    detail = _api(served, "/api/mcp/connectors/oauth-notes")
    changed = served.session.patch(
        f"{served.url}/api/mcp/connectors/oauth-notes",
        json={"revision": detail["revision"], "runtime_options": {"allow_private": True}},
        timeout=30,
    )
    assert changed.status_code == 200, changed.text
    page.reload()
    expect(page.locator("#detail-heading")).to_have_text("oauth-notes")

    assert _api(served, "/api/mcp/connectors/oauth-notes")["status"] == "needs-auth"
    expect(page.locator(".detail-header [data-status=needs-auth]")).to_have_count(1)
    page.locator("#tab-connection").click()
    block = page.locator("#panel-connection [data-slot=oauth-connect]")
    expect(block).to_be_visible()  # needs authentication: Connect is offered here too
    axe_check(page)
    page.locator("#tab-security").click()
    panel = page.locator("#panel-security")
    expect(panel).to_contain_text("Not authorized yet")
    connect = panel.get_by_role("button", name="Connect", exact=True)
    expect(connect).to_be_visible()
    with page.expect_popup() as popup_info, page.expect_response(lambda r: r.url.endswith("/oauth/start")) as start:
        with page.expect_response(lambda r: re.search(r"/api/mcp/connectors/con_[^/]+$", r.url) is not None) as reread:
            connect.click()
            popup = popup_info.value
            popup.wait_for_url(re.compile(r"/api/mcp/oauth/callback\?"))
    assert start.value.json()["state"] == "pending"
    assert reread.value.status == 200
    expect(popup.locator("h1")).to_have_text("Authorization complete")
    callback_url = popup.url
    for name in ("code", "state"):
        value = re.search(rf"[?&]{name}=([^&]+)", callback_url)
        assert value is not None and value.group(1) not in popup.content()
    expect(panel.locator("[data-slot=oauth-connect-outcome]")).to_have_text(
        "Connected: the authorization worked and the tokens are stored."
    )
    expect(panel).to_contain_text("Authorized")
    status = _api(served, "/api/mcp/connectors/oauth-notes/oauth/status")
    assert status["state"] == "authorized" and status["has_refresh_token"]
    # from "Needs authentication" to "Ready": the login probed the server with its new tokens
    assert _api(served, "/api/mcp/connectors/oauth-notes")["status"] == "ready"
    expect(page.locator(".detail-header [data-status=ready]")).to_have_count(1)
    assert status["issuer"] == fixture.issuer("main")
    axe_check(page)
    screenshot(page, "security-oauth-connected")
    popup.close()


def _connect(page: Page, panel: Any) -> Page:
    """Click Connect; returns the popup once it is back at the callback page."""
    with page.expect_popup() as popup_info, page.expect_response(lambda r: r.url.endswith("/oauth/start")):
        panel.get_by_role("button", name="Connect", exact=True).click()
    popup = popup_info.value
    popup.wait_for_url(re.compile(r"/api/mcp/oauth/callback\?"))
    return popup


def test_a_denied_consent_and_a_replayed_callback_show_failure_and_change_nothing(
    world: tuple[Served, OAuthFixture], pages: OpenPage
) -> None:
    served, fixture = world
    page = pages(served)
    _add_oauth(page, "oauth-denied", fixture.url, **{"Scope (optional)": "mcp"})
    page.locator("#cf-allow-private").check()  # the fixture listens on 127.0.0.1
    _save(page)
    page.locator("#tab-security").click()
    panel = page.locator("#panel-security")
    outcome = panel.locator("[data-slot=oauth-connect-outcome]")

    fixture.control(authorize="access_denied")  # the person says no at the authorization server
    try:
        popup = _connect(page, panel)
        expect(popup.locator("h1")).to_have_text("Authorization failed")
        expect(outcome).to_contain_text("The authorization did not complete")
        popup.close()
    finally:
        fixture.control(authorize="ok")
    assert _api(served, "/api/mcp/connectors/oauth-denied/oauth/status")["state"] != "authorized"

    popup = _connect(page, panel)  # now consent is given
    expect(popup.locator("h1")).to_have_text("Authorization complete")
    expect(outcome).to_have_text("Connected: the authorization worked and the tokens are stored.")
    callback = popup.url
    popup.close()
    # the same redirect again (a replayed code and state): refused, and the grant stays as it was
    replay = page.context.new_page()
    answer = replay.goto(callback)
    assert answer is not None and answer.status == 400
    expect(replay.locator("h1")).to_have_text("Authorization failed")
    replay.close()
    assert _api(served, "/api/mcp/connectors/oauth-denied/oauth/status")["state"] == "authorized"


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_oauth_fields_fit_a_390_px_screen(world: tuple[Served, OAuthFixture], pages: OpenPage, locale: str) -> None:
    served, _ = world
    page = pages(served, locale=locale, width=390, height=844)
    page.locator("#add-connector").click()
    page.locator('#add-connector-menu [data-add-kind="remote"]').click()
    form = page.locator("#connector-form-dialog")
    expect(form).to_be_visible()
    form.locator("summary").click()
    page.locator("#cf-auth").select_option("oauth")
    expect(page.locator("#cf-oauth-client-id")).to_be_visible()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    box = form.bounding_box()
    assert box is not None and box["width"] <= 390
    if locale == "zh-CN":
        expect(form).to_contain_text("客户端 ID（可选）")
    axe_check(page)
    screenshot(page, "form-oauth-mobile")


def test_connect_in_simplified_chinese_passes_axe(world: tuple[Served, OAuthFixture], pages: OpenPage) -> None:
    served, fixture = world
    body = {"name": "oauth-zh", "target": {"transport": "streamable_http", "url": fixture.url}}
    created = served.session.post(f"{served.url}/api/mcp/connectors", json=body, timeout=30)
    assert created.status_code == 201, created.text
    put = served.session.put(
        f"{served.url}/api/mcp/connectors/oauth-zh/oauth/config",
        json={"revision": created.json()["revision"], "scope": "mcp"},
        timeout=30,
    )
    assert put.status_code == 200, put.text
    page = pages(served, locale="zh-CN")
    page.goto(f"{served.url}/ui/connectors/oauth-zh")
    expect(page.locator("#detail-heading")).to_have_text("oauth-zh")
    page.locator("#tab-security").click()
    expect(page.locator("#panel-security").get_by_role("button", name="连接", exact=True)).to_be_visible()
    axe_check(page)
    screenshot(page, "security-oauth-connect")
