"""The settings page lists exactly the connectors a new session loads (seed 003 §19.1), before
and after the page's own switch changes one, and an ambient ``.mcp.json`` or an imported entry
that is not enabled reaches neither (§19.11).

Every connector here runs the same real peer (``mcp-server-time``), so one that a session
loaded would offer its tools: a session's tool list names exactly the connectors it loaded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import open_page, page_errors, page_server
from tests.support.serve import Served

pytestmark = pytest.mark.peers

TIME = {"transport": "stdio", "command": "mcp-server-time"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root: Path = tmp_path_factory.mktemp("session-set")
    workspace = root / "ws"
    workspace.mkdir()
    servers = {
        "mcpServers": {"ambient-time": {"command": "mcp-server-time"}, "legacy-time": {"command": "mcp-server-time"}}
    }
    (workspace / ".mcp.json").write_text(json.dumps(servers))
    with page_server(root) as served:
        for name, enabled in (("clock-a", True), ("clock-b", True), ("clock-c", True), ("clock-off", False)):
            response = served.session.post(
                f"{served.url}/api/mcp/connectors", json={"name": name, "target": TIME, "enabled": enabled}, timeout=60
            )
            assert response.status_code == 201, response.text
        imported = served.session.post(
            f"{served.url}/api/mcp/import/commit",
            json={"paths": [".mcp.json"], "select": ["legacy-time"], "enabled": False},
            timeout=60,
        )
        assert imported.status_code == 200, imported.text
        yield served


def _session_connectors(served: Served) -> set[str]:
    """The connectors a new session in the served workspace loaded (it is closed again)."""
    opened = served.session.post(f"{served.url}/api/sessions", json={}, timeout=60)
    assert opened.status_code == 201, opened.text
    session_id = opened.json()["session_id"]
    try:
        tools = served.session.get(f"{served.url}/api/sessions/{session_id}/tools", timeout=120)
        assert tools.status_code == 200, tools.text
        return {tool["connector"] for tool in tools.json()["tools"]}
    finally:
        closed = served.session.delete(f"{served.url}/api/sessions/{session_id}", timeout=60)
        assert closed.status_code == 200, closed.text


def _page_enabled(page: Page) -> set[str]:
    """The connectors the page shows as on (their switch is checked)."""
    expect(page.locator("#groups .row").first).to_be_visible()
    names: set[str] = set()
    for row in page.locator("#groups .row").all():
        name = row.locator(".row-name").inner_text()
        if row.get_by_role("switch").get_attribute("aria-checked") == "true":
            names.add(name)
    return names


def test_the_page_lists_exactly_the_connectors_a_new_session_loads(served: Served, browser: Browser) -> None:
    page = open_page(browser, served)
    try:
        expect(page.locator("#groups .row")).to_have_count(5)  # the ambient entry is not listed
        shown = _page_enabled(page)
        assert shown == {"clock-a", "clock-b", "clock-c"}
        assert _session_connectors(served) == shown

        row = page.locator("#groups .row").filter(has=page.locator(".row-name", has_text=re.compile("^clock-b$")))
        row.get_by_role("switch").click()
        expect(row.get_by_role("switch")).to_have_attribute("aria-checked", "false")
        expect(page.locator("#outcome")).to_be_visible()
        shown = _page_enabled(page)
        assert shown == {"clock-a", "clock-c"}
        assert _session_connectors(served) == shown

        listed: Any = served.session.get(f"{served.url}/api/mcp/connectors", timeout=30).json()
        assert {c["name"] for c in listed["connectors"] if c["settings"]["enabled"]} == shown
        assert page_errors(page) == []
    finally:
        page.context.close()
