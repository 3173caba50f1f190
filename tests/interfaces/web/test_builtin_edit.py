"""The Edit form of a built-in connector (static/connector_form.js) hides its fixed command and
working directory, and saving the settings it can change never sends a target (which the API
refuses for a built-in), against a real ``patchbay serve`` on a data home that seeded them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.browser import OpenPage, axe_check, page_server


def test_editing_a_builtin_hides_its_command_and_saves_without_a_target(
    tmp_path: Path, pages: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHBAY_BUILTINS", "on")
    with page_server(tmp_path) as served:
        before = served.session.get(f"{served.url}/api/mcp/connectors/literature-graph", timeout=30).json()
        page = pages(served)
        page.locator("[data-group=builtin] .row").filter(has_text="Literature Graph").locator(".row-link").click()
        expect(page.locator("#detail-heading")).to_have_text("Literature Graph")
        page.locator("#edit-connector").click()
        expect(page.locator("#connector-form-dialog")).to_be_visible()
        expect(page.locator("#cf-command")).to_be_hidden()
        expect(page.locator("#cf-cwd")).to_be_hidden()
        expect(page.locator("#cf-builtin-command")).to_be_visible()
        expect(page.locator("#cf-env-add")).to_be_hidden()  # behind Advanced settings, still offered
        page.locator("#cf-advanced summary").click()
        expect(page.locator("#cf-env-add")).to_be_visible()
        axe_check(page)
        page.locator("#cf-display").fill("OpenAlex graph")
        with page.expect_response(
            lambda r: r.request.method == "PATCH" and r.url.endswith(f"/api/mcp/connectors/{before['connector_id']}")
        ) as answer:
            page.locator("#cf-save").click()
        assert answer.value.status == 200
        sent = json.loads(answer.value.request.post_data or "{}")
        assert "target" not in sent and sent["display_name"] == "OpenAlex graph"
        expect(page.locator("#connector-form-dialog")).to_be_hidden()
        after = served.session.get(f"{served.url}/api/mcp/connectors/literature-graph", timeout=30).json()
        assert after["display_name"] == "OpenAlex graph" and after["target"] == before["target"]
        # the same dialog opened to add a local command shows the command field again
        page.locator("#add-connector").click()
        page.locator('#add-connector-menu [data-add-kind="local"]').click()
        expect(page.locator("#cf-command")).to_be_visible()
        expect(page.locator("#cf-builtin-command")).to_be_hidden()
        chinese = pages(served, locale="zh-CN", width=390, height=844)
        chinese.locator("[data-group=builtin] .row").filter(has_text="Paper Search").locator(".row-link").click()
        chinese.locator("#edit-connector").click()
        expect(chinese.locator("#cf-builtin-command")).to_have_text(
            "此连接器为内置连接器：其命令属于 Patchbay 的一部分，无法更改。"
        )
        expect(chinese.locator("#cf-command")).to_be_hidden()
        axe_check(chinese)
