"""The connectors page in a real browser (static/connectors.js and the modules it uses), against a
real ``patchbay serve`` with real peers registered through the REST API: mcp-server-time and
mcp-server-git over stdio, server-everything over Streamable HTTP, a remote that needs
authentication and an imported legacy entry.

Sections: the list (badges, groups, partial status, search, filters); the on/off switch and the
API agreeing; the detail pane and deep links; keyboard only; the empty and error states; both
languages; the 390 px mobile layout. axe-core runs on every screen, in both languages, and each
main screen is saved under test-output/screenshots/<lang>/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import OpenPage, axe_check, page_server, screenshot
from tests.support.paths import FIXTURES
from tests.support.serve import Served
from tests.support.servers import everything_http, make_git_repo
from tests.support.waiting import wait_until_sync

pytestmark = pytest.mark.peers

LIFECYCLE = FIXTURES / "lifecycle_server.py"


def _create(served: Served, name: str, target: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response = served.session.post(
        f"{served.url}/api/mcp/connectors", json={"name": name, "target": target, **fields}, timeout=60
    )
    assert response.status_code == 201, response.text
    return response.json()


def _probe(served: Served, name: str) -> None:
    report = served.session.post(f"{served.url}/api/mcp/connectors/{name}/probe", timeout=120).json()
    assert report["state"] == "ready", report


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One serve for the module with six connectors, one of each state the page shows."""
    root = tmp_path_factory.mktemp("page")
    workspace = root / "ws"
    make_git_repo(workspace)
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"legacy-git": {"command": "mcp-server-git", "args": ["--repository", "."]}}})
    )
    with everything_http() as everything_url, page_server(root) as served:
        _create(served, "time", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True)
        _probe(served, "time")
        _create(
            served,
            "everything",
            {"transport": "streamable_http", "url": everything_url},
            enabled=True,
            runtime_options={"allow_private": True},
            description="The reference server, over Streamable HTTP",
        )
        _probe(served, "everything")
        _create(served, "git-off", {"transport": "stdio", "command": "mcp-server-git", "args": ["--repository", "."]})
        _create(
            served,
            "locked",
            {"transport": "streamable_http", "url": "https://mcp.example.com/mcp"},
            enabled=True,
            bindings=[{"delivery": "bearer", "variable": "PB_PAGE_TEST_UNSET_TOKEN"}],
        )
        _create(served, "fresh", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True)
        imported = served.session.post(
            f"{served.url}/api/mcp/import/commit",
            json={"paths": [".mcp.json"], "select": ["legacy-git"], "enabled": False},
            timeout=60,
        )
        assert imported.status_code == 200, imported.text
        yield served


def _api(served: Served, path: str) -> Any:
    return served.session.get(f"{served.url}{path}", timeout=30).json()


def _row(page: Page, name: str) -> Any:
    return page.locator("#groups .row").filter(has=page.locator(".row-name", has_text=re.compile(f"^{name}$")))


def _shown(page: Page) -> list[str]:
    return page.locator("#groups .row-name").all_text_contents()


ALL = ["everything", "fresh", "locked", "time", "git-off", "legacy-git"]
"""The rows in the order shown: group by group (enabled, available, imported), by name."""


# --- the list ---


def test_the_list_shows_each_connector_with_its_badge_in_its_group(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    expect(page.locator("#groups .row")).to_have_count(6)
    assert _shown(page) == ALL
    badges = {
        name: _row(page, name).locator(".badge").get_attribute("data-status")
        for name in ("time", "everything", "git-off", "locked", "fresh", "legacy-git")
    }
    api = {c["name"]: c["status"] for c in _api(world, "/api/mcp/connectors")["connectors"]}
    assert (
        badges
        == api
        == {
            "time": "ready",
            "everything": "ready",
            "git-off": "disabled",
            "locked": "needs-auth",
            "fresh": "unknown",
            "legacy-git": "disabled",
        }
    )
    expect(_row(page, "locked").locator(".badge")).to_have_text("Needs authentication")
    expect(_row(page, "git-off").locator(".badge")).to_have_text("Off")
    expect(page.locator(".group-title")).to_have_text(["Enabled (4)", "Available (1)", "Imported, not enabled yet (1)"])
    # some statuses are unknown: said apart from the rows, not as an error
    expect(page.locator("#partial-status")).to_be_visible()
    expect(page.locator("#partial-status")).to_contain_text("The status of 1 connector(s) is not known yet")
    expect(page.locator("#list-error")).to_be_hidden()
    expect(page.locator("#list-summary")).to_have_text("6 of 6 connectors")
    expect(_row(page, "time").locator(".row-meta")).to_have_text("Local command · mcp-server-time")
    expect(page.locator("#announcer")).to_have_text("6 connectors loaded")
    axe_check(page)
    screenshot(page, "connectors")


def test_search_and_each_filter_narrow_the_list(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    expect(page.locator("#groups .row")).to_have_count(6)
    page.get_by_label("Search connectors").fill("GIT")  # case-insensitive, in names and commands
    expect(page.locator("#groups .row-name")).to_have_text(["git-off", "legacy-git"])
    page.get_by_label("Search connectors").fill("zzz-nothing")  # in no name, description or target
    expect(page.locator("#list-nomatch")).to_be_visible()
    page.get_by_label("Search connectors").fill("example.com")  # in the URL
    expect(page.locator("#groups .row-name")).to_have_text(["locked"])
    page.get_by_label("Search connectors").fill("")
    expected = {
        "Enabled": ["everything", "fresh", "locked", "time"],
        "Connected/Ready": ["everything", "time"],
        "Needs authentication": ["locked"],
        "Local": ["fresh", "time", "git-off", "legacy-git"],
        "Remote": ["everything", "locked"],
        "Imported": ["legacy-git"],
        "All": ALL,
    }
    for chip, names in expected.items():
        button = page.locator(".filters").get_by_role("button", name=chip, exact=True)
        button.click()
        expect(button).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#groups .row-name")).to_have_text(names)
        expect(page.locator(".filters [aria-pressed=true]")).to_have_count(1)
    page.locator(".filters").get_by_role("button", name="Local", exact=True).click()
    page.get_by_label("Search connectors").fill("time")  # search and filter together
    expect(page.locator("#groups .row-name")).to_have_text(["fresh", "time"])
    expect(page.locator("#list-summary")).to_have_text("2 of 6 connectors")


# --- the on/off switch ---


def test_the_switch_turns_a_connector_off_and_on_and_the_api_agrees(world: Served, pages: OpenPage) -> None:
    session = world.session.post(f"{world.url}/api/sessions", json={}, timeout=60).json()
    try:
        page = pages(world)
        switch = _row(page, "time").get_by_role("switch", name="Enable time")
        expect(switch).to_have_attribute("aria-checked", "true")
        switch.click()
        expect(page.locator("#outcome")).to_contain_text("time is now off. Saved")
        expect(page.locator("#outcome")).to_have_attribute("data-kind", "saved")
        off = _api(world, "/api/mcp/connectors/time")
        assert (off["settings"]["enabled"], off["status"]) == (False, "disabled")
        row = _row(page, "time")
        expect(row.locator(".badge")).to_have_attribute("data-status", "disabled")
        expect(page.locator('[data-group="available"] .row-name')).to_have_text(["git-off", "time"])
        expect(page.locator("#announcer")).to_contain_text("time is now off")

        row.get_by_role("switch", name="Enable time").click()
        expect(page.locator("#outcome")).to_contain_text("time is now on. Saved")
        on = _api(world, "/api/mcp/connectors/time")
        assert (on["settings"]["enabled"], on["status"]) == (True, "ready")
        expect(_row(page, "time").get_by_role("switch", name="Enable time")).to_have_attribute("aria-checked", "true")
        assert on["settings"]["revision"] == off["settings"]["revision"] + 1  # each click one revision-checked write
    finally:
        world.session.delete(f"{world.url}/api/sessions/{session['session_id']}", timeout=60)


def test_a_switch_that_lost_a_revision_race_reloads_and_overwrites_nothing(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    expect(page.locator("#groups .row")).to_have_count(6)
    before = _api(world, "/api/mcp/connectors/fresh")
    # another tab changes the settings after this page read them
    changed = world.session.put(
        f"{world.url}/api/mcp/connectors/fresh/settings",
        json={"revision": before["settings"]["revision"], "exclude_tools": ["convert_time"]},
        timeout=30,
    )
    assert changed.status_code == 200, changed.text
    try:
        _row(page, "fresh").get_by_role("switch", name="Enable fresh").click()
        expect(page.locator("#outcome")).to_have_attribute("data-kind", "conflict")
        expect(page.locator("#outcome")).to_contain_text("Nothing was overwritten")
        after = _api(world, "/api/mcp/connectors/fresh")
        assert after["settings"]["enabled"] is True and after["settings"]["exclude_tools"] == ["convert_time"]
        expect(_row(page, "fresh").get_by_role("switch")).to_have_attribute("aria-checked", "true")  # reloaded
    finally:
        world.session.put(
            f"{world.url}/api/mcp/connectors/fresh/settings",
            json={"revision": changed.json()["settings"]["revision"], "exclude_tools": []},
            timeout=30,
        )


def test_the_outcome_names_the_sessions_a_change_is_pending_or_failed_in(
    browser: Browser, pages: OpenPage, tmp_path: Path
) -> None:
    log = tmp_path / "record.jsonl"
    target = {"transport": "stdio", "command": sys.executable, "args": [str(LIFECYCLE), "--record", str(log)]}
    with page_server(tmp_path) as served:
        _create(served, "life", target, enabled=True)
        allowed = served.session.put(
            f"{served.url}/api/mcp/connectors/life/settings", json={"revision": 1, "approval_mode": "allow_all"}
        )
        assert allowed.status_code == 200, allowed.text
        _create(served, "time", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True)
        sid = served.session.post(f"{served.url}/api/sessions", json={}, timeout=60).json()["session_id"]
        answers: list[int] = []

        def busy() -> None:  # a call in flight: the session must finish it before it rebuilds
            body = {"tool": "mcp.life.sleep", "arguments": {"seconds": 600, "tag": "busy"}}
            answers.append(
                served.session.post(f"{served.url}/api/sessions/{sid}/call", json=body, timeout=120).status_code
            )

        caller = threading.Thread(target=busy)
        caller.start()
        try:
            wait_until_sync(lambda: log.exists() and '"started": "busy"' in log.read_text())
            page = pages(served)
            _row(page, "time").get_by_role("switch", name="Enable time").click()
            outcome = page.locator("#outcome")
            expect(outcome).to_have_attribute("data-kind", "pending")
            expect(outcome.locator("[data-slot=title]")).to_have_text("time is now off. Saved, reload pending")
            expect(outcome.locator("li")).to_have_text(
                ["Sessions affected: 1", f"{tmp_path / 'ws'}: finishes its current call first"]
            )
            axe_check(page)
            screenshot(page, "reload-pending")
        finally:
            served.session.delete(f"{served.url}/api/sessions/{sid}", timeout=60)  # cancels the call
            caller.join(timeout=60)
        assert answers == [409]  # cancelled: the session closed during the call

        # a rebuild that fails: the change is saved all the same, the page says which session failed
        sid = served.session.post(f"{served.url}/api/sessions", json={}, timeout=60).json()["session_id"]
        patchbay_dir, elsewhere = tmp_path / "ws" / ".patchbay", tmp_path / "elsewhere"
        shutil.move(patchbay_dir, elsewhere)
        os.symlink(elsewhere, patchbay_dir)  # the projection refuses to write through a symlink
        try:
            _row(page, "time").get_by_role("switch", name="Enable time").click()
            expect(outcome).to_have_attribute("data-kind", "failed")
            expect(outcome.locator("[data-slot=title]")).to_have_text("time is now on. Saved, reload failed")
            expect(outcome.locator("li").first).to_have_text("Sessions affected: 1")
            expect(outcome.locator("li").nth(1)).to_contain_text(f"{tmp_path / 'ws'}: ")
            assert _api(served, "/api/mcp/connectors/time")["settings"]["enabled"] is True  # saved
            screenshot(page, "reload-failed")
        finally:
            os.unlink(patchbay_dir)
            shutil.move(elsewhere, patchbay_dir)
            served.session.delete(f"{served.url}/api/sessions/{sid}", timeout=60)


# --- the detail pane ---


def test_selecting_a_connector_shows_its_overview_and_a_deep_link_opens_it(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    time_id = _api(world, "/api/mcp/connectors/time")["connector_id"]
    _row(page, "time").locator(".row-link").click()
    expect(page).to_have_url(f"{world.url}/ui/connectors/{time_id}")
    detail = page.locator("#detail-body")
    expect(detail.locator("#detail-heading")).to_have_text("time")
    expect(detail.locator("#detail-heading")).to_be_focused()
    expect(page.get_by_role("tab", name="Overview")).to_have_attribute("aria-selected", "true")
    overview = page.get_by_role("tabpanel", name="Overview")
    expect(overview.locator("[data-slot=kind]")).to_have_text("Local command")
    expect(overview.locator("[data-slot=target]")).to_have_text("mcp-server-time")
    expect(overview.locator("[data-slot=tools]")).to_have_text("2")
    expect(overview.locator("[data-slot=source]")).to_have_text("Added by you")
    expect(overview.locator("[data-slot=probe]")).to_contain_text("Ready on")
    expect(overview.locator("[data-slot=status] .badge")).to_have_text("Ready")
    expect(_row(page, "time").locator(".row-link")).to_have_attribute("aria-current", "page")
    axe_check(page)
    screenshot(page, "detail")

    page.goto(f"{world.url}/ui/connectors/everything")  # a deep link by name, typed in
    expect(page.locator("#detail-heading")).to_have_text("everything")
    expect(page.locator("[data-panel=overview] [data-slot=kind]")).to_have_text("Remote URL (Streamable HTTP)")
    expect(page.locator("[data-panel=overview] [data-slot=description]")).to_have_text(
        "The reference server, over Streamable HTTP"
    )
    page.go_back()
    expect(page.locator("#detail-heading")).to_have_text("time")

    page.goto(f"{world.url}/ui/connectors/no-such-connector")
    expect(page.locator("#detail-error")).to_contain_text("No connector no-such-connector exists")
    expect(page.locator("#groups .row")).to_have_count(6)  # the list still works
    axe_check(page)


def test_an_invalid_or_unauthenticated_connector_says_why_in_its_overview(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    _row(page, "locked").locator(".row-link").click()
    overview = page.locator("[data-panel=overview]")
    expect(overview.locator("[data-slot=status] .badge")).to_have_attribute("data-status", "needs-auth")
    expect(overview.locator("[data-slot=target]")).to_have_text("https://mcp.example.com/mcp")
    expect(overview.locator("[data-slot=enabled]")).to_have_text("Yes")
    _row(page, "legacy-git").locator(".row-link").click()
    expect(overview.locator("[data-slot=source]")).to_have_text("Imported")
    expect(overview.locator("[data-slot=probe]")).to_have_text("Never")


# --- keyboard only ---


def _tab_to(page: Page, selector: str, *, limit: int = 40, key: str = "Tab") -> None:
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{selector} never got the focus with {key}")


def test_the_list_and_the_detail_work_with_the_keyboard_alone(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    expect(page.locator("#groups .row")).to_have_count(6)
    _tab_to(page, "#search")
    page.keyboard.type("time")
    expect(page.locator("#groups .row-name")).to_have_text(["fresh", "time"])
    _tab_to(page, '.chip[data-filter="ready"]')
    page.keyboard.press("Enter")
    expect(page.locator("#groups .row-name")).to_have_text(["time"])
    _tab_to(page, '.chip[data-filter="all"]', key="Shift+Tab")
    page.keyboard.press("Space")
    expect(page.locator("#groups .row-name")).to_have_text(["fresh", "time"])
    _tab_to(page, ".row-link")
    page.keyboard.press("ArrowDown")  # arrows move between rows
    expect(page.locator(".row-link").nth(1)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(page.locator(".row-link").nth(0)).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#detail-heading")).to_have_text("time")
    expect(page.locator("#detail-heading")).to_be_focused()

    # the switch: Space toggles it, the focus stays on it through the re-render
    _tab_to(page, '[role="switch"][aria-label="Enable time"]', key="Shift+Tab")
    page.keyboard.press("Space")
    expect(page.locator("#outcome")).to_contain_text("time is now off")
    expect(page.get_by_role("switch", name="Enable time")).to_be_focused()
    expect(page.get_by_role("switch", name="Enable time")).to_have_attribute("aria-checked", "false")
    page.keyboard.press("Space")
    expect(page.get_by_role("switch", name="Enable time")).to_have_attribute("aria-checked", "true")
    assert _api(world, "/api/mcp/connectors/time")["settings"]["enabled"] is True

    # the Add menu: Enter opens it on its first item, arrows move, Escape closes it and the focus
    # goes back to its button
    _tab_to(page, "#add-connector", key="Shift+Tab")
    page.keyboard.press("Enter")
    menu = page.locator("#add-connector-menu")
    expect(menu).to_be_visible()
    expect(menu.get_by_role("menuitem").first).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(menu.get_by_role("menuitem", name="Import existing config")).to_be_focused()
    axe_check(page)
    screenshot(page, "add-menu")
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(page.locator("#add-connector")).to_be_focused()


def test_focus_is_visible_on_every_control(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    expect(page.locator("#groups .row")).to_have_count(6)
    for selector in ("#search", ".chip", ".row-link", '[role="switch"]', "#add-connector"):
        page.locator(selector).first.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # keyboard focus: :focus-visible applies
        outline = page.evaluate(
            "(s) => { const e = document.querySelector(s); const st = getComputedStyle(e);"
            " return [st.outlineStyle, st.outlineWidth, e === document.activeElement]; }",
            selector,
        )
        assert outline[2] and outline[0] != "none" and outline[1] != "0px", (selector, outline)


# --- empty and error states ---


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_no_connectors_shows_a_call_to_add_one(browser: Browser, pages: OpenPage, tmp_path: Path, locale: str) -> None:
    with page_server(tmp_path) as served:
        page = pages(served, locale=locale)
        empty = page.locator("#list-empty")
        expect(empty).to_be_visible()
        expect(empty).to_contain_text("No connectors yet" if locale == "en-US" else "还没有连接器")
        expect(page.locator("#partial-status")).to_be_hidden()
        expect(page.locator("#list-summary")).to_be_hidden()
        axe_check(page)
        screenshot(page, "empty")
        page.locator("#empty-add").click()
        menu = page.locator("#empty-add-menu")
        expect(menu).to_be_visible()
        expect(menu.get_by_role("menuitem")).to_have_count(4)
        axe_check(page)
        # a connector saved elsewhere shows when the page is asked to reload
        _create(served, "time", {"transport": "stdio", "command": "mcp-server-time"})
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()
        page.evaluate("() => document.dispatchEvent(new CustomEvent('patchbay:reload'))")
        expect(page.locator("#groups .row-name")).to_have_text(["time"])
        expect(page.locator("#list-empty")).to_be_hidden()


def test_an_unreachable_api_shows_the_error_and_retry_recovers(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    expect(page.locator("#groups .row")).to_have_count(6)
    page.context.set_offline(True)
    page.evaluate("() => document.dispatchEvent(new CustomEvent('patchbay:reload'))")
    error = page.locator("#list-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Patchbay did not answer")
    expect(error).to_contain_text("Error code: unreachable")
    expect(page.locator("#groups .row")).to_have_count(0)  # no stale list shown as if current
    axe_check(page)
    screenshot(page, "error")
    page.context.set_offline(False)
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#groups .row")).to_have_count(6)
    expect(error).to_be_hidden()


def test_a_store_the_server_cannot_use_shows_its_stable_code(browser: Browser, pages: OpenPage, tmp_path: Path) -> None:
    (tmp_path / "home").write_text("not a directory")  # the data home cannot be opened: every route is 503
    with page_server(tmp_path) as served:
        page = pages(served)
        error = page.locator("#list-error")
        expect(error).to_be_visible()
        expect(error).to_contain_text("Error code: canonical_state_unavailable")
        expect(page.locator("#list-empty")).to_be_hidden()  # an error is not an empty list


# --- both languages ---


def test_the_page_speaks_simplified_chinese_and_the_switcher_remembers(world: Served, pages: OpenPage) -> None:
    page = pages(world, locale="zh-CN")
    expect(page.locator("html")).to_have_attribute("lang", "zh-Hans")
    expect(page.locator("#list-heading")).to_have_text("连接器")
    expect(page.locator(".filters .chip")).to_have_text(
        ["全部", "已启用", "已连接/就绪", "需要认证", "本地", "远程", "已导入"]
    )
    expect(_row(page, "time").locator(".badge")).to_have_text("就绪")
    expect(_row(page, "locked").locator(".badge")).to_have_text("需要认证")
    expect(page.locator("#list-summary")).to_have_text("显示 6 个，共 6 个连接器")
    expect(page.locator("#partial-status")).to_contain_text("有 1 个连接器的状态尚未知晓")
    axe_check(page)
    screenshot(page, "connectors")

    _row(page, "time").locator(".row-link").click()
    overview = page.locator("[data-panel=overview]")
    expect(overview.locator("[data-slot=kind]")).to_have_text("本地命令")
    expect(overview.locator("[data-slot=probe]")).to_contain_text("年")  # the date in Chinese (Intl)
    expect(page.get_by_role("tab", name="概览")).to_be_visible()
    axe_check(page)
    screenshot(page, "detail")

    page.locator("#add-connector").click()
    expect(page.locator("#add-connector-menu")).to_contain_text("远程 URL")
    axe_check(page)
    screenshot(page, "add-menu")
    page.keyboard.press("Escape")

    _row(page, "fresh").get_by_role("switch", name="启用 fresh").click()
    expect(page.locator("#outcome")).to_contain_text("fresh 已关闭。已保存")
    _row(page, "fresh").get_by_role("switch", name="启用 fresh").click()
    expect(page.locator("#outcome")).to_contain_text("fresh 已开启。已保存")

    page.get_by_role("link", name="English").click()  # the switcher: a cookie, then the same page
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#detail-heading")).to_have_text("time")
    page.goto(f"{world.url}/ui")
    expect(page.locator("#list-heading")).to_have_text("Connectors")  # remembered over Accept-Language


def test_the_login_needed_page_in_both_languages_passes_axe(world: Served, browser: Browser) -> None:
    for locale, text, lang in (("en-US", "Log in to Patchbay", "en"), ("zh-CN", "登录 Patchbay", "zh-Hans")):
        context = browser.new_context(locale=locale)
        try:
            page = context.new_page()
            response = page.goto(f"{world.url}/ui")
            assert response is not None and response.status == 401
            expect(page.locator("h1")).to_have_text(text)
            expect(page.locator("html")).to_have_attribute("lang", lang)
            axe_check(page)
            screenshot(page, "login-needed")
        finally:
            context.close()


# --- mobile ---


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_a_390_px_screen_shows_list_and_detail_apart_with_back(world: Served, pages: OpenPage, locale: str) -> None:
    page = pages(world, locale=locale, width=390, height=844)
    master, detail = page.locator(".master"), page.locator(".detail")
    expect(page.locator("#groups .row")).to_have_count(6)
    expect(master).to_be_visible()
    expect(detail).to_be_hidden()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390  # nothing wider than the screen
    axe_check(page)
    screenshot(page, "mobile-list")

    _row(page, "everything").locator(".row-link").click()
    expect(detail).to_be_visible()
    expect(master).to_be_hidden()
    expect(page.locator("#detail-heading")).to_have_text("everything")
    back = page.locator("#back")
    expect(back).to_be_visible()
    axe_check(page)
    screenshot(page, "mobile-detail")

    back.click()
    expect(master).to_be_visible()
    expect(detail).to_be_hidden()
    expect(page).to_have_url(f"{world.url}/ui")
    expect(_row(page, "everything").locator(".row-link")).to_be_focused()  # back where the person was
    page.go_back()  # the browser's own back returns to the detail screen
    expect(detail).to_be_visible()
    expect(page.locator("#detail-heading")).to_have_text("everything")
