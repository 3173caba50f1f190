"""Fixtures for the settings page's tests: the app in process (its lifespan running) and a client
that logged in like a browser (the session cookie, no bearer token); for the browser tests, one
headless chromium per module and ``pages``, which opens logged-in pages and fails the test on any
script or CSP error they reported."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, Page

from patchbay.adapters.api_token import api_token
from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app
from tests.support.api import Api, auth_headers
from tests.support.browser import OpenPage, launched_browser, open_page, page_errors
from tests.support.serve import Served


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    """The app on a fresh data home; ``api.client`` sends the bearer token."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    app = create_app(Settings(home=home), workspace=workspace)
    transport = httpx2.ASGITransport(app=app)
    async with app.router.lifespan_context(app):
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://127.0.0.1:8765", headers=auth_headers(home)
        ) as client:
            yield Api(client=client, app=app, home=home, workspace=workspace)
    app.state.context.close()


@pytest.fixture
async def cookie_client(api: Api) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the same app that logged in through the login URL: it has the session cookie
    only, as a browser does."""
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        login = await client.get(f"/login?token={api_token(api.home)}")
        assert login.status_code == 303 and login.headers["location"] == "/ui"
        yield client


@pytest.fixture
async def anonymous(api: Api) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of the same app that sends no credentials."""
    transport = httpx2.ASGITransport(app=api.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        yield client


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless chromium, one per test module."""
    with launched_browser() as launched:
        yield launched


@pytest.fixture
def pages(browser: Browser) -> Iterator[OpenPage]:
    """``pages(served, locale=..., width=..., height=...)`` opens a logged-in page in its own
    context (:func:`tests.support.browser.open_page`); all are closed after the test, which fails
    on any script or CSP error they reported."""
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
