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
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import OpenPage, axe_check, page_server, screenshot
from tests.support.serve import Served
from tests.support.servers import everything_http, socket_server

pytestmark = pytest.mark.peers

SECRET = "pb-form-secret-4f1c9e2a7d"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str, str]]:
    """One serve for the module, with server-everything and the socket server running beside it."""
    root = tmp_path_factory.mktemp("form")
    with everything_http() as everything_url, socket_server() as socket_path, page_server(root) as served:
        yield served, everything_url, socket_path


@pytest.fixture
def served(world: tuple[Served, str, str]) -> Served:
    return world[0]


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
    page.locator("#cf-terms").fill("https://example.com/terms")
    page.locator("#cf-privacy").fill("https://example.com/privacy")
    page.locator("#cf-auth").select_option("bearer")
    page.locator("#cf-secret").fill(SECRET)
    expect(page.locator("#cf-secret")).to_have_attribute("type", "password")
    axe_check(page)
    screenshot(page, "form-remote")
    form.locator("#cf-save").click()
    _saved(page, "everything-form")

    stored = _api(served, "/api/mcp/connectors/everything-form")
    assert stored["target"] == {"transport": "streamable_http", "url": everything_url}
    assert (stored["terms_url"], stored["privacy_url"]) == ("https://example.com/terms", "https://example.com/privacy")
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
    expect(form).to_contain_text("Patchbay 不会为套接字启动任何程序")
    expect(form.locator(".notice.trust", has_text="该程序以当前用户身份运行")).to_be_hidden()  # Patchbay runs none
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


# --- the command line ---


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("uvx mcp-server-git --repository .", ["uvx", "mcp-server-git", "--repository", "."]),
        (
            """node 'my server.js' "a \\"quoted\\" word" plain\\ space""",
            ["node", "my server.js", 'a "quoted" word', "plain space"],
        ),
        ("""cmd "keep \\n backslash" '' x""", ["cmd", "keep \\n backslash", "", "x"]),
        ("  spaced   out\t", ["spaced", "out"]),
    ],
)
def test_the_preview_splits_the_command_line_by_posix_shell_rules(
    served: Served, pages: OpenPage, line: str, words: list[str]
) -> None:

    assert shlex.split(line) == words  # the cases are Python's shlex.split, which the preview mirrors
    page = pages(served)
    _open_add(page, "local")
    page.locator("#cf-command").fill(line)
    expect(page.locator("#cf-preview code")).to_have_text(words)


def test_an_unclosed_quote_is_an_error_in_the_preview_and_nothing_is_sent(served: Served, pages: OpenPage) -> None:
    page = pages(served)
    form = _open_add(page, "local")
    page.locator("#cf-name").fill("broken")
    page.locator("#cf-command").fill('mcp-server-time "unclosed')
    expect(form.locator("#cf-preview [data-slot=error]")).to_have_text("The quote at character 17 is never closed.")
    form.locator("#cf-save").click()
    expect(page.locator("#cf-command-error")).to_have_text("The quote at character 17 is never closed.")
    expect(page.locator("#cf-command")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#cf-command")).to_be_focused()
    page.locator("#cf-command").fill("mcp-server-time \\")
    expect(form.locator("#cf-preview [data-slot=error]")).to_have_text("The backslash at the end escapes nothing.")
    assert served.session.get(f"{served.url}/api/mcp/connectors/broken", timeout=30).status_code == 404


def test_an_api_field_error_is_shown_at_its_field_with_the_values_kept(served: Served, pages: OpenPage) -> None:
    page = pages(served)
    form = _open_add(page, "local")
    page.locator("#cf-name").fill("Bad Name")
    page.locator("#cf-command").fill("mcp-server-time")
    form.locator("#cf-save").click()
    error = page.locator("#cf-name-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("validation_error")
    expect(page.locator("#cf-name")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#cf-name")).to_have_value("Bad Name")
    expect(page.locator("#cf-command")).to_have_value("mcp-server-time")
    # the server checks the command again: one starting with "-" is refused at the command field
    page.locator("#cf-name").fill("dash")
    page.locator("#cf-command").fill("-rf x")
    form.locator("#cf-save").click()
    expect(page.locator("#cf-command-error")).to_contain_text("validation_error")
    expect(page.locator("#cf-name-error")).to_be_hidden()
    axe_check(page)
    page.locator("#cf-cancel").click()
    page.locator("#discard-confirm").click()
    expect(form).to_be_hidden()


# --- the unsaved-changes guard ---


def test_closing_a_changed_form_asks_first_and_keeps_it_on_keep_editing(served: Served, pages: OpenPage) -> None:
    page = pages(served)
    form = _open_add(page, "remote")
    page.locator("#cf-name").fill("half-typed")
    page.keyboard.press("Escape")
    discard = page.locator("#discard-dialog")
    expect(discard).to_be_visible()
    axe_check(page)
    screenshot(page, "form-discard")
    page.keyboard.press("Escape")  # Escape in the question keeps editing
    expect(discard).to_be_hidden()
    expect(form).to_be_visible()
    expect(page.locator("#cf-name")).to_have_value("half-typed")
    page.locator("#cf-cancel").click()
    expect(discard).to_be_visible()
    page.get_by_role("button", name="Keep editing").click()
    expect(form).to_be_visible()

    # leaving the page asks the browser's own question
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.type), dialog.dismiss()))
    page.close(run_before_unload=True)
    expect(form).to_be_visible()
    assert asked == ["beforeunload"]

    page.locator("#cf-cancel").click()
    page.locator("#discard-confirm").click()
    expect(form).to_be_hidden()
    expect(page.locator("#add-connector")).to_be_focused()
    # reopened, the form is empty again; nothing typed was kept in the browser's storage
    _open_add(page, "remote")
    expect(page.locator("#cf-name")).to_have_value("")
    assert page.evaluate("() => localStorage.length + sessionStorage.length") == 0


# --- keyboard only, editing, a lost race ---


def _tab_to(page: Page, selector: str, *, limit: int = 60, key: str = "Tab") -> None:
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{selector} never got the focus with {key}")


def test_adding_and_editing_with_the_keyboard_alone(served: Served, pages: OpenPage) -> None:
    page = pages(served)
    _tab_to(page, "#add-connector")
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("menuitem", name="Remote URL")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("menuitem", name="Local command")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#connector-form-dialog")).to_be_visible()
    expect(page.locator("#cf-name")).to_be_focused()
    page.keyboard.type("keys")
    _tab_to(page, "#cf-command")
    page.keyboard.type("mcp-server-time")
    page.keyboard.press("Enter")  # Enter in a field submits the form
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#detail-heading")).to_have_text("keys")
    expect(page.locator("#detail-heading")).to_be_focused()
    assert _api(served, "/api/mcp/connectors/keys")["target"]["command"] == "mcp-server-time"

    _tab_to(page, "#edit-connector")
    page.keyboard.press("Enter")
    expect(page.locator("#connector-form-dialog")).to_be_visible()
    expect(page.locator("#cf-display")).to_be_focused()
    expect(page.locator("#cf-name")).to_have_attribute("readonly", "")
    expect(page.locator("#cf-command")).to_have_value("mcp-server-time")
    page.keyboard.press("Control+a")
    page.keyboard.type("Keyboard clock")
    _tab_to(page, "#cf-advanced summary")
    page.keyboard.press("Enter")
    _tab_to(page, "#cf-description")
    page.keyboard.type("typed without a mouse")
    _tab_to(page, "#cf-save")
    page.keyboard.press("Enter")
    expect(page.locator("#connector-form-dialog")).to_be_hidden()
    expect(page.locator("#detail-heading")).to_have_text("Keyboard clock")
    expect(page.locator("#outcome")).to_contain_text("Keyboard clock was changed")
    stored = _api(served, "/api/mcp/connectors/keys")
    assert (stored["display_name"], stored["description"]) == ("Keyboard clock", "typed without a mouse")
    assert stored["revision"] > 1


def test_an_edit_that_lost_a_revision_race_reloads_and_overwrites_nothing(served: Served, pages: OpenPage) -> None:
    created = served.session.post(
        f"{served.url}/api/mcp/connectors",
        json={"name": "raced", "target": {"transport": "stdio", "command": "mcp-server-time"}},
        timeout=60,
    )
    assert created.status_code == 201, created.text
    first = pages(served)
    first.goto(f"{served.url}/ui/connectors/raced")
    first.locator("#edit-connector").click()
    expect(first.locator("#cf-display")).to_have_value("raced")
    # a second page changes it meanwhile
    second = pages(served)
    second.goto(f"{served.url}/ui/connectors/raced")
    second.locator("#edit-connector").click()
    second.locator("#cf-display").fill("Second tab")
    second.locator("#cf-save").click()
    expect(second.locator("#detail-heading")).to_have_text("Second tab")

    first.locator("#cf-display").fill("First tab")
    first.locator("#cf-save").click()
    expect(first.locator("#connector-form-dialog")).to_be_hidden()
    expect(first.locator("#outcome")).to_contain_text("Someone else changed this connector")
    expect(first.locator("#detail-heading")).to_have_text("Second tab")  # reloaded
    assert _api(served, "/api/mcp/connectors/raced")["display_name"] == "Second tab"


# --- both languages, a small screen ---


@pytest.mark.parametrize("kind", ["local", "remote"])
def test_the_forms_in_simplified_chinese_pass_axe(served: Served, pages: OpenPage, kind: str) -> None:
    page = pages(served, locale="zh-CN")
    page.locator("#add-connector").click()
    expect(page.locator("#add-connector-menu")).to_contain_text("导入现有配置")
    axe_check(page)
    screenshot(page, "add-menu")
    page.locator(f'#add-connector-menu [data-add-kind="{kind}"]').click()
    form = page.locator("#connector-form-dialog")
    expect(form).to_contain_text("添加本地命令" if kind == "local" else "添加远程连接器")
    form.locator("summary").click()
    if kind == "local":
        page.locator("#cf-command").fill("mcp-server-time --x 'a b'")
        expect(form.locator(".preview-words li").last).to_have_text("a b 参数 2")
        page.locator("#cf-env-add").click()
    else:
        page.locator("#cf-auth").select_option("header")
    axe_check(page)
    screenshot(page, f"form-{kind}")


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_form_fits_a_390_px_screen(world: tuple[Served, str, str], pages: OpenPage, locale: str) -> None:
    served, everything_url, _ = world
    page = pages(served, locale=locale, width=390, height=844)
    page.locator("#add-connector").click()
    page.locator('#add-connector-menu [data-add-kind="remote"]').click()
    form = page.locator("#connector-form-dialog")
    expect(form).to_be_visible()
    form.locator("summary").click()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    box = form.bounding_box()
    assert box is not None and box["width"] <= 390
    axe_check(page)
    screenshot(page, "form-mobile")
    name = f"narrow-{locale.lower()}"
    page.locator("#cf-name").fill(name)
    page.locator("#cf-url").fill(everything_url)
    page.locator("#cf-allow-private").check()  # Auto (detect) connects now, to a loopback address
    page.locator("#cf-save").click()
    expect(form).to_be_hidden()
    expect(page.locator("#connectors-page")).to_have_attribute("data-view", "detail")
    expect(page.locator("#detail-heading")).to_have_text(name)


# --- transport "Auto (detect)" ---


def test_auto_detects_sse_and_the_detail_shows_it_and_edit_offers_no_auto(served: Served, pages: OpenPage) -> None:
    page = pages(served)
    with everything_http("sse") as sse_url:
        form = _open_add(page, "remote")
        form.locator("summary").click()
        expect(page.locator("#cf-transport")).to_have_value("auto")
        expect(page.get_by_label("Transport", exact=True).locator("option").first).to_have_text("Auto (detect)")
        page.locator("#cf-name").fill("legacy-auto")
        page.locator("#cf-url").fill(sse_url)
        allow = page.get_by_label("Allow private network addresses")
        expect(allow).not_to_be_checked()
        allow.check()
        axe_check(page)
        screenshot(page, "form-remote-auto")
        with page.expect_response(
            lambda r: r.request.method == "POST" and r.url.endswith("/api/mcp/connectors")
        ) as created:
            form.locator("#cf-save").click()
        assert created.value.status == 201, created.value.text()
        _saved(page, "legacy-auto")
    expect(page.locator("#outcome")).to_contain_text("Transport detected: Remote URL (SSE, legacy)")
    expect(page.locator('#panel-overview dd[data-slot="kind"]')).to_have_text("Remote URL (SSE, legacy)")
    stored = _api(served, "/api/mcp/connectors/legacy-auto")
    assert stored["target"] == {"transport": "sse", "url": sse_url}
    assert stored["runtime_options"]["allow_private"] is True

    page.locator("#edit-connector").click()
    expect(page.locator("#connector-form-dialog")).to_be_visible()
    expect(page.locator("#cf-transport")).to_have_value("sse")
    assert page.locator("#cf-transport option").evaluate_all("(options) => options.map((o) => o.value)") == [
        "streamable_http",
        "sse",
    ]
    expect(page.locator("#cf-allow-private")).to_be_checked()
    page.locator("#cf-cancel").click()
    expect(page.locator("#connector-form-dialog")).to_be_hidden()

    form = _open_add(page, "remote")  # Add offers Auto again, first and chosen
    expect(page.locator("#cf-transport")).to_have_value("auto")
    page.locator("#cf-cancel").click()


def test_auto_with_nothing_listening_shows_the_error_at_the_url_and_stores_nothing(
    served: Served, pages: OpenPage
) -> None:
    from tests.support.servers import free_port

    page = pages(served)
    form = _open_add(page, "remote")
    form.locator("summary").click()
    page.locator("#cf-name").fill("nowhere-auto")
    page.locator("#cf-url").fill(f"http://127.0.0.1:{free_port()}/mcp")
    page.locator("#cf-allow-private").check()
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/api/mcp/connectors")) as sent:
        form.locator("#cf-save").click()
    assert sent.value.status == 502
    expect(page.locator("#cf-url-error")).to_contain_text("server_closed")
    expect(page.locator("#cf-url")).to_have_attribute("aria-invalid", "true")
    expect(form).to_be_visible()
    names = [c["name"] for c in _api(served, "/api/mcp/connectors")["connectors"]]
    assert "nowhere-auto" not in names
