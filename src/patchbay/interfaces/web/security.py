"""The security headers of every settings page response: :class:`PageHeadersMiddleware`.

The page loads only its own files: no inline script or style, nothing from another origin, no
framing (:data:`CONTENT_SECURITY_POLICY`). Its HTML holds the session's CSRF token, so it is
never cached. The CSRF check itself is the API's (:mod:`patchbay.interfaces.api.auth`): the page
only renders the token the request's access carries.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from patchbay.interfaces.api.auth import is_page_path

__all__ = ["CONTENT_SECURITY_POLICY", "PAGE_HEADERS", "PageHeadersMiddleware"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""What the page may load: its own scripts, styles, images (and ``data:`` images), fonts and API."""

PAGE_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""Set on every response under the page's paths (``/``, ``/ui``, ``/ui/...``: pages, redirects,
the login page and the static files)."""


class PageHeadersMiddleware:
    """Add :data:`PAGE_HEADERS` to every response of a page path; HTML answers also get
    ``Cache-Control: no-store`` (they carry the CSRF token).

    Args:
        app: the ASGI app.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_page_path(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in PAGE_HEADERS.items():
                    headers[name] = value
                if headers.get("content-type", "").startswith("text/html"):
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)
