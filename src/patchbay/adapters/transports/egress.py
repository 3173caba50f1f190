"""The egress guard: every outbound HTTP request Patchbay makes goes through it.

Streamable HTTP and SSE requests and, through the same client factory, OAuth requests pass one
:class:`EgressGuard`: absolute ``http``/``https`` URLs only, only the origins the guard was opened
for (:meth:`EgressGuard.permit` adds one), no redirect off the origin, and every address a host
resolves to checked (private ranges only with ``allow_private``; cloud metadata, unspecified,
multicast and broadcast never), the TCP connection going to the checked address. A refused request
raises :class:`~patchbay.core.errors.EgressBlocked` (code ``network_blocked``) before a byte is sent.

Usage (what :func:`patchbay.adapters.transports.http.open_http` does, and what OAuth code reuses)::

    guard = EgressGuard(EgressPolicy(allow_private=False), origins=[url])
    async with guarded_client(guard, headers=headers, auth=oauth_provider) as client:
        ...

Design: docs/egress.md
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import ipaddress
import math
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpcore2
import httpx2

from patchbay.adapters.transports.sdk_private import SSEParser  # the SDK's own SSE framing: both read the same events
from patchbay.core.errors import EgressBlocked, ErrorCode
from patchbay.core.validation import url_host_problem

__all__ = [
    "METADATA_ADDRESSES",
    "EgressDecision",
    "EgressGuard",
    "EgressPolicy",
    "GuardedTransport",
    "SseEndpointRefused",
    "Resolver",
    "address_problem",
    "client_factory",
    "guarded_client",
    "origin_of",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``await resolver(host, port)`` → the host's IP addresses as text, in the order to try them."""

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle instance metadata
        "169.254.170.2",  # AWS ECS task metadata and credentials
        "169.254.170.23",  # AWS EKS pod identity agent
        "169.254.169.253",  # AWS VPC DNS / metadata helpers
        "fd00:ec2::254",  # AWS instance metadata over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity agent over IPv6
        "100.100.100.200",  # Alibaba Cloud metadata
        "192.0.0.192",  # Oracle Cloud legacy metadata
    )
)
"""Cloud metadata endpoints: refused even with ``allow_private`` (they hand out credentials)."""

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")
_BROADCAST = ipaddress.ip_address("255.255.255.255")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class SseEndpointRefused(httpx2.SSEError):
    """An SSE stream announced an ``endpoint`` on another origin; its cause is the
    :class:`EgressBlocked` verdict (``network_blocked``, ``details["origin"]`` the refused origin).

    It is an ``httpx2.SSEError`` because that is what the SDK's SSE reader lets escape: it ends the
    connection attempt at once instead of waiting for an endpoint that never comes.
    """

    code = ErrorCode.NETWORK_BLOCKED


@dataclass(frozen=True, slots=True)
class EgressDecision:
    """One request's verdict, as handed to :attr:`EgressPolicy.observer`.

    Attributes:
        origin: ``scheme://host:port`` of the request (None when the URL had none to give).
        approved: False when the guard refused the request (nothing was sent).
        reason: why it was refused; None when approved.
        request: the request itself, for in-process classification (e.g. which OAuth endpoint); an
            observer must not log its URL, headers or body.
    """

    origin: str | None
    approved: bool
    reason: str | None
    request: httpx2.Request


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """What a connector's outbound requests may reach.

    Attributes:
        allow_private: the connector's explicit ``allow_private`` runtime option: loopback,
            private, link-local, unique-local and CGNAT addresses become reachable (metadata,
            unspecified, multicast and broadcast addresses never do).
        resolver: name → addresses; default :func:`system_resolver` (tests pass a stub).
        observer: called with an :class:`EgressDecision` for every request the guard judged
            (audit counters, OAuth audit notes); it must not raise.
    """

    allow_private: bool = False
    resolver: Resolver | None = None
    observer: Callable[[EgressDecision], None] | None = None


async def system_resolver(host: str, port: int) -> list[str]:
    """The system resolver's TCP addresses for ``host`` (deduplicated, in its order).

    Raises:
        OSError: (``socket.gaierror``) the name does not resolve.
    """
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def origin_of(url: httpx2.URL | str) -> str:
    """``scheme://host:port`` of an absolute http(s) URL (port always explicit, host in IDNA form).

    Raises:
        EgressBlocked: ``url`` is not absolute http(s) with a host, has a host
            :func:`patchbay.core.validation.url_host_problem` refuses (a %-escape, an IPv6 zone
            id), or carries userinfo.
    """
    try:
        parsed = url if isinstance(url, httpx2.URL) else httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        raise EgressBlocked("the URL cannot be parsed") from None
    if parsed.scheme not in _DEFAULT_PORTS:
        raise EgressBlocked("only absolute http and https URLs may be contacted")
    if not parsed.raw_host:
        raise EgressBlocked("the URL has no host")
    host = parsed.raw_host.decode("ascii").lower()
    problem = url_host_problem(host)
    if problem is not None:
        raise EgressBlocked(f"the URL {problem}")
    origin = f"{parsed.scheme}://{f'[{host}]' if ':' in host else host}:{parsed.port or _DEFAULT_PORTS[parsed.scheme]}"
    if parsed.userinfo:
        raise EgressBlocked("URLs with userinfo (user:password@) are never contacted", origin=origin)
    return origin


def address_problem(address: IPAddress | str, *, allow_private: bool = False) -> str | None:
    """Why ``address`` may not be contacted, or None when it may.

    Args:
        address: an IPv4/IPv6 address (text with an optional ``%scope`` is accepted).
        allow_private: the connector's explicit ``allow_private`` option.

    Raises:
        ValueError: ``address`` is not an IP address.
    """
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        embedded: ipaddress.IPv4Address | None = None
        if ip.ipv4_mapped is not None:
            embedded = ip.ipv4_mapped
        elif ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip.sixtofour is not None:
            embedded = ip.sixtofour
        elif ip.teredo is not None:
            embedded = ip.teredo[1]
        if embedded is not None:
            problem = address_problem(embedded, allow_private=allow_private)
            return f"{problem} (embedded in {ip})" if problem else None
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
    if ip in METADATA_ADDRESSES:
        return f"{ip} is a cloud metadata address"
    if ip.is_unspecified:
        return f"{ip} is the unspecified address"
    if ip.is_multicast or ip == _BROADCAST:
        return f"{ip} is a multicast or broadcast address"
    if allow_private:
        return None
    kinds = (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("CGNAT (100.64.0.0/10)", ip in _CGNAT),
        ("unique-local", ip in _UNIQUE_LOCAL),
        ("site-local", ip in _SITE_LOCAL),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved or not ip.is_global),
    )
    kind = next((label for label, applies in kinds if applies), None)
    if kind is None:
        return None
    return f"{ip} is a {kind} address (the connector's allow_private option is off)"


class EgressGuard:
    """The guard of one HTTP client: a policy plus the origins it may reach.

    Args:
        policy: the connector's :class:`EgressPolicy`.
        origins: URLs or origins the client may contact (typically the endpoint URL).

    Attributes:
        approved / blocked: how many requests the guard let through / refused so far.

    Raises:
        EgressBlocked: (construction) an origin is not absolute http(s) or carries userinfo.
    """

    def __init__(self, policy: EgressPolicy, origins: Iterable[str] = ()):
        self.policy = policy
        self._origins: set[str] = set()
        self.approved = 0
        self.blocked = 0
        for origin in origins:
            self.permit(origin)

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(self._origins)

    def permit(self, url: str) -> str:
        """Allow requests to ``url``'s origin too (e.g. an authorization server being pinned).

        Returns the origin. Its addresses are still checked at connect time.

        Raises:
            EgressBlocked: ``url`` is not absolute http(s) or carries userinfo.
        """
        origin = origin_of(url)
        self._origins.add(origin)
        return origin

    def check_request(self, request: httpx2.Request) -> str:
        """Apply the URL and origin rules to ``request``; returns its origin.

        Raises:
            EgressBlocked: a bad URL, or an origin this guard was not opened for.
        """
        origin = origin_of(request.url)
        if origin not in self._origins:
            raise EgressBlocked("the origin is not the connector's (cross-origin requests are refused)", origin=origin)
        return origin

    def check_redirect(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """Refuse a redirect response that leaves ``request``'s origin or breaks the URL rules.

        Raises:
            EgressBlocked: the ``Location`` is cross-origin, not http(s), or carries userinfo.
        """
        if not response.is_redirect:
            return
        location = response.headers.get("location", "")
        try:
            target = request.url.join(location)
        except (httpx2.InvalidURL, TypeError, ValueError):
            raise EgressBlocked("the redirect location cannot be parsed", origin=origin_of(request.url)) from None
        origin = origin_of(target)
        if origin != origin_of(request.url):
            raise EgressBlocked(f"a redirect to another origin ({origin}) is refused", origin=origin_of(request.url))

    async def resolve_checked(self, host: str, port: int) -> list[str]:
        """Resolve ``host`` and check every address; the addresses to connect to, in order.

        An IP literal is checked as it is (no lookup).

        Raises:
            EgressBlocked: any address is refused, or the name resolves to nothing.
            httpcore2.ConnectError: the name does not resolve (the resolver raised ``OSError``).
        """
        try:
            literal: IPAddress | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [host]
        else:
            resolver = self.policy.resolver or system_resolver
            try:
                addresses = list(await resolver(host, port))
            except OSError as exc:
                why = f" ({exc.strerror})" if exc.strerror else ""
                raise httpcore2.ConnectError(f"the name {host!r} does not resolve{why}") from exc
            if not addresses:
                raise EgressBlocked(f"the name {host!r} resolved to no address")
        for address in addresses:
            try:
                problem = address_problem(address, allow_private=self.policy.allow_private)
            except ValueError:
                problem = f"the resolver returned {address!r}, which is no IP address"
            if problem is not None:
                raise EgressBlocked(problem if literal is not None else f"{host} resolves to {problem}")
        return addresses

    def report(self, decision: EgressDecision) -> None:
        """Count ``decision`` and hand it to the policy's observer."""
        if decision.approved:
            self.approved += 1
        else:
            self.blocked += 1
        if self.policy.observer is not None:
            self.policy.observer(decision)


def _connect_failure(host: str, port: int, failure: Exception) -> Exception:
    """``failure`` again, with a message that says where and what: httpcore2's own is just
    "All connection attempts failed" (e.g. ``could not connect to 127.0.0.1:3001: connection
    refused``)."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(failure, httpcore2.ConnectTimeout):
        return httpcore2.ConnectTimeout(f"could not connect to {where}: timed out")
    reason = "the connection failed"
    seen: set[int] = set()
    current: BaseException | None = failure
    while current is not None and id(current) not in seen:  # the innermost errno says the most
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            reason = "connection refused"
        elif isinstance(current, OSError) and current.errno is not None:
            reason = os.strerror(current.errno).lower()
        current = current.__cause__ or current.__context__
    return httpcore2.ConnectError(f"could not connect to {where}: {reason}")


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend with the address check in front of every TCP connect."""

    def __init__(self, guard: EgressGuard):
        self._guard = guard
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's backend interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        # The whole connect, lookup included, stays within httpx's connect timeout (seconds).
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        try:
            with anyio.fail_after(timeout) if timeout is not None else contextlib.nullcontext():
                addresses = await self._guard.resolve_checked(host, port)
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"looking up {host!r} timed out") from None
        failure: Exception | None = None
        for address in addresses:  # every one was checked: connect to exactly these
            remaining = None if timeout is None else max(0.0, deadline - anyio.current_time())
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=remaining, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # resolve_checked never returns an empty list
        raise _connect_failure(host, port, failure) from failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's backend interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise EgressBlocked("HTTP over a Unix socket is not an egress path")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


@functools.cache
def _verified_context() -> ssl.SSLContext:
    # Building a verifying context loads the CA bundle (~90 ms): once per process, shared by
    # every guarded pool (httpcore only sets the same ALPN list on it per connection).
    return httpx2.create_ssl_context(verify=True)


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's own HTTP transport, with every request, connect and redirect checked by ``guard``.

    The connection pool is httpcore2's, built with :class:`_GuardedBackend` as its network
    backend (the library's extension point for how connections are made); requests, responses
    and exceptions are converted by httpx2 exactly as for its default transport. No proxy.

    Args:
        guard: the :class:`EgressGuard` to apply.
        verify: TLS verification as for ``httpx2.AsyncHTTPTransport`` (default: on).
    """

    def __init__(
        self,
        guard: EgressGuard,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx2.Limits | None = None,
        sse_endpoints: bool = False,
    ):
        # Not super().__init__(): that would build a pool (and an SSL context) only to drop it.
        limits = limits or httpx2.Limits(max_connections=100, max_keepalive_connections=20)
        self.guard = guard
        self.sse_endpoints = sse_endpoints
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=_verified_context() if verify is True else httpx2.create_ssl_context(verify=verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=_GuardedBackend(guard),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        origin: str | None = None
        try:
            origin = self.guard.check_request(request)
            response = await super().handle_async_request(request)
            try:
                self.guard.check_redirect(request, response)
            except EgressBlocked:
                await response.aclose()
                raise
        except EgressBlocked as exc:
            if exc.origin is not None or origin is None:
                self.guard.report(EgressDecision(exc.origin, False, exc.reason, request))
                raise
            refused = exc.with_details(origin=origin)  # refused at connect time, where the origin is unknown
            self.guard.report(EgressDecision(origin, False, refused.reason, request))
            raise refused from exc
        except BaseException:
            self.guard.report(EgressDecision(origin, True, None, request))  # approved; the network failed
            raise
        self.guard.report(EgressDecision(origin, True, None, request))
        if self.sse_endpoints and _is_event_stream(request, response):
            response.stream = _EndpointCheckedStream(response.stream, self.guard, request)
        return response


def _is_event_stream(request: httpx2.Request, response: httpx2.Response) -> bool:
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    return request.method == "GET" and content_type == "text/event-stream"


class _EndpointCheckedStream(httpx2.AsyncByteStream):
    """A legacy SSE stream whose ``endpoint`` events are checked before the SDK sees them.

    The SDK refuses a cross-origin endpoint too, but from inside its reader task, before anyone
    reads the stream it reports to: the connection then hangs until a deadline (it must fail with
    ``network_blocked``, at once). This raises :class:`SseEndpointRefused` instead, which the SDK's
    reader re-raises, so the connection attempt fails immediately.
    """

    def __init__(self, inner: Any, guard: EgressGuard, request: httpx2.Request):
        self._inner = inner
        self._guard = guard
        self._request = request

    async def __aiter__(self) -> Any:
        parser = SSEParser(max_event_size=None)
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        async for chunk in self._inner:
            for event in parser.decode(text.decode(chunk)):
                if event.event == "endpoint":
                    self._check(event.data)
            yield chunk

    def _check(self, data: str) -> None:
        own = origin_of(self._request.url)
        try:
            target = self._request.url.join(data)
            origin: str | None = origin_of(target)
        except EgressBlocked as exc:
            origin, problem = exc.origin, f"the SSE endpoint is not a usable URL ({exc.reason})"
        except (httpx2.InvalidURL, TypeError, ValueError):
            origin, problem = None, "the SSE endpoint cannot be parsed"
        else:
            if origin == own:
                return
            problem = f"the SSE endpoint is on another origin ({origin}); only {own} may be contacted"
        blocked = EgressBlocked(problem, origin=origin)
        self._guard.report(EgressDecision(origin, False, problem, self._request))
        raise SseEndpointRefused(blocked.message) from blocked

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_client(
    guard: EgressGuard,
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    event_hooks: dict[str, list[Callable[..., Any]]] | None = None,
    sse_endpoints: bool = False,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` whose every request goes through ``guard``.

    Redirects are not followed by httpx2 (the SDK follows same-origin ones itself; the guard
    checks each), no environment proxy or ``.netrc`` is used.

    Args:
        headers: default request headers (resolved credential values arrive here, never stored).
        timeout: default ``httpx2.Timeout(30, read=300)``, the SDK's (seconds).
        auth: an ``httpx2.Auth`` (e.g. the SDK's ``OAuthClientProvider``); its requests are
            guarded too.
        event_hooks: httpx2 event hooks.
        sse_endpoints: check the ``endpoint`` events of legacy SSE streams (GET responses of
            type ``text/event-stream``): one on another origin ends the stream with
            :class:`SseEndpointRefused` (``network_blocked``) before the SDK reads it.
    """
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        event_hooks=event_hooks,
        follow_redirects=False,
        trust_env=False,
        transport=GuardedTransport(guard, sse_endpoints=sse_endpoints),
    )


def client_factory(
    guard: EgressGuard,
    *,
    event_hooks: dict[str, list[Callable[..., Any]]] | None = None,
    sse_endpoints: bool = False,
) -> Callable[..., httpx2.AsyncClient]:
    """A factory with the SDK's ``McpHttpClientFactory`` signature ``(headers, timeout, auth)``
    building :func:`guarded_client` clients (for ``sse_client(httpx_client_factory=...)``);
    ``sse_endpoints`` as for :func:`guarded_client`."""

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return guarded_client(
            guard, headers=headers, timeout=timeout, auth=auth, event_hooks=event_hooks, sse_endpoints=sse_endpoints
        )

    return factory
