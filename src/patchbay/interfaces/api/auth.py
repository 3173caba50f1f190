"""Who may use the REST API: holders of the data home's API token (Jupyter's model).

Any process on this machine can reach a loopback port, and the API starts local commands, so
every request must prove it can read the data home's 0600 token file
(:mod:`patchbay.adapters.api_token`):

* ``Authorization: Bearer <token>`` (scripts, the library, the CLI), or
* the session cookie a browser gets from the login URL ``/login?token=<token>``: the answer is a
  303 redirect to the settings page ``/ui`` (a URL without the token; the API docs stay at
  ``/docs``) that sets ``patchbay_<id>=<value>``
  (``HttpOnly; SameSite=Strict; Path=/; Max-Age=<Settings.api_session_max_age>``). The value is
  random, made at each login and known only to this process's memory: it stops working when it
  expires or the server restarts. Browsers send a cookie to every port of a host, so another
  listener on 127.0.0.1 may see it; what it sees is worth no more than that one session. The
  name carries a short hash so servers of different data homes on one host keep their own. A
  request carrying the cookie more than once is refused, whatever the copies say.

A request the cookie authenticates that changes something (POST, PUT, PATCH, DELETE) must also
carry ``X-Patchbay-CSRF: <csrf token>``, an HMAC of the session value under a key of this process
that the settings page renders into its ``<meta name="patchbay-csrf">``; without it, or with a
wrong one, it is 403 ``csrf_failed`` and no route runs. A form another site posts carries the
cookie (SameSite keeps most browsers from sending it, not all) but cannot read the page or set the
header. Bearer-token requests need no CSRF token: a browser never adds that header by itself.

What authenticated a request is in its ASGI scope (:func:`request_access`). An unauthenticated
``GET``/``HEAD`` of a page path (``/``, ``/ui`` and below) is let through with no access, so the
page can answer 401 with a page a person can read (which URL to open) instead of JSON; so is
``GET /api/health``, which then answers its status only (a load balancer's probe), and so is the
OAuth callback (:data:`OAUTH_CALLBACK_PATH`), whose single-use ``state`` is its own capability.

The gateway (:data:`GATEWAY_PATH`, ``/mcp``) also takes the gateway token
(:mod:`patchbay.control.gateway_token`, the middleware's ``gateway_token`` check), a token that
opens nothing else:

* ``/mcp`` with ``Authorization: Bearer <gateway token>`` is let in (``Access("gateway")``), from
  any peer;
* the gateway token anywhere else (``/api/...``, the page, ``/api/health``, ``/docs``) is 401
  ``unauthorized``, saying it opens ``/mcp`` only: it never reaches a route;
* ``/mcp`` with the API token or the session cookie is let in from a loopback peer (the ASGI
  ``client`` is 127.0.0.0/8 or ``::1``: hosts on this machine keep working as they were) and is
  401 from any other peer (``serve --allow-remote``; and behind a local proxy that forwards the
  client's address): a remote MCP host must hold the gateway token, which cannot reach the REST
  API that registers local commands.

Anything else is 401 ``unauthorized`` in the one error shape with ``WWW-Authenticate: Bearer``,
before any route runs or any body is read; a websocket is closed with 1008 (policy violation)
before it is accepted, as no route speaks it. Comparisons take constant time; no answer, message
or log line quotes what was sent.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs

from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from patchbay.core.errors import ErrorCode
from patchbay.core.redaction import register_secret
from patchbay.interfaces.api.errors import error_response

__all__ = [
    "CSRF_HEADER",
    "GATEWAY_PATH",
    "HEALTH_PATH",
    "LOGIN_PATH",
    "OAUTH_CALLBACK_PATH",
    "SESSION_MAX_AGE",
    "Access",
    "TokenAuthMiddleware",
    "is_loopback_peer",
    "is_page_path",
    "login_url",
    "refuse_other_scopes",
    "request_access",
]

GATEWAY_PATH = "/mcp"
"""Where the MCP gateway is served: the one path the gateway token opens."""
HEALTH_PATH = "/api/health"
"""``GET /api/health``: answered without a token too (its status only; see the health route)."""
LOGIN_PATH = "/login"
"""``GET /login?token=...`` logs a browser in (sets the session cookie) and redirects to ``/ui``."""
AFTER_LOGIN = "/ui"
OAUTH_CALLBACK_PATH = "/api/mcp/oauth/callback"
"""The OAuth redirect URI of page logins: reached without the token or cookie (the browser comes
from the authorization server, which a ``SameSite=Strict`` cookie does not follow); the login's
single-use ``state`` is its capability."""
CSRF_HEADER = "X-Patchbay-CSRF"
"""The header a cookie-authenticated unsafe request must carry (the page's CSRF token)."""
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_ACCESS_KEY = "patchbay.access"
SESSION_MAX_AGE = 12 * 60 * 60
"""Seconds a login's session cookie is accepted (``Settings.api_session_max_age``'s default)."""
_MAX_SESSIONS = 1024
"""Live sessions kept; past it the oldest login's cookie is forgotten (only token holders log in)."""


@dataclass(frozen=True)
class Access:
    """What let a request in.

    ``via``: ``token`` (the bearer token), ``cookie`` (a login's session cookie; ``csrf_token`` is
    the token its unsafe requests must send), ``gateway`` (the gateway token, on
    :data:`GATEWAY_PATH` only) or ``open`` (served without authentication, ``serve --no-auth``).
    """

    via: Literal["token", "cookie", "gateway", "open"]
    csrf_token: str | None = None


def request_access(scope: Any) -> Access | None:
    """What authenticated the request of ``scope`` (an ASGI scope, or a Starlette request's
    ``.scope``); None when nothing did (only an unauthenticated page ``GET`` gets that far).
    An app served without :class:`TokenAuthMiddleware` gives every request ``Access("open")``."""
    if _ACCESS_KEY not in scope:
        return Access("open")
    access: Access | None = scope[_ACCESS_KEY]
    return access


def is_loopback_peer(scope: Any) -> bool:
    """Whether the ASGI ``scope``'s ``client`` is a loopback address (127.0.0.0/8, ``::1``, or
    127.x mapped into IPv6); False for any other address, a name, or no client at all."""
    client = scope.get("client")
    if not client:
        return False
    try:
        address = ipaddress.ip_address(str(client[0]).strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def is_page_path(path: str) -> bool:
    """Whether ``path`` is the settings page's (``/``, ``/ui``, ``/ui/...``)."""
    return path in ("/", "/ui") or path.startswith("/ui/")


def login_url(base_url: str, token: str) -> str:
    """The URL that logs a browser in: ``<base_url>/login?token=<token>``.

    Args:
        base_url: ``http://127.0.0.1:8765`` (no trailing slash needed).
        token: the data home's API token (URL-safe characters only).
    """
    return f"{base_url.rstrip('/')}{LOGIN_PATH}?token={token}"


async def refuse_other_scopes(scope: Scope, receive: Receive, send: Send) -> bool:
    """Answer an ASGI connection that is neither HTTP nor the lifespan, and say whether it was.

    A websocket is closed with 1008 (policy violation) before it is accepted, so the server
    answers its handshake 403; no route of the API speaks it, and none is checked like HTTP.

    Raises:
        RuntimeError: for a scope type ASGI servers do not send (nothing to answer it with).
    """
    if scope["type"] in ("http", "lifespan"):
        return False
    if scope["type"] != "websocket":
        raise RuntimeError(f"unsupported ASGI scope type {scope['type']!r}")
    await WebSocketClose(code=1008)(scope, receive, send)
    return True


def _cookie_values(headers: list[tuple[bytes, bytes]], name: str) -> list[str]:
    """Every value the ``Cookie`` headers give ``name``, in order (``a=1; a=2`` is two)."""
    values = []
    for key, value in headers:
        if key.lower() != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            cookie_name, equals, cookie_value = pair.partition("=")
            if equals and cookie_name.strip() == name:
                values.append(cookie_value.strip().strip('"'))
    return values


def _header_values_of(headers: list[tuple[bytes, bytes]], name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in headers if k.lower() == name]


def _unauthorized(message: str) -> Response:
    response = error_response(401, ErrorCode.UNAUTHORIZED, message)
    response.headers["WWW-Authenticate"] = "Bearer"
    return response


_GATEWAY_ONLY = (
    "that is the gateway token, which opens the MCP gateway at /mcp only; the REST API and the settings "
    "page need the API token (`patchbay api-token`)"
)
_REMOTE_GATEWAY = (
    "a client that is not on this machine must send the gateway token to /mcp as a bearer token "
    "(`patchbay gateway token --rotate` makes one and shows it once); the API token is accepted there "
    "from loopback clients only"
)


class TokenAuthMiddleware:
    """Answer 401 ``unauthorized`` to every request without the token or a live session cookie
    (the gateway token on :data:`GATEWAY_PATH`; see the module docstring).

    Args:
        app: the ASGI app.
        token: the API token (:func:`~patchbay.adapters.api_token.api_token`); registered for
            redaction, as is each session cookie value.
        session_max_age: seconds a login's cookie is accepted (and its ``Max-Age``), > 0.
        clock: monotonic seconds (``time.monotonic``); sessions expire on it.
        gateway_token: ``check(supplied) -> bool``, whether bearer credentials are the current
            gateway token (:meth:`~patchbay.control.gateway_token.GatewayTokens.accepts`, asked
            per request, constant time); None: there is no gateway token.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        session_max_age: int = SESSION_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
        gateway_token: Callable[[str], bool] | None = None,
    ) -> None:
        if session_max_age <= 0:
            raise ValueError("session_max_age must be > 0 seconds")
        self.app = app
        self._token = token.encode("ascii")
        self.cookie_name = "patchbay_" + hashlib.sha256(b"patchbay-cookie-name\0" + self._token).hexdigest()[:12]
        self.session_max_age = session_max_age
        self._clock = clock
        # value -> monotonic expiry; only token holders can add one (each login), and the
        # expired ones go at the next login
        self._sessions: dict[str, float] = {}
        self._csrf_key = secrets.token_bytes(32)
        self._gateway_token = gateway_token
        register_secret(token)

    def _valid_token(self, supplied: str) -> bool:
        return hmac.compare_digest(supplied.encode("utf-8", "replace"), self._token)

    def _live_session(self, supplied: str) -> bool:
        now = self._clock()
        encoded = supplied.encode("latin-1", "replace")
        live = False
        for value, expires in self._sessions.items():  # every one compared, in constant time
            matches = hmac.compare_digest(encoded, value.encode("ascii"))
            live = live or (matches and now < expires)
        return live

    def _access(self, headers: list[tuple[bytes, bytes]]) -> Access | str | None:
        """What the headers prove: an :class:`Access`, None (nothing), or the gateway token
        (``"gateway"``: accepted on :data:`GATEWAY_PATH` only)."""
        authorizations = [v for k, v in headers if k.lower() == b"authorization"]
        if len(authorizations) == 1:
            scheme, _, credentials = authorizations[0].decode("latin-1").strip().partition(" ")
            if scheme.lower() != "bearer":
                return None
            if self._valid_token(credentials.strip()):
                return Access("token")
            gateway = self._gateway_token is not None and self._gateway_token(credentials.strip())
            return "gateway" if gateway else None
        if authorizations:  # two Authorization headers: which one a proxy looked at is unknowable
            return None
        cookies = _cookie_values(headers, self.cookie_name)
        # two copies of the cookie: which one a browser or proxy meant is unknowable, and the
        # outcome must not hang on their order
        if len(cookies) == 1 and self._live_session(cookies[0]):
            return Access("cookie", self.csrf_token(cookies[0]))
        return None

    @staticmethod
    def _placed(scope: Scope, proven: Access | str | None) -> tuple[Access | None, str | None]:
        """Where what was proven is accepted: ``(access, None)``, or ``(None, refusal)`` when
        it must be refused whatever the path's exemptions (the message of the 401)."""
        on_gateway = scope.get("path") == GATEWAY_PATH
        if proven == "gateway":
            return (Access("gateway"), None) if on_gateway else (None, _GATEWAY_ONLY)
        if isinstance(proven, Access) and on_gateway and not is_loopback_peer(scope):
            return None, _REMOTE_GATEWAY
        return (proven if isinstance(proven, Access) else None), None

    def csrf_token(self, session: str) -> str:
        """The CSRF token of a session cookie value: an HMAC-SHA256 under this middleware's own
        random key (64 hex digits), so it is worth nothing to another process or after a restart."""
        return hmac.new(self._csrf_key, session.encode("latin-1", "replace"), hashlib.sha256).hexdigest()

    @staticmethod
    def _csrf_refusal(scope: Scope, access: Access) -> Response | None:
        if access.via != "cookie" or scope.get("method") not in _UNSAFE_METHODS:
            return None
        assert access.csrf_token is not None
        sent = _header_values_of(list(scope.get("headers", [])), CSRF_HEADER.lower().encode("ascii"))
        if len(sent) == 1 and hmac.compare_digest(sent[0].strip().encode("latin-1"), access.csrf_token.encode("ascii")):
            return None
        return error_response(
            403,
            ErrorCode.CSRF_FAILED,
            f"a request made with the session cookie that changes something needs the settings page's {CSRF_HEADER} "
            "header; reload the page, or send the API token as a bearer token instead",
            {"header": CSRF_HEADER},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await refuse_other_scopes(scope, receive, send):
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") == LOGIN_PATH and scope.get("method") in ("GET", "HEAD"):
            await self._login(scope)(scope, receive, send)
            return
        access, refusal_message = self._placed(scope, self._access(list(scope.get("headers", []))))
        scope[_ACCESS_KEY] = access
        if refusal_message is not None:
            await _unauthorized(refusal_message)(scope, receive, send)
            return
        if access is None:
            path = str(scope.get("path", ""))
            if scope.get("method") in ("GET", "HEAD") and (is_page_path(path) or path == OAUTH_CALLBACK_PATH):
                await self.app(scope, receive, send)  # the page itself says how to log in (401)
                return
            if scope.get("method") == "GET" and scope.get("path") == HEALTH_PATH:
                await self.app(scope, receive, send)  # a liveness probe: the route says the status only
                return
            response = _unauthorized(
                "this API needs its token as a bearer token in the Authorization header (`patchbay api-token` "
                "prints it; it is in the data home's api-token file), or open the login URL `serve` printed"
            )
            await response(scope, receive, send)
            return
        refusal = self._csrf_refusal(scope, access)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _login(self, scope: Scope) -> Response:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        tokens = query.get("token", [])
        if len(tokens) != 1 or not self._valid_token(tokens[0]):
            return _unauthorized("the login URL needs the API token as its one 'token' query parameter")
        now = self._clock()
        live = [(value, expires) for value, expires in self._sessions.items() if now < expires]
        self._sessions = dict(live[-(_MAX_SESSIONS - 1) :])
        session = secrets.token_hex(32)  # lower-case hex, as the cookie value always was
        self._sessions[session] = now + self.session_max_age
        register_secret(session, transient=True)
        response = RedirectResponse(AFTER_LOGIN, status_code=303)
        response.set_cookie(
            self.cookie_name,
            session,
            max_age=self.session_max_age,
            path="/",
            httponly=True,
            samesite="strict",
        )
        # the login URL holds the token: keep it out of caches and of the next page's Referer
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response
