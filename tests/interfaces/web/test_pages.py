"""patchbay.interfaces.web.pages: the page routes over plain HTTP: ``/`` redirects, the page and
its deep links render the chrome (translated, with the CSRF token, no inline script or style),
the language switch, the login-needed page, the static files; the page's security headers."""

from __future__ import annotations

import json
import re

import httpx2
import pytest

from patchbay.interfaces.web.pages import STATIC_DIR, TEMPLATES_DIR
from patchbay.interfaces.web.security import CONTENT_SECURITY_POLICY
from tests.support.api import Api, error_of

pytestmark = pytest.mark.anyio

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def _assert_page_headers(response: httpx2.Response) -> None:
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


async def test_the_root_redirects_to_the_page(cookie_client: httpx2.AsyncClient, anonymous: httpx2.AsyncClient) -> None:
    for client in (cookie_client, anonymous):
        root = await client.get("/")
        assert root.status_code == 307 and root.headers["location"] == "/ui"
        _assert_page_headers(root)


async def test_the_page_renders_the_chrome_with_the_csrf_token_and_strict_headers(
    cookie_client: httpx2.AsyncClient,
) -> None:
    page = await cookie_client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    _assert_page_headers(page)
    assert page.headers["cache-control"] == "no-store"  # it holds the CSRF token
    assert CONTENT_SECURITY_POLICY == CSP
    html = page.text
    assert '<html lang="en">' in html
    assert re.search(r'<meta name="patchbay-csrf" content="[0-9a-f]{64}">', html)
    assert 'data-selected=""' in html and 'data-view="list"' in html
    for template in ("tpl-row", "tpl-group", "tpl-badge-invalid", "tpl-badge-needs-auth", "tpl-badge-unknown"):
        assert f'<template id="{template}">' in html
    # every script is a file of our own; the one inline <script> is a JSON data block
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert [attrs for attrs, body in scripts if body.strip()] == [' type="application/json" id="i18n"']
    assert all("src=" in attrs and "/ui/static/" in attrs for attrs, body in scripts if not body.strip())
    assert " style=" not in html and "<style" not in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing from another origin
    messages = json.loads(re.search(r'<script type="application/json" id="i18n">(.*?)</script>', html, re.S)[1])
    assert messages["saved_pending"] == "Saved, reload pending"


async def test_a_deep_link_selects_the_connector_and_escapes_the_reference(
    api: Api, cookie_client: httpx2.AsyncClient
) -> None:
    page = await cookie_client.get("/ui/connectors/time")
    assert page.status_code == 200 and 'data-selected="time"' in page.text and 'data-view="detail"' in page.text
    hostile = await cookie_client.get('/ui/connectors/"><img src=x onerror=alert(1)>')
    assert hostile.status_code == 200 and "<img src=x" not in hostile.text
    assert 'data-selected="&#34;&gt;&lt;img src=x onerror=alert(1)&gt;"' in hostile.text


async def test_the_language_follows_accept_language_then_the_switchers_cookie(
    cookie_client: httpx2.AsyncClient,
) -> None:
    chinese = await cookie_client.get("/ui", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert (
        '<html lang="zh-Hans">' in chinese.text and "添加连接器" in chinese.text and "Add connector" not in chinese.text
    )
    assert chinese.headers["vary"] == "Cookie, Accept-Language"
    english = await cookie_client.get("/ui", headers={"Accept-Language": "fr-FR,en;q=0.5"})
    assert '<html lang="en">' in english.text and "Add connector" in english.text

    switched = await cookie_client.get("/ui/connectors/time?lang=zh_Hans", headers={"Accept-Language": "en"})
    assert switched.status_code == 303 and switched.headers["location"] == "/ui/connectors/time"
    cookie = switched.headers["set-cookie"].lower()
    assert cookie.startswith("patchbay_lang=zh_hans;") and "path=/" in cookie and "samesite=lax" in cookie
    remembered = await cookie_client.get("/ui", headers={"Accept-Language": "en"})
    assert '<html lang="zh-Hans">' in remembered.text and "连接器" in remembered.text
    unknown = await cookie_client.get("/ui?lang=xx")
    assert unknown.status_code == 303 and "set-cookie" not in unknown.headers
    back = await cookie_client.get("/ui?lang=en")
    assert "patchbay_lang=en;" in back.headers["set-cookie"]
    assert '<html lang="en">' in (await cookie_client.get("/ui", headers={"Accept-Language": "zh-CN"})).text


async def test_the_switcher_links_to_each_language_on_the_same_page(cookie_client: httpx2.AsyncClient) -> None:
    html = (await cookie_client.get("/ui/connectors/abc")).text
    assert '<a href="/ui/connectors/abc?lang=en" lang="en" aria-current="true">English</a>' in html
    assert '<a href="/ui/connectors/abc?lang=zh_Hans" lang="zh-Hans">简体中文</a>' in html


async def test_without_a_login_the_page_says_which_url_to_open_with_401(anonymous: httpx2.AsyncClient) -> None:
    for path in ("/ui", "/ui/connectors/time"):
        page = await anonymous.get(path)
        assert page.status_code == 401 and "location" not in page.headers  # no redirect, so no loop
        _assert_page_headers(page)
        assert "Log in to Patchbay" in page.text and "patchbay api-token" in page.text
        assert 'id="connectors-page"' not in page.text and 'content=""' in page.text
    chinese = await anonymous.get("/ui", headers={"Accept-Language": "zh-Hans"})
    assert chinese.status_code == 401 and "登录 Patchbay" in chinese.text and '<html lang="zh-Hans">' in chinese.text


async def test_static_files_are_served_with_the_page_headers_and_their_types(anonymous: httpx2.AsyncClient) -> None:
    names = sorted(path.name for path in STATIC_DIR.iterdir())
    assert {"api.js", "dialog.js", "app.css", "main.js"} <= set(names)
    for name in names:
        response = await anonymous.get(f"/ui/static/{name}")  # the login page needs its stylesheet
        assert response.status_code == 200, name
        _assert_page_headers(response)
        expected = "text/css" if name.endswith(".css") else "text/javascript"
        assert response.headers["content-type"].startswith(expected), (name, response.headers["content-type"])
    missing = await anonymous.get("/ui/static/nope.js")
    assert missing.status_code == 404


def test_templates_have_no_inline_script_style_or_event_handler() -> None:
    for template in TEMPLATES_DIR.glob("*.html"):
        text = template.read_text(encoding="utf-8")
        assert not re.search(r"\son[a-z]+=", text), template.name
        assert " style=" not in text and "<style" not in text, template.name
        assert not re.search(r"<script(?![^>]*(src=|application/json))", text), template.name


def test_no_script_writes_html_from_data() -> None:
    for script in STATIC_DIR.glob("*.js"):
        text = script.read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in text, (script.name, sink)
        assert "localStorage" not in text and "sessionStorage" not in text, script.name


async def test_the_pages_are_not_in_the_openapi_document(api: Api) -> None:
    paths = (await api.client.get("/openapi.json")).json()["paths"]
    assert not any(path == "/" or path.startswith("/ui") for path in paths)


async def test_a_page_path_takes_only_get(cookie_client: httpx2.AsyncClient) -> None:
    forged = await cookie_client.post("/ui", headers={"X-Patchbay-CSRF": "x"})
    assert forged.status_code == 403 and error_of(forged)["code"] == "csrf_failed"  # checked before any route
    csrf = re.search(r'name="patchbay-csrf" content="([0-9a-f]+)"', (await cookie_client.get("/ui")).text)[1]
    refused = await cookie_client.post("/ui", headers={"X-Patchbay-CSRF": csrf})
    assert refused.status_code == 405 and error_of(refused)["code"] == "method_not_allowed"
