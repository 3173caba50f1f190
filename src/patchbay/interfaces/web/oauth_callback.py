"""The page the browser lands on after an OAuth authorization: ``GET /api/mcp/oauth/callback``.

It hands the redirect to the login waiting for its ``state``
(:meth:`~patchbay.control.oauth_logins.WebLogins.finish`) and says only whether the login
worked: never the code, the state or a token. Its script tells the settings page that opened it
(``window.opener.postMessage`` to this origin only, ``{"type": "patchbay-oauth", "outcome":
"success"|"failure"}``) and the page reloads the connector's status. Reached without a login (see
:data:`~patchbay.interfaces.api.auth.OAUTH_CALLBACK_PATH`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from patchbay.interfaces.api.auth import OAUTH_CALLBACK_PATH
from patchbay.interfaces.api.context import ApiContext
from patchbay.interfaces.web.pages import render_page
from patchbay.interfaces.web.security import PAGE_HEADERS

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get(OAUTH_CALLBACK_PATH)
async def oauth_callback(request: Request) -> HTMLResponse:
    """Finish the login this redirect belongs to; 200 on success, 400 otherwise."""
    context: ApiContext = request.app.state.context
    ok = False
    if context.logins is not None:
        ok = await context.logins.finish(request.url.path, request.url.query)
    response = render_page(
        request, "oauth_callback.html", status_code=200 if ok else 400, outcome="success" if ok else "failure"
    )
    response.headers.update(PAGE_HEADERS)
    response.headers["Cache-Control"] = "no-store"
    return response
