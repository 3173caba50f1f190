"""Who may use the REST API: holders of the data home's API token (Jupyter's model).

Any process on this machine can reach a loopback port, and the API starts local commands, so
every request must prove it can read the data home's 0600 token file
(:mod:`patchbay.adapters.api_token`):

* ``Authorization: Bearer <token>`` (scripts, the library, the CLI), or
* the session cookie a browser gets from the login URL ``/login?token=<token>``: the answer is a
  303 redirect to ``/docs`` (a URL without the token) that sets ``patchbay_<id>=<value>``
  (``HttpOnly; SameSite=Strict; Path=/``). The value is an HMAC of the token, not the token; the
  name carries a short hash so servers of different data homes on one host keep their own.

Anything else is 401 ``unauthorized`` in the one error shape with ``WWW-Authenticate: Bearer``,
before any route runs or any body is read. Comparisons take constant time; no answer, message or
log line quotes what was sent.
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from patchbay.core.errors import ErrorCode
from patchbay.core.redaction import register_secret
from patchbay.interfaces.api.errors import error_response

__all__ = ["LOGIN_PATH", "TokenAuthMiddleware", "login_url"]

LOGIN_PATH = "/login"
"""``GET /login?token=...`` logs a browser in (sets the session cookie) and redirects to ``/docs``."""
AFTER_LOGIN = "/docs"


def login_url(base_url: str, token: str) -> str:
    """The URL that logs a browser in: ``<base_url>/login?token=<token>``.

    Args:
        base_url: ``http://127.0.0.1:8765`` (no trailing slash needed).
        token: the data home's API token (URL-safe characters only).
    """
    return f"{base_url.rstrip('/')}{LOGIN_PATH}?token={token}"


def _unauthorized(message: str) -> Response:
    response = error_response(401, ErrorCode.UNAUTHORIZED, message)
    response.headers["WWW-Authenticate"] = "Bearer"
    return response


class TokenAuthMiddleware:
    """Answer 401 ``unauthorized`` to every request without the token or its session cookie.

    Args:
        app: the ASGI app.
        token: the API token (:func:`~patchbay.adapters.api_token.api_token`); registered for
            redaction, with the cookie value derived from it.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode("ascii")
        self.cookie_name = "patchbay_" + hashlib.sha256(b"patchbay-cookie-name\0" + self._token).hexdigest()[:12]
        self._cookie = hmac.new(self._token, b"patchbay-api-session", hashlib.sha256).hexdigest()
        register_secret(token)
        register_secret(self._cookie)

    def _valid_token(self, supplied: str) -> bool:
        return hmac.compare_digest(supplied.encode("utf-8", "replace"), self._token)

    def _authenticated(self, headers: list[tuple[bytes, bytes]]) -> bool:
        authorizations = [v for k, v in headers if k.lower() == b"authorization"]
        if len(authorizations) == 1:
            scheme, _, credentials = authorizations[0].decode("latin-1").strip().partition(" ")
            return scheme.lower() == "bearer" and self._valid_token(credentials.strip())
        if authorizations:  # two Authorization headers: which one a proxy looked at is unknowable
            return False
        found = False
        for key, value in headers:
            if key.lower() != b"cookie":
                continue
            cookies = SimpleCookie()
            try:
                cookies.load(value.decode("latin-1"))
            except Exception:  # a malformed Cookie header is no credential
                continue
            morsel = cookies.get(self.cookie_name)
            if morsel is not None:
                found = found or hmac.compare_digest(morsel.value.encode("latin-1"), self._cookie.encode("ascii"))
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") == LOGIN_PATH and scope.get("method") in ("GET", "HEAD"):
            await self._login(scope)(scope, receive, send)
            return
        if not self._authenticated(list(scope.get("headers", []))):
            response = _unauthorized(
                "this API needs its token as a bearer token in the Authorization header (`patchbay api-token` "
                "prints it; it is in the data home's api-token file), or open the login URL `serve` printed"
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _login(self, scope: Scope) -> Response:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        tokens = query.get("token", [])
        if len(tokens) != 1 or not self._valid_token(tokens[0]):
            return _unauthorized("the login URL needs the API token as its one 'token' query parameter")
        response = RedirectResponse(AFTER_LOGIN, status_code=303)
        response.set_cookie(self.cookie_name, self._cookie, path="/", httponly=True, samesite="strict")
        # the login URL holds the token: keep it out of caches and of the next page's Referer
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response
