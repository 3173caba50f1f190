"""The Tools tab of the settings page (static/tools.js) in a real browser, against a real
``patchbay serve`` with real peers: mcp-server-git over stdio (twelve tools, one destructive) and
server-everything over Streamable HTTP (thirteen), plus an mcp-server-time never probed.

What the page sets is checked against the REST API and against a NEW session opened through the
REST session routes: the tool list it offers (a denied tool is not in it, and a call of it is
refused as ``unknown_tool`` without reaching the server), an Ask tool refused with ``approval_unavailable`` unless the call approves it. Also: project override
then Inherit, a global deny a workspace cannot lift, filter + bulk apply + "N of M allowed", Allow
all's confirmation (Cancel changes nothing), Refresh tools (a real probe), the keyboard alone,
both languages (axe + screenshots) and a 390 px screen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.support.browser import OpenPage, axe_check, open_page, page_errors, page_server, screenshot
from tests.support.serve import Served
from tests.support.servers import everything_http, make_git_repo

pytestmark = pytest.mark.peers

GIT_TOOLS = 12
DENIED = (422, "unknown_tool")
"""How a session refuses a call of a denied tool: it is not projected at all, so the call never
reaches the server and the session knows no such tool."""
EVERYTHING_TOOLS = 13


def _create(served: Served, name: str, target: dict[str, Any], **fields: Any) -> None:
    response = served.session.post(
        f"{served.url}/api/mcp/connectors", json={"name": name, "target": target, "enabled": True, **fields}, timeout=60
    )
    assert response.status_code == 201, response.text


def _probe(served: Served, name: str) -> None:
    report = served.session.post(f"{served.url}/api/mcp/connectors/{name}/probe", timeout=120).json()
    assert report["state"] == "ready", report


class World:
    """One serve for the module: its connectors and the workspaces the tests use."""

    def __init__(self, served: Served, root: Path) -> None:
        self.served = served
        self.workspace = root / "ws"  # where serve runs: the default workspace of a session
        self.other = root / "other"  # a second git workspace, no project until a test sets a grant
        make_git_repo(self.other)

    def get(self, path: str, **params: Any) -> Any:
        response = self.served.session.get(f"{self.served.url}{path}", params=params, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def tools(self, connector: str, cwd: Path | None = None) -> dict[str, dict[str, Any]]:
        """The REST API's tools of ``connector`` by name, in the global scope or ``cwd``'s."""
        params = {"cwd": str(cwd)} if cwd else {}
        return {tool["name"]: tool for tool in self.get(f"/api/mcp/connectors/{connector}/tools", **params)["tools"]}

    def grant(self, connector: str, tool: str, decision: str, cwd: Path | None = None) -> None:
        params = {"cwd": str(cwd)} if cwd else {}
        response = self.served.session.put(
            f"{self.served.url}/api/mcp/connectors/{connector}/tools/{tool}",
            json={"decision": decision},
            params=params,
            timeout=30,
        )
        assert response.status_code == 200, response.text

    def clear_grants(self) -> None:
        """Remove every grant the tests set, in every scope they use."""
        for connector in ("git", "everything"):
            for cwd in (None, self.workspace, self.other):
                params = {"cwd": str(cwd)} if cwd else {}
                for tool in self.tools(connector, cwd).values():
                    if tool["project_grant" if cwd else "global_grant"] is not None:
                        response = self.served.session.delete(
                            f"{self.served.url}/api/mcp/connectors/{connector}/tools/{tool['name']}",
                            params=params,
                            timeout=30,
                        )
                        assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def module_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("tools")
    make_git_repo(root / "ws")
    with everything_http() as everything_url, page_server(root) as served:
        _create(served, "git", {"transport": "stdio", "command": "mcp-server-git", "args": ["--repository", "."]})
        _probe(served, "git")
        _create(
            served,
            "everything",
            {"transport": "streamable_http", "url": everything_url},
            runtime_options={"allow_private": True},
        )
        _probe(served, "everything")
        _create(served, "time", {"transport": "stdio", "command": "mcp-server-time"})
        yield World(served, root)


@pytest.fixture
def world(module_world: World) -> Iterator[World]:
    """The module's world, its grants cleared after each test."""
    yield module_world
    module_world.clear_grants()


@pytest.fixture
def pages(browser: Browser) -> Iterator[OpenPage]:
    """Open logged-in pages on a connector's Tools tab; closed after the test, which fails on any
    script or CSP error they reported."""
    opened: list[Page] = []

    def open_(world: World, connector: str, **options: Any) -> Page:
        page = open_page(browser, world.served, **options)
        opened.append(page)
        page.goto(f"{world.served.url}/ui/connectors/{connector}")
        page.locator("#tab-tools").click()
        expect(page.locator("#tools-list .tool").first).to_be_visible()
        return page

    yield open_
    errors = [error for page in opened for error in page_errors(page)]
    for page in opened:
        page.context.close()
    assert errors == []


class Session:
    """A session opened through the REST session routes (closed by the ``with`` block)."""

    def __init__(self, world: World, cwd: Path | None = None) -> None:
        self.world = world
        self.body = {"cwd": str(cwd)} if cwd else {}
        self.session_id = ""

    def __enter__(self) -> Session:
        response = self.world.served.session.post(f"{self.world.served.url}/api/sessions", json=self.body, timeout=60)
        assert response.status_code == 201, response.text
        self.session_id = response.json()["session_id"]
        return self

    def __exit__(self, *exc: object) -> None:
        self.world.served.session.delete(f"{self.world.served.url}/api/sessions/{self.session_id}", timeout=60)

    def decisions(self, connector: str) -> dict[str, str]:
        tools = self.world.get(f"/api/sessions/{self.session_id}/tools")["tools"]
        return {tool["tool"]: tool["decision"] for tool in tools if tool["connector"] == connector}

    def call(self, tool: str, arguments: dict[str, Any], **extra: Any) -> tuple[int, dict[str, Any]]:
        response = self.world.served.session.post(
            f"{self.world.served.url}/api/sessions/{self.session_id}/call",
            json={"tool": tool, "arguments": arguments, **extra},
            timeout=120,
        )
        return response.status_code, response.json()


def _tool(page: Page, name: str) -> Locator:
    return page.locator("#tools-list .tool").filter(has=page.locator(".tool-name", has_text=re.compile(f"^{name}$")))


def _choose(page: Page, name: str, label: str) -> None:
    _tool(page, name).get_by_role("group", name=f"Decision for {name}").get_by_text(label, exact=True).click()


def _checked(page: Page, name: str) -> str | None:
    return _tool(page, name).locator("input:checked").get_attribute("value")


def _use_workspace(page: Page, path: Path) -> None:
    page.locator("#tools-workspace").fill(str(path))
    page.locator("#tools-workspace-form button[type=submit]").click()
    expect(page.locator("#tools-scope")).to_have_value(str(path))


# --- Allow / Ask / Deny: the page, the API and a new session agree ---


def test_allow_ask_deny_set_in_the_page_reach_the_api_and_a_new_session(world: World, pages: OpenPage) -> None:
    page = pages(world, "git")
    expect(page.locator("#tools-list .tool")).to_have_count(GIT_TOOLS)
    expect(page.locator("#tools-count")).to_have_text(f"0 of {GIT_TOOLS} allowed")
    status = _tool(page, "git_status")
    expect(status.locator(".hint")).to_have_text(["Read-only", "Idempotent"])
    expect(_tool(page, "git_reset").locator(".hint")).to_have_text(["Destructive", "Idempotent"])
    expect(status.locator(".tool-source")).to_have_text("Default: the connector asks before each tool")
    expect(page.locator("[data-slot=scope-note]")).to_contain_text("Showing the global defaults")

    _choose(page, "git_status", "Allow")
    expect(page.locator("#tools-count")).to_have_text(f"1 of {GIT_TOOLS} allowed")  # at once
    expect(page.locator("#outcome")).to_contain_text("git_status: Allow. Saved")
    expect(page.locator("#tools-status")).to_have_text("git_status: Allow. Saved")
    _choose(page, "git_log", "Deny")
    expect(page.locator("#outcome")).to_contain_text("git_log: Deny. Saved")
    _choose(page, "git_branch", "Ask")
    expect(page.locator("#outcome")).to_contain_text("git_branch: Ask. Saved")
    expect(page.locator("#announcer")).to_contain_text("git_branch: Ask. Saved")
    expect(_tool(page, "git_log").locator(".tool-source")).to_have_text("Set in the global defaults")
    expect(_tool(page, "git_log").get_by_role("button", name="Use default for git_log")).to_be_visible()
    assert [_checked(page, name) for name in ("git_status", "git_log", "git_branch")] == ["allow", "deny", "ask"]

    api = world.tools("git")
    assert {
        name: (api[name]["decision"], api[name]["global_grant"]) for name in ("git_status", "git_log", "git_branch")
    } == {
        "git_status": ("allow", "allow"),
        "git_log": ("deny", "deny"),
        "git_branch": ("ask", "ask"),
    }
    with Session(world) as session:
        offered = session.decisions("git")  # a denied tool is not offered at all
        assert (offered["git_status"], offered["git_branch"], "git_log" in offered) == ("allow", "ask", False)
        assert offered == {name: tool["decision"] for name, tool in api.items() if tool["decision"] != "deny"}
        code, answer = session.call("mcp.git.git_status", {"repo_path": str(world.workspace)})
        assert code == 200 and "hello-from-test.txt" in answer["model_text"], answer
        code, answer = session.call("mcp.git.git_log", {"repo_path": str(world.workspace)})
        assert (code, answer["error"]["code"]) == DENIED, answer
        code, answer = session.call("mcp.git.git_branch", {"repo_path": str(world.workspace), "branch_type": "local"})
        assert answer["error"]["code"] == "approval_unavailable", answer
        code, answer = session.call(
            "mcp.git.git_branch", {"repo_path": str(world.workspace), "branch_type": "local"}, approve="once"
        )
        assert code == 200, answer

    # the global setting cleared: the connector's default again, in the page and the API
    _tool(page, "git_log").get_by_role("button", name="Use default for git_log").click()
    expect(page.locator("#outcome")).to_contain_text("git_log uses the connector's default. Saved")
    expect(_tool(page, "git_log").locator(".tool-source")).to_have_text("Default: the connector asks before each tool")
    assert _checked(page, "git_log") == "ask"
    assert world.tools("git")["git_log"]["global_grant"] is None
    axe_check(page)
    screenshot(page, "tools")


# --- scopes ---


def test_a_workspace_override_is_shown_as_such_and_inherit_clears_it(world: World, pages: OpenPage) -> None:
    world.grant("git", "git_diff", "allow")  # a global default the workspace inherits
    page = pages(world, "git")
    _use_workspace(page, world.other)
    note = page.locator("[data-slot=scope-note]")
    expect(note).to_contain_text(f"Workspace {world.other} has no settings of its own yet")
    diff = _tool(page, "git_diff")
    expect(diff.locator(".tool-source")).to_have_text("Inherited: Set in the global defaults")
    expect(diff).to_have_attribute("data-inherited", "")
    expect(diff.get_by_role("button", name="Inherit the global default for git_diff")).to_be_hidden()
    assert _checked(page, "git_diff") == "allow"

    _choose(page, "git_diff", "Deny")
    expect(page.locator("#outcome")).to_contain_text("git_diff: Deny. Saved")
    expect(diff.locator(".tool-source")).to_have_text("Set for this workspace")
    expect(note).to_contain_text(f"Showing workspace {world.other}")
    inherit = diff.get_by_role("button", name="Inherit the global default for git_diff")
    expect(inherit).to_be_visible()
    here, everywhere = world.tools("git", world.other)["git_diff"], world.tools("git")["git_diff"]
    assert (here["decision"], here["project_grant"], here["source"]) == ("deny", "deny", "project_grant")
    assert (everywhere["decision"], everywhere["global_grant"]) == ("allow", "allow")
    with Session(world, world.other) as session:
        assert "git_diff" not in session.decisions("git")
        code, answer = session.call("mcp.git.git_diff", {"repo_path": str(world.other), "target": "HEAD"})
        assert (code, answer["error"]["code"]) == DENIED
    axe_check(page)
    screenshot(page, "tools-workspace")

    inherit.click()
    expect(page.locator("#outcome")).to_contain_text("git_diff inherits the global default. Saved")
    expect(diff.locator(".tool-source")).to_have_text("Inherited: Set in the global defaults")
    expect(inherit).to_be_hidden()
    assert _checked(page, "git_diff") == "allow"
    here = world.tools("git", world.other)["git_diff"]
    assert (here["decision"], here["project_grant"]) == ("allow", None)

    # back to the global defaults: the scope selector lists the workspace typed
    page.get_by_label("Scope", exact=True).select_option(label="Global defaults")
    expect(note).to_contain_text("Showing the global defaults")
    expect(diff.locator(".tool-source")).to_have_text("Set in the global defaults")

    # a page opened afresh (typed paths are kept in memory only) offers it as a known project
    fresh = pages(world, "git")
    expect(fresh.get_by_label("Scope", exact=True).locator("option", has_text=str(world.other))).to_have_count(1)


def test_a_global_deny_cannot_be_lifted_in_a_workspace(world: World, pages: OpenPage) -> None:
    world.grant("git", "git_reset", "deny")
    page = pages(world, "git")
    expect(_tool(page, "git_reset").get_by_role("radio", name="Allow")).to_be_enabled()  # globally
    _use_workspace(page, world.workspace)
    reset = _tool(page, "git_reset")
    group = reset.get_by_role("group", name="Decision for git_reset")
    for label in ("Allow", "Ask", "Deny"):
        expect(group.get_by_role("radio", name=label)).to_be_disabled()
    expect(reset.locator(".tool-source")).to_have_text(
        "Denied in the global defaults: a workspace cannot lift a global Deny"
    )
    expect(group).to_have_accessible_description("Denied in the global defaults: a workspace cannot lift a global Deny")
    assert _checked(page, "git_reset") == "deny"
    # the bulk buttons leave it alone
    page.get_by_label("Filter tools").fill("git_reset")
    expect(page.locator("#tools-body [data-bulk=allow]")).to_be_disabled()
    # nor can the API lift it
    world.grant("git", "git_reset", "allow", world.workspace)
    assert world.tools("git", world.workspace)["git_reset"]["decision"] == "deny"
    with Session(world) as session:
        assert "git_reset" not in session.decisions("git")
    axe_check(page)


# --- filter, bulk apply, N of M, Allow all ---


def test_filter_and_bulk_apply_to_the_tools_shown_with_allow_all_confirmed(world: World, pages: OpenPage) -> None:
    page = pages(world, "everything")
    count = page.locator("#tools-count")
    expect(count).to_have_text(f"0 of {EVERYTHING_TOOLS} allowed")
    page.get_by_label("Filter tools").fill("get-")
    shown = page.locator("#tools-list .tool:visible")
    expect(shown).to_have_count(7)
    expect(page.locator("[data-slot=bulk-label]")).to_have_text("Apply to the 7 tools shown:")
    page.get_by_label("Filter tools").fill("THE SUM OF TWO")  # descriptions too, any case
    expect(shown).to_have_count(1)
    page.get_by_label("Filter tools").fill("get-")

    allow_all = page.get_by_role("button", name="Allow all", exact=True)
    allow_all.click()
    dialog = page.get_by_role("dialog", name="Allow every tool shown?")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("7 tools will run without asking for approval in this scope")
    axe_check(page)
    screenshot(page, "tools-allow-all")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(allow_all).to_be_focused()
    expect(count).to_have_text(f"0 of {EVERYTHING_TOOLS} allowed")
    assert all(tool["global_grant"] is None for tool in world.tools("everything").values())  # nothing written

    allow_all.click()
    dialog.get_by_role("button", name="Allow all").click()
    expect(page.locator("#outcome")).to_contain_text("Allow set for 7 tools. Saved")
    expect(count).to_have_text(f"7 of {EVERYTHING_TOOLS} allowed")
    api = world.tools("everything")
    assert sorted(name for name, tool in api.items() if tool["decision"] == "allow") == sorted(
        name for name in api if "get-" in name
    )

    # by decision: the allowed ones; Deny all of them, no confirmation needed
    page.get_by_label("Filter tools").fill("")
    page.get_by_label("Decision", exact=True).select_option("allow")
    expect(shown).to_have_count(7)
    page.get_by_role("button", name="Deny all").click()
    expect(page.locator("#outcome")).to_contain_text("Deny set for 7 tools. Saved")
    expect(count).to_have_text(f"0 of {EVERYTHING_TOOLS} allowed")
    expect(page.locator("#tools-nomatch")).to_be_visible()  # none is "allow" any more
    page.get_by_label("Decision", exact=True).select_option("deny")
    expect(shown).to_have_count(7)
    with Session(world) as session:
        offered = session.decisions("everything")
        assert sorted(name for name in api if name not in offered) == sorted(name for name in api if "get-" in name)
        code, answer = session.call("mcp.everything.get-sum", {"a": 1, "b": 2})
        assert (code, answer["error"]["code"]) == DENIED
        code, answer = session.call("mcp.everything.echo", {"message": "hi"})
        assert answer["error"]["code"] == "approval_unavailable"


# --- Refresh tools ---


def test_refresh_tools_probes_for_real_and_the_catalog_appears_at_once(
    world: World, pages: OpenPage, browser: Browser
) -> None:
    page = open_page(browser, world.served)
    try:
        page.goto(f"{world.served.url}/ui/connectors/time")
        page.locator("#tab-tools").click()
        expect(page.locator("#tools-empty")).to_have_text("No tool list yet: refresh tools to probe the server.")
        # the progress is shown while the probe runs: recorded by an observer, no timing guess
        page.evaluate(
            """() => {
              const progress = document.getElementById("tools-progress");
              window.sawProgress = [];
              new MutationObserver(() => {
                if (!progress.hidden) window.sawProgress.push(progress.textContent.trim());
              }).observe(progress, { attributes: true, subtree: true, childList: true });
            }"""
        )
        page.get_by_role("button", name="Refresh tools").click()
        expect(page.locator("#outcome")).to_contain_text("Tools refreshed: 2 tools. Saved", timeout=60_000)
        expect(page.locator("#tools-list .tool-name")).to_have_text(["get_current_time", "convert_time"])
        expect(page.locator("#tools-count")).to_have_text("0 of 2 allowed")
        assert "Probing time…" in page.evaluate("() => window.sawProgress")
        expect(page.get_by_role("button", name="Refresh tools")).to_be_enabled()
        assert sorted(world.tools("time")) == ["convert_time", "get_current_time"]
        detail = world.get("/api/mcp/connectors/time")
        assert detail["last_probe"]["state"] == "ready" and detail["cache"]["state"] == "fresh"
        assert page_errors(page) == []
    finally:
        page.context.close()


# --- keyboard only ---


def test_the_tools_tab_works_with_the_keyboard_alone(world: World, pages: OpenPage) -> None:
    page = pages(world, "git")
    page.locator("#tab-overview").click()
    page.locator("#tab-overview").focus()
    page.keyboard.press("ArrowRight")  # the tablist: arrows move and activate
    expect(page.locator("#tab-connection")).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tab-tools")).to_be_focused()
    expect(page.locator("#panel-tools")).to_be_visible()
    for _ in range(40):  # Tab through the panel to the first tool's control
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement?.name === 'tool-decision:git_status'"):
            break
    focused = page.locator("input:focus")
    expect(focused).to_have_attribute("value", "ask")  # the checked radio takes the focus
    sent: list[str] = []
    page.on(
        "request",
        lambda r: sent.append(r.post_data_json["decision"]) if r.method == "PUT" and "git_status" in r.url else None,
    )
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tools-status")).to_contain_text("git_status: Deny chosen; press Enter to save it")
    with page.expect_response(lambda r: r.request.method == "PUT" and "git_status" in r.url):
        page.keyboard.press("Enter")
    expect(page.locator("#outcome")).to_contain_text("git_status: Deny. Saved")
    page.keyboard.press("ArrowLeft")  # Ask on the way ...
    page.keyboard.press("ArrowLeft")  # ... to Allow, saved when the focus moves on
    with page.expect_response(lambda r: r.request.method == "PUT" and "git_status" in r.url):
        page.keyboard.press("Tab")
    expect(page.locator("#outcome")).to_contain_text("git_status: Allow. Saved")
    assert sent == ["deny", "allow"]  # nothing saved for the Ask passed on the way
    expect(_tool(page, "git_status").locator("input:checked")).to_have_attribute("value", "allow")
    expect(page.locator("#tools-count")).to_have_text(f"1 of {GIT_TOOLS} allowed")
    assert world.tools("git")["git_status"]["decision"] == "allow"

    # Allow all from the keyboard; Escape cancels and the focus comes back
    page.get_by_role("button", name="Allow all", exact=True).focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Allow every tool shown?")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()  # trapped in the dialog
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("button", name="Allow all", exact=True)).to_be_focused()
    expect(page.locator("#tools-count")).to_have_text(f"1 of {GIT_TOOLS} allowed")

    # a workspace typed and used with Enter
    page.get_by_label("Workspace path").focus()
    page.keyboard.type(str(world.other))
    page.keyboard.press("Enter")
    expect(page.get_by_label("Scope", exact=True)).to_have_value(str(world.other))
    expect(_tool(page, "git_status").locator(".tool-source")).to_have_text("Inherited: Set in the global defaults")


# --- languages and the small screen ---


def test_the_tools_tab_speaks_simplified_chinese(world: World, pages: OpenPage) -> None:
    world.grant("git", "git_reset", "deny")
    page = pages(world, "git", locale="zh-CN")
    expect(page.locator("#tab-tools")).to_have_text("工具")
    expect(page.locator("#tools-count")).to_have_text(f"已允许 0 / {GIT_TOOLS}")
    expect(_tool(page, "git_status").locator(".hint")).to_have_text(["只读", "幂等"])
    expect(page.get_by_role("button", name="全部允许", exact=True)).to_be_visible()
    _tool(page, "git_status").get_by_text("允许", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text("git_status：允许")
    expect(page.locator("#tools-count")).to_have_text(f"已允许 1 / {GIT_TOOLS}")
    axe_check(page)
    screenshot(page, "tools")
    _use_workspace(page, world.workspace)
    expect(_tool(page, "git_reset").locator(".tool-source")).to_have_text("已在全局默认中拒绝：工作区无法解除全局拒绝")
    axe_check(page)
    screenshot(page, "tools-workspace")
    page.get_by_role("button", name="全部允许", exact=True).click()
    expect(page.get_by_role("dialog", name="允许显示的所有工具？")).to_be_visible()
    axe_check(page)
    screenshot(page, "tools-allow-all")
    page.get_by_role("button", name="取消").click()


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_tools_tab_fits_a_390_px_screen(world: World, pages: OpenPage, locale: str) -> None:
    page = pages(world, "everything", locale=locale, width=390, height=844)
    expect(page.locator("#tools-list .tool")).to_have_count(EVERYTHING_TOOLS)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    axe_check(page)
    screenshot(page, "tools-mobile")
