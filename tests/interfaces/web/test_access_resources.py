"""The "Expose resources" switch in a real browser (static/access_resources.js on the Default agent access
tab, and the Add form's checkbox in static/connector_form.js) against a real ``patchbay serve``
with server-everything over stdio, a peer that has resources.

The switch is checked through the REST API (``resource_reads`` of ``GET .../tools``) and through
what a new session can read: ``patchbay resource read`` builds a fresh runtime from the projected
state and reads headless, so without an ``allow`` the include is refused (``approval_unavailable``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import OpenPage, axe_check, page_server, screenshot
from tests.support.serve import Served
from tests.support.servers import everything_stdio_command

pytestmark = pytest.mark.peers

TEMPLATE = "demo://resource/dynamic/text/{resourceId}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    """One serve with ``everything`` (asks by default) and ``sealed`` (a global resource Deny)."""
    root = tmp_path_factory.mktemp("resources")
    command = everything_stdio_command()
    target = {"transport": "stdio", "command": command[0], "args": command[1:]}
    with page_server(root) as served:
        for name in ("everything", "sealed"):
            created = served.session.post(
                f"{served.url}/api/mcp/connectors", json={"name": name, "target": target, "enabled": True}, timeout=60
            )
            assert created.status_code == 201, created.text
        denied = served.session.put(
            f"{served.url}/api/mcp/connectors/sealed/resources/grant", json={"decision": "deny"}, timeout=60
        )
        assert denied.status_code == 200, denied.text
        yield served, root


def _reads(served: Served, name: str) -> dict[str, Any]:
    response = served.session.get(f"{served.url}/api/mcp/connectors/{name}/tools", timeout=30)
    assert response.status_code == 200, response.text
    reads: dict[str, Any] = response.json()["resource_reads"]
    return reads


def _session_read(root: Path, name: str) -> dict[str, Any]:
    """What a new headless session reads: ``patchbay resource read NAME`` (resource 3) as JSON."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PATCHBAY_HOME", None)
    argv = ["patchbay", "--home", str(root / "home"), "resource", "read", name, TEMPLATE, "--var", "resourceId=3"]
    done = subprocess.run(
        [*argv, "--project", str(root / "ws"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _open_access(page: Page, served: Served, name: str) -> Any:
    page.goto(f"{served.url}/ui/connectors/{name}")
    expect(page.locator("#detail-body > [data-slot=name]")).to_have_text(name)
    page.locator("#tab-access").click()
    panel = page.locator("#panel-access")
    expect(panel).to_be_visible()
    return panel


def _grant_answer(page: Page, method: str) -> Any:
    return page.expect_response(lambda r: r.request.method == method and r.url.endswith("/resources/grant"))


def test_the_switch_grants_and_clears_what_a_new_session_can_read(world: tuple[Served, Path], pages: OpenPage) -> None:
    served, root = world
    page = pages(served)
    panel = _open_access(page, served, "everything")
    switch = panel.get_by_role("switch", name="Expose resources")
    state = panel.locator("[data-slot=resources-state]")
    expect(state).to_have_text("Now: each read asks, because the default decision is Ask or Custom.")
    expect(switch).not_to_be_checked()
    assert _session_read(root, "everything")["error"]["code"] == "approval_unavailable"

    with _grant_answer(page, "PUT") as answer:
        switch.click()
    assert answer.value.ok
    expect(page.locator("#outcome")).to_contain_text("The resources of everything are exposed")
    expect(state).to_have_text("Now: agents read its resources without asking.")
    expect(switch).to_be_checked()
    assert _reads(served, "everything") == {
        "decision": "allow",
        "source": "global_grant",
        "global_grant": "allow",
        "project_grant": None,
    }
    read = _session_read(root, "everything")
    assert read["uri"] == "demo://resource/dynamic/text/3", read
    assert read["contents"][0]["text"].startswith("Resource 3:")
    axe_check(page)
    screenshot(page, "detail-access-resources")

    with _grant_answer(page, "DELETE") as answer:
        switch.click()
    assert answer.value.ok
    expect(page.locator("#outcome")).to_contain_text("The resources of everything are no longer exposed")
    expect(switch).not_to_be_checked()
    assert _reads(served, "everything")["global_grant"] is None
    assert _session_read(root, "everything")["error"]["code"] == "approval_unavailable"


def test_a_global_deny_is_shown_and_cannot_be_switched(world: tuple[Served, Path], pages: OpenPage) -> None:
    served, _ = world
    page = pages(served, locale="zh-CN")
    panel = _open_access(page, served, "sealed")
    switch = panel.get_by_role("switch", name="公开资源")
    expect(switch).to_be_disabled()
    expect(switch).not_to_be_checked()
    expect(panel.locator("[data-slot=resources-state]")).to_contain_text("全局“拒绝”")
    assert _reads(served, "sealed")["global_grant"] == "deny"
    axe_check(page)
    screenshot(page, "detail-access-resources-denied")


def _add_with_resources(page: Page, name: str) -> None:
    page.locator("#add-connector").click()
    page.locator('#add-connector-menu [data-add-kind="local"]').click()
    form = page.locator("#connector-form-dialog")
    expect(form).to_be_visible()
    page.locator("#cf-name").fill(name)
    page.locator("#cf-command").fill(shlex.join(everything_stdio_command()))
    form.locator("summary").click()
    form.get_by_label("Expose resources").check()


def test_the_add_form_checkbox_leads_to_a_granted_connector(world: tuple[Served, Path], pages: OpenPage) -> None:
    served, _ = world
    page = pages(served)
    _add_with_resources(page, "everything-form")
    axe_check(page)
    with _grant_answer(page, "PUT") as answer:
        page.locator("#cf-save").click()
    assert answer.value.ok
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#outcome")).to_contain_text("everything-form was added and its resources are exposed")
    assert _reads(served, "everything-form")["global_grant"] == "allow"
    page.locator("#tab-access").click()
    expect(page.locator("#panel-access").get_by_role("switch", name="Expose resources")).to_be_checked()


def test_a_failed_grant_after_adding_says_so_and_the_connector_stays(
    world: tuple[Served, Path], pages: OpenPage
) -> None:
    served, _ = world
    page = pages(served)
    page.route("**/resources/grant", lambda route: route.abort())  # the second write gets no answer
    _add_with_resources(page, "everything-unreached")
    page.locator("#cf-save").click()
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#outcome")).to_contain_text(
        "everything-unreached was added, but exposing its resources failed"
    )
    expect(page.locator("#outcome")).to_contain_text("unreachable")
    assert _reads(served, "everything-unreached")["global_grant"] is None  # created, not granted
