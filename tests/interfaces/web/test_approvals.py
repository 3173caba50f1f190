"""The pending-approvals region in a real browser (static/approvals.js) against a real ``patchbay
serve``: a call of a browser-approved session to mcp-server-time (its tool on ``ask``) appears live,
the page allows it once or denies it, and the waiting call ends accordingly; axe passes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect

from tests.support.browser import OpenPage, axe_check, page_server, screenshot
from tests.support.paths import INSPECTOR, NODE22
from tests.support.serve import Served

TOOL = "mcp.time.get_current_time"


def prepare(served: Served, workspace: Path) -> str:
    """The ``time`` connector, its tool on ask, and a browser-approved session; its id."""
    base = served.url
    created = served.session.post(
        f"{base}/api/mcp/connectors",
        json={"name": "time", "target": {"transport": "stdio", "command": "mcp-server-time"}, "enabled": True},
        timeout=60,
    )
    assert created.status_code == 201, created.text
    grant = served.session.put(
        f"{base}/api/mcp/connectors/time/tools/get_current_time", json={"decision": "ask"}, timeout=30
    )
    assert grant.status_code == 200, grant.text
    opened = served.session.post(
        f"{base}/api/sessions", json={"cwd": str(workspace), "approvals": "browser"}, timeout=60
    )
    assert opened.status_code == 201, opened.text
    return str(opened.json()["session_id"])


class Call(threading.Thread):
    """A tool call of the agent, waiting in a thread for its answer."""

    def __init__(self, served: Served, session_id: str, timezone: str):
        super().__init__(daemon=True)
        self.url = f"{served.url}/api/sessions/{session_id}/call"
        self.headers = served.headers
        self.body = {"tool": TOOL, "arguments": {"timezone": timezone}}
        self.response: requests.Response | None = None

    def run(self) -> None:
        self.response = requests.post(self.url, json=self.body, headers=self.headers, timeout=60)

    def result(self) -> requests.Response:
        self.join(timeout=60)
        assert self.response is not None, "the call did not end"
        return self.response


def answer(page: Page, item: Any, label: str) -> dict[str, Any]:
    with page.expect_response(lambda r: "/api/approvals/apr_" in r.url and r.request.method == "POST") as info:
        item.get_by_role("button", name=label).click()
    assert info.value.status == 200, info.value.text()
    body: dict[str, Any] = info.value.json()
    return body


def test_the_page_shows_a_waiting_call_live_and_allows_it_once_or_denies_it(pages: OpenPage, tmp_path: Path) -> None:
    with page_server(tmp_path) as served:
        session_id = prepare(served, tmp_path / "ws")
        page = pages(served)
        region = page.locator("#approvals")
        expect(region).to_be_hidden()

        first = Call(served, session_id, "UTC")
        first.start()
        item = page.locator("#approvals-list > li")
        expect(item).to_have_count(1)
        expect(region).to_be_visible()
        expect(item.locator("h3")).to_have_text(f"{TOOL} asks to run")
        assert json.loads(item.locator("pre").inner_text()) == {"timezone": "UTC"}
        expect(page.locator("#announcer")).to_have_text(f"{TOOL} is waiting for your approval")
        axe_check(page)
        screenshot(page, "approvals-waiting")
        assert answer(page, item, "Allow once")["answer"] == "allow_once"
        expect(item).to_have_count(0)
        expect(region).to_be_hidden()
        allowed = first.result()
        assert allowed.status_code == 200, allowed.text
        assert json.loads(allowed.json()["content"][0]["text"])["timezone"] == "UTC"

        second = Call(served, session_id, "Europe/Paris")  # allow-once covered only the first call
        second.start()
        expect(item).to_have_count(1)
        assert json.loads(item.locator("pre").inner_text()) == {"timezone": "Europe/Paris"}
        item.get_by_role("button", name="Deny").focus()
        assert answer(page, item, "Deny")["answer"] == "deny"
        expect(page.locator("#announcer")).to_have_text(f"{TOOL} denied")
        denied = second.result()
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission_denied"
        expect(page.locator("#main")).to_be_focused()  # focus did not fall to <body>

        events = served.session.get(f"{served.url}/api/sessions/{session_id}/events", timeout=30).json()["events"]
        resolved = [e["payload"] for e in events if e["type"] == "permission.resolved"]
        assert [(p["actor"], p["sourcedFrom"]) for p in resolved] == [
            ("user", "user_allow_once"),
            ("user", "user_deny"),
        ]
        assert [e["type"] for e in events].count("mcp.call.started") == 1  # the denied call never started


def test_the_region_fits_a_narrow_screen_and_speaks_chinese(pages: OpenPage, tmp_path: Path) -> None:
    with page_server(tmp_path) as served:
        session_id = prepare(served, tmp_path / "ws")
        page = pages(served, locale="zh-CN", width=390, height=844)
        call = Call(served, session_id, "Asia/Shanghai")
        call.start()
        item = page.locator("#approvals-list > li")
        expect(item).to_have_count(1)
        expect(page.locator("#approvals-heading")).to_have_text("等待你的批准")
        expect(item.get_by_role("button", name="允许一次")).to_be_visible()
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, width  # nothing scrolls sideways
        axe_check(page)
        screenshot(page, "approvals-narrow")
        assert answer(page, item, "在本会话中允许")["answer"] == "allow_session"
        assert call.result().status_code == 200


def test_an_approval_left_unanswered_expires_the_call_is_denied_and_the_page_clears_it(
    pages: OpenPage, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("PATCHBAY_APPROVAL_EXPIRY", "3")
    with page_server(tmp_path) as served:
        session_id = prepare(served, tmp_path / "ws")
        page = pages(served)
        call = Call(served, session_id, "UTC")
        call.start()
        denied = call.result()  # nobody answers on the open page
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission_denied"
        expect(page.locator("#approvals-list > li")).to_have_count(0)  # the page does not keep it
        expect(page.locator("#approvals")).to_be_hidden()
        assert (served.session.get(f"{served.url}/api/approvals", timeout=30).json()) == {"approvals": []}
        events = served.session.get(f"{served.url}/api/sessions/{session_id}/events", timeout=30).json()["events"]
        [resolved] = [e["payload"] for e in events if e["type"] == "permission.resolved"]
        assert (resolved["actor"], resolved["sourcedFrom"]) == ("runtime", "approval_expired")
        assert "mcp.call.started" not in [e["type"] for e in events]


@pytest.mark.peers
def test_a_gateway_hosts_call_is_approved_on_the_page_its_link_opens_and_then_proceeds(
    pages: OpenPage, tmp_path: Path, monkeypatch: Any
) -> None:
    """The MCP Inspector (``--cli``) as the host of ``/mcp``: its ask call ends ``approval_pending``
    with a link to the page; the page the link opens shows that approval in view; once allowed
    there, the Inspector's identical call proceeds."""
    monkeypatch.setenv("PATCHBAY_GATEWAY_APPROVAL_WAIT", "0.05")  # the host's call ends at once
    (tmp_path / "user").mkdir()
    with page_server(tmp_path) as served:
        prepare(served, tmp_path / "ws")
        url = f"{served.url}/mcp?cwd={tmp_path / 'ws'}&mode=direct"
        env = {"PATH": os.pathsep.join([str(NODE22.parent), os.environ["PATH"]]), "HOME": str(tmp_path / "user")}

        def inspector_call() -> dict[str, Any]:
            auth = f"Authorization: Bearer {served.info['token']}"
            call = ["--method", "tools/call", "--tool-name", "time__get_current_time", "--tool-arg", "timezone=UTC"]
            done = subprocess.run(
                [str(NODE22), str(INSPECTOR), "--cli", url, "--transport", "http", "--header", auth, *call],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: a result with isError
            answer: dict[str, Any] = json.loads(done.stdout)
            return answer

        asked = inspector_call()
        error = asked["_meta"]["patchbay/error"]
        assert asked["isError"] is True and error["code"] == "approval_pending"
        assert error["approvalUrl"] == f"{served.url}/ui#approval-{error['approvalId']}"

        page = pages(served)
        page.goto(error["approvalUrl"])
        item = page.locator(f"#approval-{error['approvalId']}")
        expect(item).to_have_class(re.compile(r"\brequested\b"))
        expect(item.locator("h3")).to_be_focused()  # read first; no key press answers it
        assert json.loads(item.locator("pre").inner_text()) == {"timezone": "UTC"}
        axe_check(page)
        screenshot(page, "approvals-gateway-link")
        assert answer(page, item, "Allow once")["answer"] == "allow_once"
        expect(item).to_have_count(0)

        allowed = inspector_call()
        assert allowed["isError"] is False and allowed["structuredContent"]["timezone"] == "UTC"
