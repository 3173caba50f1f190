"""The settings page in a real browser: Debian's chromium driven by Playwright (the sync API),
headless, against a real ``patchbay serve``; axe-core checks and screenshots.

Usage (one browser per test module, one context and page per test)::

    @pytest.fixture(scope="module")
    def browser() -> Iterator[Browser]:
        with launched_browser() as launched:
            yield launched

    def test_x(browser, tmp_path):
        with page_server(tmp_path) as served:
            page = open_page(browser, served, locale="zh-CN")   # logged in, on /ui
            axe_check(page)
            screenshot(page, "connectors")   # test-output/screenshots/zh-Hans/connectors.png

Playwright never downloads a browser here: ``/usr/bin/chromium`` (``apt-get install chromium``,
which scripts/test does) is launched through ``executable_path``. axe-core comes from npm
(``node_modules/axe-core``) and is injected with ``page.evaluate``, which the page's CSP does not
govern.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.paths import REPO
from tests.support.serve import Served, serve_process

CHROMIUM = Path("/usr/bin/chromium")
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
OpenPage = Callable[..., Page]
"""What the browser tests' ``pages`` fixture gives: open a logged-in page (see its arguments)."""

SCREENSHOTS = REPO / "test-output" / "screenshots"
"""Where :func:`screenshot` saves, one folder per page language (not committed)."""


def require_browser() -> None:
    """Fail (in CI) or skip (elsewhere) when chromium or axe-core is missing."""
    missing = [str(path) for path in (CHROMIUM, AXE) if not path.exists()]
    if not missing:
        return
    message = f"browser tests need {', '.join(missing)}: run scripts/test (apt-get install chromium; npm ci)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextlib.contextmanager
def launched_browser() -> Iterator[Browser]:
    """Headless chromium for the block; closed after it."""
    require_browser()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def page_server(root: Path, *args: str) -> Iterator[Served]:
    """``patchbay serve`` on a fresh data home ``root/home``, serving workspace ``root/ws`` (the
    venv's console scripts on PATH) until the block ends."""
    home, workspace = root / "home", root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PATCHBAY_HOME", None)
    with serve_process(home, workspace, *args, env=env) as served:
        yield served


def open_page(browser: Browser, served: Served, *, locale: str = "en-US", width: int = 1280, height: int = 900) -> Page:
    """A new context (its own cookies) and page that opened the login URL ``serve`` printed, as a
    person does: it lands on ``/ui``. ``locale`` is what the browser asks for (Accept-Language)."""
    context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
    context.set_default_timeout(30_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # an API answer of 4xx/5xx is logged as "Failed to load resource": the page shows it, no bug;
    # anything else the console reports as an error (a CSP refusal, a script error) is one
    page.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.errors = errors  # type: ignore[attr-defined]
    page.goto(served.info["login_url"])
    assert page.url == f"{served.url}/ui", page.url
    return page


def page_errors(page: Page) -> list[str]:
    """Script errors and console errors the page reported (CSP violations are console errors;
    failed API answers are not counted)."""
    errors: list[str] = page.errors  # type: ignore[attr-defined]
    return errors


def axe_check(page: Page) -> None:
    """Run axe-core on the page as it is now; fail on any serious or critical violation."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    results: dict[str, Any] = page.evaluate(
        "async () => await window.axe.run(document, { resultTypes: ['violations'] })"
    )
    serious = [v for v in results["violations"] if v["impact"] in ("serious", "critical")]
    report = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[node['target'] for node in v['nodes']][:5]}" for v in serious
    ]
    assert report == [], "\n".join(report)


def screenshot(page: Page, name: str) -> Path:
    """Save the whole page as ``test-output/screenshots/<html lang>/<name>.png``."""
    lang = page.evaluate("() => document.documentElement.lang") or "unknown"
    path = SCREENSHOTS / lang / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path
