"""The detail tabs Connection, Default agent access, Security and Actions in a real browser
(static/connection.js, access.js, security.js, actions.js), against one real ``patchbay serve``
with real peers: mcp-server-time over stdio, a local command that fails writing to stderr, a
connector with a stored credential and a built-in one.

Every effect is checked through the REST API; each destructive action is confirmed in its own
dialog, and Cancel is checked to change nothing. axe-core runs on every tab in both languages,
each tab is saved under test-output/screenshots/<lang>/, and the 390 px layout is checked.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from patchbay.adapters.store import open_store
from patchbay.core.models import HttpTarget
from patchbay.core.settings import Settings
from tests.support.browser import OpenPage, axe_check, page_server, screenshot
from tests.support.serve import Served

pytestmark = pytest.mark.peers

TABS = ["overview", "connection", "tools", "access", "security", "actions"]
BROKEN = "import sys; sys.stderr.write('boom: the config file /nowhere/settings.toml is missing\\n'); sys.exit(3)"
SECRET = "pb-detail-tabs-secret-0123456789"


def _create(served: Served, name: str, target: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response = served.session.post(
        f"{served.url}/api/mcp/connectors", json={"name": name, "target": target, **fields}, timeout=60
    )
    assert response.status_code == 201, response.text
    return response.json()


def _api(served: Served, path: str) -> Any:
    response = served.session.get(f"{served.url}{path}", timeout=30)
    return response.status_code, response.json()


def _detail(served: Served, name: str) -> dict[str, Any]:
    status, body = _api(served, f"/api/mcp/connectors/{name}")
    assert status == 200, body
    return body


TIME = {"transport": "stdio", "command": "mcp-server-time"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One serve for the module; each test that changes something has a connector of its own."""
    root = tmp_path_factory.mktemp("tabs")
    store = open_store(Settings(home=root / "home", database_url=None))
    store.connectors.create("papers", "Paper Search", HttpTarget(url="https://papers.example/mcp"), source="builtin")
    store.close()
    with page_server(root) as served:
        _create(served, "time", TIME, enabled=True)
        _create(
            served, "broken", {"transport": "stdio", "command": sys.executable, "args": ["-c", BROKEN]}, enabled=True
        )
        report = served.session.post(f"{served.url}/api/mcp/connectors/broken/probe", timeout=120).json()
        assert report["state"] == "error", report
        for name in ("access", "disable", "keyboard", "removable", "removable-2"):
            _create(served, name, TIME, enabled=True)
        _create(
            served, "keyed", TIME, enabled=True, bindings=[{"delivery": "env", "name": "TIME_API_KEY", "value": SECRET}]
        )
        _create(
            served,
            "shown",
            TIME,
            enabled=True,
            description="Shown on every tab's screenshot",
            bindings=[{"delivery": "env", "name": "TZ_TOKEN", "variable": "PB_DETAIL_TABS_UNSET_TOKEN"}],
        )
        yield served


def _open(page: Page, served: Served, name: str, tab: str = "overview") -> None:
    page.goto(f"{served.url}/ui/connectors/{name}")
    expect(page.locator("#detail-body")).to_be_visible()
    expect(page.locator("#detail-body > [data-slot=name]")).to_have_text(name)
    if tab != "overview":
        page.locator(f"#tab-{tab}").click()
    expect(page.locator(f"#panel-{tab}")).to_be_visible()


def _dialog(page: Page, name: str) -> Any:
    return page.locator(f"#confirm-{name}")


# --- Connection ---


def test_a_broken_local_command_shows_error_with_its_code_and_stderr_tail(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "broken", "connection")
    panel = page.locator("#panel-connection")
    expect(panel.locator("[data-slot=state]")).to_have_attribute("data-state", "error")
    expect(panel.locator("[data-slot=state]")).to_have_text("Error")
    code = _detail(world, "broken")["error"]["code"]
    assert code in ("server_closed", "protocol_error", "spawn_failed"), code
    expect(panel.locator("[data-slot=problem-code]")).to_have_text(f"Error code: {code}")
    expect(panel.locator("[data-slot=stderr]")).to_contain_text(
        "boom: the config file /nowhere/settings.toml is missing"
    )
    assert "boom:" in _detail(world, "broken")["stderr_tail"]  # the detail route carries it
    axe_check(page)
    screenshot(page, "detail-connection-error")


def test_probe_now_on_a_real_time_server_turns_it_ready_with_its_tool_count(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "time", "connection")
    panel = page.locator("#panel-connection")
    expect(panel.locator("[data-slot=state]")).to_have_attribute("data-state", "configured")
    panel.get_by_role("button", name="Probe now").click()
    expect(page.locator("#announcer")).to_contain_text("Probing time")
    expect(panel.locator("[data-slot=state]")).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(panel.locator("[data-slot=probing]")).to_be_hidden()
    assert panel.get_attribute("aria-busy") is None
    tools = _detail(world, "time")["tool_count"]
    assert tools >= 2
    expect(panel.locator("[data-slot=tools]")).to_have_text(str(tools))
    expect(panel.locator("[data-slot=server]")).to_contain_text("mcp-time")
    expect(panel.locator("[data-slot=protocol]")).not_to_have_text("Not known yet")
    expect(page.locator("#outcome")).to_contain_text(f"Probe of time: ready, {tools} tools")
    # the list follows: its row's badge is ready
    expect(page.locator("#groups .row[data-status=ready] .row-name", has_text=re.compile("^time$"))).to_have_count(1)


# --- Default agent access ---


def test_a_default_access_change_is_saved_through_the_settings_route(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "access", "access")
    panel = page.locator("#panel-access")
    expect(panel.locator("#access-mode-ask")).to_be_checked()
    panel.locator("#access-mode-custom").check()
    panel.locator("#access-include").fill("get_*\nconvert_time")
    panel.locator("#access-exclude").fill("convert_time")
    panel.get_by_role("button", name="Save default access").click()
    expect(page.locator("#outcome")).to_contain_text("Default access of access saved")
    settings = _detail(world, "access")["settings"]
    assert settings["approval_mode"] == "custom"
    assert settings["include_tools"] == ["get_*", "convert_time"]
    assert settings["exclude_tools"] == ["convert_time"]
    # Allow all asks first: Cancel writes nothing, confirming does
    panel.locator("#access-mode-allow_all").check()
    panel.get_by_role("button", name="Save default access").click()
    expect(_dialog(page, "allow-all")).to_be_visible()
    _dialog(page, "allow-all").get_by_role("button", name="Cancel").click()
    expect(_dialog(page, "allow-all")).to_be_hidden()
    assert _detail(world, "access")["settings"]["approval_mode"] == "custom"
    panel.get_by_role("button", name="Save default access").click()
    # the outcome already says "saved" from the first save: wait for this save's own answer
    with page.expect_response(lambda r: r.request.method == "PUT" and r.url.endswith("/settings")) as answer:
        _dialog(page, "allow-all").get_by_role("button", name="Allow all").click()
    assert answer.value.ok
    expect(page.locator("#outcome")).to_contain_text("Default access of access saved")
    assert _detail(world, "access")["settings"]["approval_mode"] == "allow_all"


# --- Security ---


def test_security_shows_the_credential_source_never_its_value(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "keyed", "security")
    panel = page.locator("#panel-security")
    expect(panel.locator("[data-slot=credential-state]")).to_have_text("Configured")
    expect(panel.locator(".binding")).to_have_count(1)
    expect(panel.locator(".binding")).to_contain_text("Environment variable TIME_API_KEY")
    expect(panel.locator(".binding")).to_contain_text("stored secret")
    expect(panel.locator("[data-slot=egress]")).to_contain_text("runtime call audit unavailable")
    expect(panel.locator("[data-slot=terms-box]")).to_be_hidden()
    assert SECRET not in page.content()


def test_security_shows_a_credential_that_would_not_resolve_as_missing(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "shown", "security")
    panel = page.locator("#panel-security")
    expect(panel.locator("[data-slot=credential-state]")).to_have_text("Missing")
    expect(panel.locator(".binding")).to_contain_text("PB_DETAIL_TABS_UNSET_TOKEN")
    expect(panel.locator(".binding")).to_contain_text("missing: the variable is not set")


# --- Actions ---


def test_disable_is_confirmed_and_cancel_changes_nothing(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "disable", "actions")
    panel = page.locator("#panel-actions")
    panel.get_by_role("button", name="Disable…").click()
    dialog = _dialog(page, "disable")
    expect(dialog).to_be_visible()
    expect(dialog.locator("h2")).to_have_text("Disable disable?")
    expect(dialog).to_contain_text("Kept: its configuration")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert _detail(world, "disable")["settings"]["enabled"] is True
    panel.get_by_role("button", name="Disable…").click()
    dialog.get_by_role("button", name="Disable", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text("disable is now off")
    assert _detail(world, "disable")["settings"]["enabled"] is False
    expect(page.locator("#detail-body [data-slot=badge] .badge")).to_have_attribute("data-status", "disabled")
    expect(page.locator("#groups .row[data-id] .row-name", has_text=re.compile("^disable$"))).to_have_count(1)
    expect(
        page.locator("#groups .row[data-status=disabled] .row-name", has_text=re.compile("^disable$"))
    ).to_have_count(1)
    # Enable needs no confirmation
    panel.get_by_role("button", name="Enable", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text("disable is now on")
    assert _detail(world, "disable")["settings"]["enabled"] is True


def test_disconnect_is_confirmed_and_removes_the_credential(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "keyed", "actions")
    panel = page.locator("#panel-actions")
    panel.get_by_role("button", name="Disconnect credential…").click()
    dialog = _dialog(page, "disconnect")
    expect(dialog).to_contain_text("Environment variable TIME_API_KEY")
    page.keyboard.press("Escape")  # Escape is a Cancel
    expect(dialog).to_be_hidden()
    expect(panel.get_by_role("button", name="Disconnect credential…")).to_be_focused()
    assert len(_detail(world, "keyed")["bindings"]) == 1
    panel.get_by_role("button", name="Disconnect credential…").click()
    dialog.get_by_role("button", name="Disconnect", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text("The credentials of keyed were disconnected")
    detail = _detail(world, "keyed")
    assert detail["bindings"] == [] and detail["auth_state"] == "not-required"
    page.locator("#tab-security").click()
    expect(page.locator("#panel-security [data-slot=no-bindings]")).to_be_visible()


def test_remove_is_confirmed_clears_the_selection_and_moves_the_focus(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "removable", "actions")
    panel = page.locator("#panel-actions")
    panel.get_by_role("button", name="Remove connector…").click()
    dialog = _dialog(page, "remove")
    expect(dialog).to_contain_text("This cannot be undone")
    dialog.get_by_role("button", name="Cancel").click()
    assert _api(world, "/api/mcp/connectors/removable")[0] == 200
    panel.get_by_role("button", name="Remove connector…").click()
    dialog.get_by_role("button", name="Remove", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text("removable was removed")
    expect(page.locator("#announcer")).to_contain_text("removable was removed")
    status, body = _api(world, "/api/mcp/connectors/removable")
    assert status == 404 and body["error"]["code"] == "not_found"
    expect(page).to_have_url(f"{world.url}/ui")
    expect(page.locator("#detail-placeholder")).to_be_visible()
    expect(page.locator("#groups .row-name", has_text=re.compile("^removable$"))).to_have_count(0)
    focused = page.evaluate("() => document.activeElement?.dataset?.focus ?? document.activeElement?.id")
    assert focused == "add-connector" or focused.startswith("link:"), focused


def test_a_builtin_connector_shows_no_remove(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "papers", "actions")
    panel = page.locator("#panel-actions")
    expect(panel.get_by_role("button", name="Remove connector…")).to_have_count(0)
    expect(panel.locator("[data-slot=builtin-note]")).to_be_visible()
    expect(panel.get_by_role("button", name="Disable…")).to_be_visible()
    expect(panel.get_by_role("button", name="Disconnect credential…")).to_be_visible()


# --- keyboard only ---


def test_the_tabs_and_the_actions_work_by_keyboard_alone(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _open(page, world, "keyboard")
    page.locator("#tab-overview").focus()
    for tab in TABS[1:]:
        page.keyboard.press("ArrowRight")
        expect(page.locator(f"#tab-{tab}")).to_be_focused()
        expect(page.locator(f"#panel-{tab}")).to_be_visible()
    page.keyboard.press("Home")
    expect(page.locator("#panel-overview")).to_be_visible()
    page.keyboard.press("End")
    expect(page.locator("#panel-actions")).to_be_visible()
    page.keyboard.press("Tab")  # into the panel
    expect(page.locator("#panel-actions")).to_be_focused()
    page.keyboard.press("Tab")
    disable = page.locator("#panel-actions [data-action=toggle]")
    expect(disable).to_be_focused()
    page.keyboard.press("Enter")
    dialog = _dialog(page, "disable")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Tab")
    expect(dialog.get_by_role("button", name="Disable", exact=True)).to_be_focused()
    page.keyboard.press("Tab")  # trapped: back to the first control
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(disable).to_be_focused()
    assert _detail(world, "keyboard")["settings"]["enabled"] is True
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#outcome")).to_contain_text("keyboard is now off")
    expect(disable).to_be_focused()
    assert _detail(world, "keyboard")["settings"]["enabled"] is False
    # the connection tab's probe by keyboard
    page.locator("#tab-actions").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    probe = page.locator("#panel-connection [data-action=probe]")
    expect(probe).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#outcome")).to_contain_text("Probe of keyboard: ready", timeout=60_000)
    expect(probe).to_be_focused()


# --- both languages, every tab; the 390 px screen ---


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_every_tab_passes_axe_and_is_saved_in_both_languages(world: Served, pages: OpenPage, locale: str) -> None:
    page = pages(world, locale=locale)
    _open(page, world, "shown")
    for tab in TABS[1:]:
        page.locator(f"#tab-{tab}").click()
        expect(page.locator(f"#panel-{tab}")).to_be_visible()
        axe_check(page)
        screenshot(page, f"detail-{tab}")
    if locale == "zh-CN":
        expect(page.locator("#tab-access")).to_have_text("默认 Agent 访问")
        expect(page.locator("#panel-actions [data-slot=toggle-title]")).to_have_text(re.compile("停用|启用"))
    for name in ("remove", "disconnect", "disable"):
        if name == "remove":
            page.locator("#panel-actions [data-action=remove]").click()
        elif name == "disconnect":
            page.locator("#panel-actions [data-action=disconnect]").click()
        else:
            page.locator("#panel-actions [data-action=toggle]").click()
        expect(_dialog(page, name)).to_be_visible()
        axe_check(page)
        screenshot(page, f"detail-confirm-{name}")
        page.keyboard.press("Escape")
        expect(_dialog(page, name)).to_be_hidden()


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_tabs_fit_a_390_px_screen(world: Served, pages: OpenPage, locale: str) -> None:
    page = pages(world, locale=locale, width=390, height=844)
    _open(page, world, "broken")
    strip = page.locator("[role=tablist]").first
    # every tab is in view, none hidden behind a sideways scroll
    assert strip.evaluate("el => el.scrollWidth <= el.clientWidth")
    for tab in TABS:
        box, bounds = page.locator(f"#tab-{tab}").bounding_box(), strip.bounding_box()
        assert (
            box
            and bounds
            and box["x"] >= bounds["x"]
            and box["x"] + box["width"] <= bounds["x"] + bounds["width"] + 0.5
        ), tab
    for tab in TABS[1:]:
        page.locator(f"#tab-{tab}").click()
        expect(page.locator(f"#panel-{tab}")).to_be_visible()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, tab
    axe_check(page)
    page.locator("#tab-connection").click()
    screenshot(page, "detail-connection-390")
