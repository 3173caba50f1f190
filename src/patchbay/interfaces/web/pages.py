"""The settings page's routes: ``/`` (a redirect), ``/ui`` and ``/ui/connectors/{connector}``, and
its static files under ``/ui/static/``; :func:`install_pages` adds them to the API's app.

The server renders the chrome only: translated labels, and ``<template>`` elements the page's
scripts clone for rows, badges and panels. Every datum comes from the REST API, which the scripts
call with ``fetch`` (same origin, the session cookie, the CSRF header of
:mod:`patchbay.interfaces.api.auth`): there is no second read or write path here.

A request without a valid login gets a small page in its language saying which URL to open,
answered 401 (never a redirect, so never a loop). ``?lang=en`` or ``?lang=zh_Hans`` on any page
sets the language cookie and redirects (303) to the same page without the query.

Design: docs/web.md
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from patchbay.control.status import STATUS_PRIORITY
from patchbay.core.version import __version__
from patchbay.interfaces.api.auth import request_access
from patchbay.interfaces.web.i18n import (
    LANG_COOKIE,
    LOCALES,
    choose_locale,
    html_lang,
    js_messages,
    translations,
)
from patchbay.interfaces.web.security import PageHeadersMiddleware

__all__ = ["PAGE_PATH", "STATIC_DIR", "STATIC_PATH", "TEMPLATES_DIR", "install_pages", "render_page", "router"]

PAGE_PATH = "/ui"
STATIC_PATH = "/ui/static"
TEMPLATES_DIR = Path(__file__).parent / "templates"
STATIC_DIR = Path(__file__).parent / "static"

_LANG_COOKIE_MAX_AGE = 365 * 24 * 60 * 60
"""Seconds the language choice is remembered (a preference, no secret)."""
_MAX_REF_LENGTH = 200
"""A deep link's connector reference longer than this names no connector (ids and names are shorter)."""

_LOCALE_NAMES = {"en": "English", "zh_Hans": "简体中文"}
"""Each locale in its own language, as the switcher shows it."""

router = APIRouter(include_in_schema=False)


@functools.cache
def _environment(locale: str) -> jinja2.Environment:
    """The template environment of one locale (its translations installed, newstyle gettext)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        extensions=["jinja2.ext.i18n"],
    )
    environment.policies["ext.i18n.trimmed"] = True
    environment.install_gettext_translations(translations(locale), newstyle=True)  # type: ignore[attr-defined]
    environment.globals["static"] = lambda name: f"{STATIC_PATH}/{name}?v={__version__}"
    return environment


def _locale(request: Request) -> str:
    return choose_locale(request.cookies.get(LANG_COOKIE), request.headers.get("accept-language"))


def render_page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` in the request's language with the chrome every page shares.

    Args:
        template: a file of :data:`TEMPLATES_DIR`; context: its extra variables.
    """
    locale = _locale(request)
    access = request_access(request.scope)
    body = (
        _environment(locale)
        .get_template(template)
        .render(
            locale=locale,
            html_lang=html_lang(locale),
            locales=[(code, _LOCALE_NAMES[code]) for code in LOCALES],
            path=request.url.path,
            csrf_token=(access.csrf_token if access is not None else None) or "",
            js_messages=js_messages(locale),
            version=__version__,
            **context,
        )
    )
    return HTMLResponse(body, status_code=status_code, headers={"Vary": "Cookie, Accept-Language"})


def _language_switch(request: Request) -> Response | None:
    """The answer to ``?lang=...``: set the cookie (a known locale only) and go to the same page."""
    if "lang" not in request.query_params:
        return None
    response = RedirectResponse(request.url.path, status_code=303)
    chosen = request.query_params["lang"]
    if chosen in LOCALES:
        response.set_cookie(LANG_COOKIE, chosen, max_age=_LANG_COOKIE_MAX_AGE, path="/", samesite="lax", httponly=True)
    return response


def _page(request: Request, selected: str | None) -> Response:
    switched = _language_switch(request)
    if switched is not None:
        return switched
    if request_access(request.scope) is None:
        return render_page(request, "login_needed.html", status_code=401)
    return render_page(request, "connectors.html", selected=selected or "", statuses=STATUS_PRIORITY)


@router.get("/")
def root() -> RedirectResponse:
    """The settings page lives at ``/ui``."""
    return RedirectResponse(PAGE_PATH, status_code=307)


@router.get(PAGE_PATH)
def connectors_page(request: Request) -> Response:
    """The connectors page (master–detail), nothing selected."""
    return _page(request, None)


@router.get(PAGE_PATH + "/connectors/{connector}")
def connector_page(request: Request, connector: str) -> Response:
    """The connectors page with ``connector`` (an id or a name) selected: a deep link."""
    return _page(request, connector[:_MAX_REF_LENGTH])


def install_pages(app: FastAPI) -> None:
    """Add the page routes, the static files (``/ui/static/``) and the page headers
    (:class:`~patchbay.interfaces.web.security.PageHeadersMiddleware`) to ``app``.

    Call it before the authentication middleware is added, so the headers middleware runs inside
    it and sees only requests that got through."""
    app.include_router(router)
    app.mount(STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(PageHeadersMiddleware)
