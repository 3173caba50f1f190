"""Live status on the settings page (static/live.js) in a real browser, against a real
``patchbay serve`` with mcp-server-time over stdio: a session opened and used over REST turns
the connector's badge and its Connection tab to connected without the page loading the list
again, the change is announced for the selected connector, and closing the session turns it
back. axe-core runs on the updated page."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.browser import OpenPage, axe_check, page_server, screenshot

pytestmark = pytest.mark.peers

TIME = {"transport": "stdio", "command": "mcp-server-time"}


def test_a_session_connecting_changes_the_badge_without_a_reload(tmp_path: Path, pages: OpenPage) -> None:
    with page_server(tmp_path) as served:
        created = served.session.post(
            f"{served.url}/api/mcp/connectors", json={"name": "time", "target": TIME, "enabled": True}, timeout=60
        )
        assert created.status_code == 201, created.text
        connector_id = created.json()["connector_id"]
        page = pages(served)
        page.goto(f"{served.url}/ui/connectors/{connector_id}")
        expect(page.locator("#detail-body > [data-slot=name]")).to_have_text("time")
        page.locator("#tab-connection").click()
        row = page.locator(f'#groups .row[data-id="{connector_id}"]')
        expect(row).to_have_attribute("data-status", "unknown")
        panel = page.locator("#panel-connection")
        expect(panel.locator("[data-slot=live]")).to_have_text("No open session uses it")
        list_loads: list[str] = []
        page.on("request", lambda r: list_loads.append(r.url) if r.url.endswith("/api/mcp/connectors") else None)
        page.evaluate("() => { window.__notReloaded = true; }")

        opened = served.session.post(f"{served.url}/api/sessions", json={"cwd": str(tmp_path / "ws")}, timeout=60)
        assert opened.status_code == 201, opened.text
        sid = opened.json()["session_id"]
        answer = served.session.post(
            f"{served.url}/api/sessions/{sid}/call",
            json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}, "approve": "once"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text

        expect(row).to_have_attribute("data-status", "connected")
        expect(page.locator(".detail-header [data-status=connected]")).to_have_count(1)
        expect(panel.locator("[data-slot=runtime]")).to_have_text("Connected")
        expect(panel.locator("[data-slot=live]")).to_have_text("1 session(s), 0 call(s) in flight, 0 restart(s)")
        expect(panel.locator("[data-slot=tools]")).to_have_text("2")  # the live list, not the never-probed cache
        expect(page.locator("#announcer")).to_contain_text("time is now: Connected")
        assert page.evaluate("() => window.__notReloaded === true")
        assert list_loads == []  # the list was not fetched again: the stream carried the change
        axe_check(page)
        screenshot(page, "detail-connection-live")

        assert served.session.delete(f"{served.url}/api/sessions/{sid}", timeout=60).status_code == 200
        expect(row).to_have_attribute("data-status", "unknown")
        expect(panel.locator("[data-slot=live]")).to_have_text("No open session uses it")
        assert list_loads == []
