"""The Import dialog in a real browser (static/import.js) against a real ``patchbay serve`` whose
user home is the test's own (``HOME``), so the files it finds are the test's.

A pasted snippet (two entries and a name that exists already): the preview shows sources, the
conflict and the secret only as configured; only the selected entry is imported, its secret a
credential reference; JSONC; a parse error keeps the text and shows the code; discovered files;
keyboard only; both languages (axe, screenshots); a 390 px screen.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import OpenPage, axe_check, screenshot
from tests.support.serve import Served, serve_process

SECRET = "pbweb-import-secret-5e2f9a"
CURSOR_SECRET = "pbweb-import-cursor-81c3d7"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One serve for the module: a connector ``time`` (so a pasted ``time`` conflicts), a
    workspace ``.mcp.json`` and a Cursor file in the serving user's (fake) home."""
    root = tmp_path_factory.mktemp("import")
    home, workspace, user_home = root / "home", root / "ws", root / "userhome"
    workspace.mkdir()
    (user_home / ".cursor").mkdir(parents=True)
    (workspace / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"project-clock": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}}}
        )
    )
    (user_home / ".cursor" / "mcp.json").write_text(
        '// Cursor\n{"mcpServers": {"cursor-docs": {"url": "https://docs.example.com/mcp",'
        f' "headers": {{"X-Api-Key": "{CURSOR_SECRET}"}}}}}},}}\n'
    )
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "HOME": str(user_home), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PATCHBAY_HOME", None)
    with serve_process(home, workspace, env=env) as served:
        created = served.session.post(
            f"{served.url}/api/mcp/connectors",
            json={"name": "time", "target": {"transport": "stdio", "command": "mcp-server-time"}},
            timeout=60,
        )
        assert created.status_code == 201, created.text
        yield served


def open_import(page: Page, *, keyboard: bool = False) -> None:
    """Open the Import dialog through the Add menu's "Import existing config" entry, by mouse or
    (from the focused Add button) by keyboard."""
    if keyboard:
        expect(page.locator("#add-connector")).to_be_focused()
        page.keyboard.press("Enter")  # opens the menu on its first entry
        page.keyboard.press("End")
        expect(page.locator("#add-connector-menu [data-add-kind=import]")).to_be_focused()
        page.keyboard.press("Enter")
    else:
        page.locator("#add-connector").click()
        page.locator("#add-connector-menu [data-add-kind=import]").click()
    expect(page.locator("#import-dialog")).to_be_visible()


def _get(served: Served, path: str) -> Any:
    response = served.session.get(f"{served.url}{path}", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _entry(page: Page, name: str) -> Any:
    return page.locator(f'#import-review .import-entry[data-name="{name}"]')


def _names(served: Served) -> list[str]:
    return sorted(c["name"] for c in _get(served, "/api/mcp/connectors")["connectors"])


SNIPPET = (
    '{"mcpServers": {\n'
    f'  "clock": {{"command": "mcp-server-time", "env": {{"API_TOKEN": "{SECRET}"}}}},\n'
    '  "far": {"url": "https://mcp.example.com/mcp"},\n'
    '  "time": {"command": "mcp-server-time"}\n'
    "}}\n"
)


def test_a_pasted_snippet_is_previewed_and_only_the_selected_entry_is_imported(world: Served, pages: OpenPage) -> None:
    before = _names(world)
    page = pages(world)
    expect(page.locator("#list-summary")).to_be_visible()
    open_import(page)
    page.get_by_label("An mcpServers snippet (JSON or JSONC)").fill(SNIPPET)
    page.get_by_role("button", name="Preview", exact=True).click()
    review = page.locator("#import-review")
    expect(review.locator(".import-entry")).to_have_count(3)
    clock, far, time = _entry(page, "clock"), _entry(page, "far"), _entry(page, "time")
    expect(clock.locator(".import-entry-source")).to_have_text("From the pasted text")
    expect(clock.locator(".import-entry-kind")).to_have_text("Local command")
    expect(far.locator(".import-entry-kind")).to_have_text("Remote URL (Streamable HTTP)")
    expect(clock.locator(".import-facts")).to_contain_text(
        "env.API_TOKEN: configured (stored as a credential; the value is never shown)"
    )
    expect(time.locator(".import-facts")).to_contain_text(
        "A connector named time already exists, with the same target."
    )
    expect(time.locator("input[type=checkbox]")).to_be_disabled()
    expect(time.locator(".import-tag")).to_have_text("Cannot be imported")
    expect(clock.locator("input[type=checkbox]")).to_be_checked()  # the safe ones are selected
    expect(far.locator("input[type=checkbox]")).to_be_checked()
    assert SECRET not in review.inner_text() and SECRET not in (review.locator("pre").first.text_content() or "")
    expect(review.locator("[data-slot=summary]")).to_have_text("3 entries found, 2 selected")
    axe_check(page)
    screenshot(page, "import-preview")

    far.get_by_role("checkbox").uncheck()
    commit = page.get_by_role("button", name="Import selected (1)")
    commit.click()
    result = page.locator("#import-result")
    expect(result.locator("h3")).to_have_text("Imported 1 connector(s)")
    expect(result.locator("[data-slot=outcome]")).to_have_text("Saved")
    expect(result.locator("[data-slot=imported] li")).to_have_text(["clock"])
    expect(result.locator("[data-slot=skipped] li")).to_have_text(["far: not selected", "time: cannot be imported"])
    axe_check(page)
    screenshot(page, "import-result")

    assert _names(world) == sorted([*before, "clock"])  # exactly the selected one
    detail = world.session.get(f"{world.url}/api/mcp/connectors/clock", timeout=30)
    assert SECRET not in detail.text
    clock_api = detail.json()
    assert clock_api["source"] == "imported" and clock_api["settings"]["enabled"] is False
    assert [(b["name"], b["source"], b["delivery"]) for b in clock_api["bindings"]] == [("API_TOKEN", "managed", "env")]

    page.get_by_role("button", name="Close", exact=True).click()
    expect(page.locator("#import-dialog")).to_be_hidden()
    expect(page.locator("#add-connector")).to_be_focused()  # back on the opener
    expect(page.locator('.filters [data-filter="imported"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#groups .row-name", has_text=re.compile("^clock$"))).to_have_count(1)
    expect(page.locator("#groups .row-name", has_text=re.compile("^time$"))).to_have_count(0)  # not imported
    expect(page.locator("#outcome")).to_contain_text("Imported 1 connector(s). Saved")
    assert page.evaluate("() => window.localStorage.length + window.sessionStorage.length") == 0
    open_import(page)  # the text left the page with the dialog
    expect(page.locator("#import-text")).to_have_value("")


def test_a_jsonc_snippet_with_comments_and_a_trailing_comma_previews(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    open_import(page)
    page.locator("#import-text").fill(
        '// from a README\n{\n  "mcpServers": {\n    /* a clock */\n    "jsonc-clock": {"command": "mcp-server-time",},\n  },\n}\n'
    )
    page.get_by_role("button", name="Preview", exact=True).click()
    expect(page.locator("#import-review .import-entry")).to_have_count(1)
    expect(_entry(page, "jsonc-clock").locator(".import-tag")).to_have_text("Ready to import")
    expect(page.locator("#import-parse-error")).to_be_hidden()


def test_a_parse_error_keeps_the_text_and_shows_the_code_and_position(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    open_import(page)
    broken = '{"mcpServers": {\n  "a": {"command": "x"}\n  "b": {}\n}}'
    area = page.locator("#import-text")
    area.fill(broken)
    page.get_by_role("button", name="Preview", exact=True).click()
    error = page.locator("#import-parse-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("The text is not valid JSON or JSONC: line 3, column 3.")
    expect(error).to_contain_text("Error code: invalid_config")
    expect(area).to_have_value(broken)
    expect(area).to_be_focused()
    assert page.evaluate("() => document.getElementById('import-text').selectionStart") == broken.index('"b"')
    expect(page.locator("#import-review")).to_be_hidden()
    expect(page.locator("#import-commit")).to_be_hidden()
    axe_check(page)
    screenshot(page, "import-parse-error")


def test_discovered_files_are_picked_previewed_and_imported(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    open_import(page)
    page.get_by_label("Config files on this machine").check()
    found = page.locator("#import-files-found")
    expect(found.locator("li")).to_have_count(2)  # the workspace file and Cursor's, nothing absent
    expect(found.locator(".import-file-label")).to_have_text(["Project file", "Cursor"])
    page.get_by_role("button", name="Preview", exact=True).click()
    expect(page.locator("#import-failure")).to_contain_text("Pick at least one file.")
    found.get_by_role("checkbox", name="Cursor").check()
    page.get_by_role("button", name="Preview", exact=True).click()
    docs = _entry(page, "cursor-docs")
    expect(page.locator("#import-review .import-entry")).to_have_count(1)
    expect(docs.locator(".import-entry-source")).to_have_text("From Cursor (precedence 1)")
    expect(docs.locator(".import-facts")).to_contain_text("headers.X-Api-Key: configured")
    assert CURSOR_SECRET not in page.locator("#import-dialog").inner_text()
    axe_check(page)
    screenshot(page, "import-files")
    page.get_by_role("button", name="Import selected (1)").click()
    expect(page.locator("#import-result [data-slot=imported] li")).to_have_text(["cursor-docs"])
    imported = world.session.get(f"{world.url}/api/mcp/connectors/cursor-docs", timeout=30)
    assert CURSOR_SECRET not in imported.text
    assert [(b["name"], b["source"]) for b in imported.json()["bindings"]] == [("X-Api-Key", "managed")]


def test_the_dialog_works_with_the_keyboard_only(world: Served, pages: OpenPage) -> None:
    page = pages(world)
    page.locator("#add-connector").focus()
    open_import(page, keyboard=True)
    expect(page.get_by_label("Paste a snippet")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#import-text")).to_be_focused()
    page.keyboard.insert_text('{"keyboard-clock": {"command": "mcp-server-time"}}')
    page.keyboard.press("Tab")
    expect(page.locator("#import-preview")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#import-review-title")).to_be_focused()
    page.keyboard.press("Tab")
    checkbox = _entry(page, "keyboard-clock").get_by_role("checkbox")
    expect(checkbox).to_be_focused()
    page.keyboard.press("Space")  # unselect, then select again
    expect(checkbox).not_to_be_checked()
    page.keyboard.press("Space")
    expect(checkbox).to_be_checked()
    for _ in range(8):
        if page.evaluate("() => document.activeElement.id") == "import-commit":
            break
        page.keyboard.press("Tab")
    expect(page.locator("#import-commit")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#import-result-title")).to_be_focused()
    expect(page.locator("#import-result [data-slot=imported] li")).to_have_text(["keyboard-clock"])
    page.keyboard.press("Escape")
    expect(page.locator("#import-dialog")).to_be_hidden()
    expect(page.locator("#add-connector")).to_be_focused()
    assert "keyboard-clock" in _names(world)


@pytest.mark.parametrize("width", [1280, 390])
def test_chinese_and_a_narrow_screen(world: Served, pages: OpenPage, width: int) -> None:
    page = pages(world, locale="zh-CN", width=width, height=844)
    open_import(page)
    expect(page.locator("#import-title")).to_have_text("导入现有配置")
    page.locator("#import-text").fill(
        SNIPPET.replace('"clock"', f'"zh{width}-clock"').replace('"far"', f'"zh{width}-far"')
    )
    page.get_by_role("button", name="预览", exact=True).click()
    expect(page.locator("#import-review .import-entry")).to_have_count(3)
    expect(_entry(page, "time").locator(".import-tag")).to_have_text("无法导入")
    expect(page.locator("#import-review [data-slot=summary]")).to_have_text("找到 3 项，已选择 2 项")
    box = page.locator("#import-dialog").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    assert page.evaluate("() => document.getElementById('import-dialog').scrollWidth") <= min(width, box["width"]) + 1
    suffix = "-mobile" if width == 390 else ""
    axe_check(page)
    screenshot(page, f"import-preview{suffix}")
    if width == 390:
        return
    page.get_by_role("button", name=re.compile(r"^导入所选项")).click()
    expect(page.locator("#import-result h3")).to_have_text("已导入 2 个连接器")
    axe_check(page)
    screenshot(page, "import-result")


# --- renaming an entry that conflicts ---

CONFLICTING = '{"mcpServers": {"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}}}'


def _preview_answer(page: Page) -> Any:
    return page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/api/mcp/import/preview"))


def test_a_conflicting_entry_is_imported_under_a_new_name_beside_the_existing_one(
    world: Served, pages: OpenPage
) -> None:
    page = pages(world)
    open_import(page)
    page.locator("#import-text").fill(CONFLICTING)
    page.get_by_role("button", name="Preview", exact=True).click()
    time = _entry(page, "time")
    expect(time.locator(".import-tag")).to_have_text("Cannot be imported")
    field = time.get_by_label("Rename to")
    taken = set(_names(world))
    suggested = next(f"time-{n}" for n in range(2, 100) if f"time-{n}" not in taken)
    expect(field).to_have_value(suggested)  # a free name, prefilled

    # the server validates the name: a bad one is shown at the field, the preview stays
    field.fill("Time Two!")
    with _preview_answer(page) as answer:
        time.get_by_role("button", name="Use this name").click()
    assert answer.value.status == 422
    error = time.locator("[data-slot=rename-error]")
    expect(error).to_contain_text("rename: time=Time Two!")
    expect(error).to_contain_text("(error code: validation_error)")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    expect(time.locator("input[type=checkbox]")).to_be_disabled()

    # a name that is taken too is still a conflict
    field.fill("time")
    with _preview_answer(page) as answer:
        field.press("Enter")
    assert answer.value.ok
    assert json.loads(answer.value.request.post_data or "{}")["renames"] == {"time": "time"}
    expect(_entry(page, "time").locator(".import-facts")).to_contain_text("A connector named time already exists")

    field = _entry(page, "time").get_by_label("Rename to")
    field.fill(suggested)
    with _preview_answer(page) as answer:
        _entry(page, "time").get_by_role("button", name="Use this name").click()
    assert answer.value.ok
    time = _entry(page, "time")
    expect(time.locator(".import-entry-name")).to_have_text(f"time (as {suggested})")
    expect(time.locator(".import-tag")).not_to_have_text("Cannot be imported")
    expect(time.locator("input[type=checkbox]")).to_be_enabled()
    expect(time.locator(".import-facts")).not_to_contain_text("already exists")
    expect(page.locator("#announcer")).to_contain_text(f"time will be imported as {suggested}")
    time.locator("input[type=checkbox]").check()
    # a name typed but not applied is not imported silently
    field = time.get_by_label("Rename to")
    field.fill(f"{suggested}-typed")
    page.get_by_role("button", name="Import selected (1)").click()
    expect(time.locator("[data-slot=rename-error]")).to_have_text(
        "Use this name first, or put back the name in use, before importing."
    )
    expect(field).to_be_focused()
    field.fill(suggested)
    expect(time.locator("[data-slot=rename-error]")).to_be_hidden()
    axe_check(page)
    screenshot(page, "import-rename")

    with page.expect_response(lambda r: r.url.endswith("/api/mcp/import/commit")) as committed:
        page.get_by_role("button", name="Import selected (1)").click()
    assert committed.value.ok
    assert json.loads(committed.value.request.post_data or "{}")["renames"] == {"time": suggested}
    expect(page.locator("#import-result [data-slot=imported] li")).to_have_text([suggested])
    names = _names(world)
    assert "time" in names and suggested in names  # both exist
    renamed = _get(world, f"/api/mcp/connectors/{suggested}")
    assert renamed["target"]["args"] == ["--local-timezone", "UTC"]
    assert _get(world, "/api/mcp/connectors/time")["target"]["args"] == []


def test_the_rename_field_in_chinese(world: Served, pages: OpenPage) -> None:
    page = pages(world, locale="zh-CN")
    open_import(page)
    page.locator("#import-text").fill(CONFLICTING)
    page.get_by_role("button", name="预览", exact=True).click()
    time = _entry(page, "time")
    field = time.get_by_label("重命名为")
    expect(field).to_be_visible()
    field.fill("Bad Name")
    with _preview_answer(page) as answer:
        time.get_by_role("button", name="使用此名称").click()
    assert answer.value.status == 422
    expect(time.locator("[data-slot=rename-error]")).to_contain_text("错误代码：validation_error")
    axe_check(page)
    screenshot(page, "import-rename")
