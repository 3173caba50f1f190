"""The Add menu and the Add/Edit connector form in a real browser (static/add_menu.js,
static/connector_form.js, static/shlex.js) against a real ``patchbay serve``: each of the three
kinds added through the form (mcp-server-time over stdio, server-everything over Streamable
HTTP, the socket fixture) and checked through the REST API; the command-line preview; a secret
typed in the form stored as a credential and never shown; keyboard-only add and edit; an edit
that lost a revision race; the unsaved-changes guard; axe and screenshots in both languages; a
390 px screen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import axe_check, launched_browser, open_page, page_errors, page_server, screenshot
from tests.support.serve import Served
from tests.support.servers import everything_http, socket_server

pytestmark = pytest.mark.peers

OpenPage = Callable[..., Page]
SECRET = "pb-form-secret-4f1c9e2a7d"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched_browser() as launched:
        yield launched


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str, str]]:
    """One serve for the module, with server-everything and the socket server running beside it."""
    root = tmp_path_factory.mktemp("form")
    with everything_http() as everything_url, socket_server() as socket_path, page_server(root) as served:
        yield served, everything_url, socket_path


@pytest.fixture
def served(world: tuple[Served, str, str]) -> Served:
    return world[0]


@pytest.fixture
def pages(browser: Browser) -> Iterator[OpenPage]:
    """Open logged-in pages; closed after the test, which fails on any script or CSP error."""
    opened: list[Page] = []

    def open_(served: Served, **options: Any) -> Page:
        page = open_page(browser, served, **options)
        opened.append(page)
        return page

    yield open_
    errors = [error for page in opened for error in page_errors(page)]
    for page in opened:
        page.context.close()
    assert errors == []


def _api(served: Served, path: str) -> Any:
    response = served.session.get(f"{served.url}{path}", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _open_add(page: Page, kind: str) -> Any:
    page.locator("#add-connector").click()
    page.locator(f'#add-connector-menu [data-add-kind="{kind}"]').click()
    form = page.locator("#connector-form-dialog")
    expect(form).to_be_visible()
    return form


def _saved(page: Page, name: str) -> None:
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#detail-heading")).to_have_text(name)
    expect(page.locator("#outcome")).to_contain_text("Saved")
    expect(page).to_have_url(re.compile(r"/ui/connectors/[^/]+$"))


# --- adding each kind ---


def test_a_local_command_added_through_the_form_is_stored_as_typed(served: Served, pages: OpenPage) -> None:
    page = pages(served)
    form = _open_add(page, "local")
    expect(form).to_contain_text("runs as your user")
    expect(page.locator("#cf-name")).to_be_focused()
    page.locator("#cf-name").fill("time-form")
    page.locator("#cf-display").fill("Time (form)")
    page.locator("#cf-command").fill("mcp-server-time --local-timezone 'Europe/Paris'")
    expect(form.locator(".preview-words li")).to_have_text(
        ["mcp-server-time command", "--local-timezone argument 1", "Europe/Paris argument 2"]
    )
    page.locator("#cf-enabled").check()
    form.locator("summary").click()
    page.locator("#cf-description").fill("Clock for agents")
    page.locator("#cf-lifecycle").select_option("eager")
    page.locator("#cf-request-timeout").fill("45")
    page.locator("#cf-exclude").fill("convert_*")
    page.locator("#cf-env-add").click()
    env = page.locator("#cf-env-rows .env-row").last
    env.locator("[data-slot=name]").fill("TZ_HINT")
    env.locator("[data-slot=value]").fill("paris")
    axe_check(page)
    screenshot(page, "form-local")
    form.locator("#cf-save").click()
    _saved(page, "Time (form)")

    stored = _api(served, "/api/mcp/connectors/time-form")
    assert stored["target"] == {
        "transport": "stdio",
        "command": "mcp-server-time",
        "args": ["--local-timezone", "Europe/Paris"],
        "cwd": "",
    }
    assert stored["display_name"] == "Time (form)"
    assert stored["description"] == "Clock for agents"
    assert stored["settings"]["enabled"] is True
    assert stored["settings"]["exclude_tools"] == ["convert_*"]
    assert stored["runtime_options"]["lifecycle"] == "eager"
    assert stored["runtime_options"]["request_timeout"] == 45
    assert [(b["delivery"], b["name"], b["source"], b["plain"]) for b in stored["bindings"]] == [
        ("env", "TZ_HINT", "plain", "paris")
    ]
    probe = served.session.post(f"{served.url}/api/mcp/connectors/time-form/probe", timeout=120).json()
    assert probe["state"] == "ready", probe


def test_a_remote_url_with_a_bearer_secret_stores_a_credential_never_shown(
    world: tuple[Served, str, str], pages: OpenPage
) -> None:
    served, everything_url, _ = world
    page = pages(served)
    form = _open_add(page, "remote")
    expect(form).to_contain_text("receives what your agents send it")
    page.locator("#cf-name").fill("everything-form")
    page.locator("#cf-url").fill(everything_url)
    form.locator("summary").click()
    page.locator("#cf-transport").select_option("streamable_http")
    page.locator("#cf-auth").select_option("bearer")
    page.locator("#cf-secret").fill(SECRET)
    expect(page.locator("#cf-secret")).to_have_attribute("type", "password")
    axe_check(page)
    screenshot(page, "form-remote")
    form.locator("#cf-save").click()
    _saved(page, "everything-form")

    stored = _api(served, "/api/mcp/connectors/everything-form")
    assert stored["target"] == {"transport": "streamable_http", "url": everything_url}
    [binding] = stored["bindings"]
    assert (binding["delivery"], binding["source"], binding["owned"]) == ("bearer", "managed", True)
    assert binding["ref"]
    # the value is in the credential store, and no route nor the page gives it back
    listed = served.session.get(f"{served.url}/api/mcp/connectors", timeout=30).text
    detail = served.session.get(f"{served.url}/api/mcp/connectors/everything-form", timeout=30).text
    assert SECRET not in listed and SECRET not in detail
    page.locator("#edit-connector").click()
    expect(page.locator("#connector-form-dialog")).to_be_visible()
    page.locator("#cf-advanced summary").click()
    expect(page.locator("#cf-auth")).to_have_value("bearer")
    expect(page.locator("#cf-auth-configured")).to_be_visible()
    expect(page.locator("#cf-secret")).to_have_value("")
    assert SECRET not in page.content()
    page.keyboard.press("Escape")  # nothing changed: no question
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#edit-connector")).to_be_focused()


def test_a_unix_socket_added_through_the_form(world: tuple[Served, str, str], pages: OpenPage) -> None:
    served, _, socket_path = world
    page = pages(served, locale="zh-CN")
    form = _open_add(page, "socket")
    expect(form).to_contain_text("该程序以当前用户身份运行")
    page.locator("#cf-name").fill("sock-form")
    page.locator("#cf-socket").fill(socket_path)
    axe_check(page)
    screenshot(page, "form-socket")
    form.locator("#cf-save").click()
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#detail-heading")).to_have_text("sock-form")
    expect(page.locator("#outcome")).to_contain_text("已保存")
    stored = _api(served, "/api/mcp/connectors/sock-form")
    assert stored["target"] == {"transport": "socket", "path": socket_path}
    assert stored["settings"]["enabled"] is False
    probe = served.session.post(f"{served.url}/api/mcp/connectors/sock-form/probe", timeout=120).json()
    assert probe["state"] == "ready", probe
