"""The one HTTP helper of the built-in connectors: fixed public origins behind the egress guard.

Every request a built-in connector sends goes through :class:`SourceClient`:

* **Origins**: the connector names its public origins up front (:class:`Origin`); the client's
  :class:`~patchbay.adapters.transports.egress.EgressGuard` permits those and nothing else, with
  the same address rules as remote connectors (no private, loopback or metadata address).
* **Redirects**: a cross-origin ``Location`` is refused by the guard (``network_blocked``); a
  same-origin one is followed (at most :data:`MAX_REDIRECTS`), each hop checked again.
* **Retries**: bounded (``max_attempts``). 429 and 503 wait for ``Retry-After`` (seconds or an
  HTTP date; else ``RateLimit-Reset``/``X-RateLimit-Reset`` seconds; else a short backoff), and
  give up with ``source_rate_limited`` when the wait would pass ``max_retry_after``; other 5xx,
  timeouts and connection failures back off and end in ``source_unavailable``. A 4xx is
  ``source_bad_response`` at once.
* **Rate limit**: requests to one host are spaced by ``1 / Origin.per_second`` seconds.
* **Size cap**: a body is read up to ``max_bytes`` and abandoned past it
  (``source_response_too_large``); a ``Content-Length`` above the cap is refused before reading.
* **User-Agent**: ``patchbay/<version> (built-in connector; mailto:<contact>)`` with the contact
  from ``PATCHBAY_SCIENCE_CONTACT`` (a credential binding can supply it) when it looks like one.

**Test override.** ``base_url`` replaces every origin by one loopback URL (``http://127.0.0.1:<port>``
or ``http://[::1]:<port>``); anything else is refused (:func:`checked_override`), so the override can
only ever point a connector at this machine's own test fake, never at another host.

Errors: :class:`~patchbay.core.errors.SourceError` (codes above) and
:class:`~patchbay.core.errors.EgressBlocked` (``network_blocked``). Messages never quote a query.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import math
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx2

from patchbay.adapters.transports.egress import EgressDecision, EgressGuard, EgressPolicy, Resolver, guarded_client
from patchbay.core.errors import ErrorCode, SourceError
from patchbay.core.version import __version__

__all__ = [
    "CONTACT_ENV",
    "MAX_REDIRECTS",
    "Fetched",
    "Origin",
    "SourceClient",
    "checked_override",
    "json_object",
    "user_agent",
]

CONTACT_ENV = "PATCHBAY_SCIENCE_CONTACT"
"""The environment variable with a contact (an e-mail address) for the polite User-Agent."""
MAX_REDIRECTS = 3
"""Same-origin redirects followed for one request."""
_CONTACT = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}")
_LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Origin:
    """One public origin a connector may reach.

    Attributes:
        source: the data source's name, as results and errors show it (``Europe PMC``).
        base_url: ``https://host`` (no path), the only place requests for this origin go.
        per_second: the most requests per second sent to its host.
    """

    source: str
    base_url: str
    per_second: float = 5.0


@dataclass(frozen=True, slots=True)
class Fetched:
    """One answered request.

    Attributes:
        status: the final HTTP status (2xx).
        body: the body, at most the client's ``max_bytes``.
        content_type: the media type, lowercased, without parameters.
        endpoint: scheme, host and path of the URL that answered (no query: it may hold a key).
        retrieved_at: when the answer arrived, ISO 8601 UTC with milliseconds.
    """

    status: int
    body: bytes
    content_type: str
    endpoint: str
    retrieved_at: str


def json_object(fetched: Fetched, source: str) -> dict[str, Any]:
    """``fetched``'s body as a JSON object.

    Raises:
        SourceError: ``source_bad_response``: not JSON, or not an object.
    """
    try:
        data = json.loads(fetched.body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise SourceError(
            f"{source} answered with something that is not a JSON object",
            code=ErrorCode.SOURCE_BAD_RESPONSE,
            details={"source": source, "status": fetched.status},
        )
    return data


def checked_override(url: str) -> str:
    """``url`` if it may replace a connector's origins in tests: ``http`` to ``127.0.0.1`` or ``::1``
    with a port and nothing else; its origin ``http://host:port``.

    Raises:
        ValueError: anything else (another host, a name, a path, userinfo, https).
    """
    try:
        parsed = httpx2.URL(url)
        address = ipaddress.ip_address(parsed.host)
    except (httpx2.InvalidURL, TypeError, ValueError):
        raise ValueError("the base URL override must be http://127.0.0.1:<port> or http://[::1]:<port>") from None
    if (
        parsed.scheme != "http"
        or address not in _LOOPBACK
        or parsed.port is None
        or parsed.userinfo
        or parsed.path not in ("", "/")
        or parsed.query
    ):
        raise ValueError("the base URL override must be http://127.0.0.1:<port> or http://[::1]:<port>")
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"http://{host}:{parsed.port}"


def user_agent(contact: str | None = None) -> str:
    """The polite User-Agent; ``contact`` (default: ``$PATCHBAY_SCIENCE_CONTACT``) is included when
    it is an e-mail address, and left out otherwise."""
    contact = os.environ.get(CONTACT_ENV, "") if contact is None else contact
    mail = f"; mailto:{contact}" if _CONTACT.fullmatch(contact.strip()) else ""
    return f"patchbay/{__version__} (built-in connector{mail})"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds to wait from ``Retry-After`` (delta or HTTP date), else a rate-limit reset header."""
    value = headers.get("retry-after", "").strip()
    if value:
        if value.isdigit():
            return float(value)
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    for name in ("ratelimit-reset", "x-ratelimit-reset"):
        reset = headers.get(name, "").strip()
        if reset.isdigit() and int(reset) < 86_400:  # a delta, not an epoch time
            return float(reset)
    return None


@dataclass(slots=True)
class _Pacer:
    """Spaces requests to one host by ``interval`` seconds (first come, first served)."""

    interval: float
    next_at: float = 0.0
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def wait(self, sleep: Sleep) -> None:
        async with self.lock:
            now = time.monotonic()
            delay = max(0.0, self.next_at - now)
            self.next_at = max(now, self.next_at) + self.interval
        if delay > 0:
            await sleep(delay)


class SourceClient:
    """The HTTP client of one built-in connector process.

    Usage::

        async with SourceClient({"epmc": Origin("Europe PMC", "https://www.ebi.ac.uk", 10)}) as http:
            fetched = await http.get("epmc", "/europepmc/webservices/rest/search", {"query": "p53"})

    Args:
        origins: key → :class:`Origin`; requests name an origin by key.
        base_url: the loopback test override (:func:`checked_override`); None in real use.
        max_bytes: the response size cap (bytes).
        timeout: seconds for connect, and for each read.
        max_attempts: tries of one request (retries = attempts - 1).
        max_retry_after: the longest ``Retry-After`` (seconds) honoured; a longer one gives up.
        backoff: seconds before the first retry without ``Retry-After``; doubled each time.
        sleep: how to wait (tests record the waits); default ``anyio.sleep``.
        resolver: the egress guard's name resolver (tests); default the system's.
        observer: called with the guard's verdict on every request (the egress audit); it must
            not raise.

    Raises:
        ValueError: (construction) a bad ``base_url`` override.
    """

    def __init__(
        self,
        origins: Mapping[str, Origin],
        *,
        base_url: str | None = None,
        max_bytes: int = 4 * 1024 * 1024,
        timeout: float = 20.0,
        max_attempts: int = 3,
        max_retry_after: float = 30.0,
        backoff: float = 0.5,
        sleep: Sleep | None = None,
        resolver: Resolver | None = None,
        observer: Callable[[EgressDecision], None] | None = None,
    ):
        self.origins = dict(origins)
        self.override = checked_override(base_url) if base_url else None
        self.max_bytes = max_bytes
        self.max_attempts = max(1, max_attempts)
        self.max_retry_after = max_retry_after
        self.backoff = backoff
        self._sleep: Sleep = sleep or anyio.sleep
        bases = [self.override] if self.override else [origin.base_url for origin in self.origins.values()]
        self.guard = EgressGuard(
            EgressPolicy(allow_private=self.override is not None, resolver=resolver, observer=observer), bases
        )
        self._pacers: dict[str, _Pacer] = {}
        for key, origin in self.origins.items():
            self._pacers[key] = _Pacer(1.0 / origin.per_second if origin.per_second > 0 else 0.0)
        self._client = guarded_client(
            self.guard,
            headers={"User-Agent": user_agent(), "Accept-Encoding": "identity"},
            timeout=httpx2.Timeout(timeout),
        )

    async def __aenter__(self) -> SourceClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    def base_of(self, key: str) -> str:
        """Where requests for origin ``key`` go: its ``base_url``, or the test override."""
        return self.override or self.origins[key].base_url

    async def get(self, key: str, path: str, params: Mapping[str, str | int] | None = None) -> Fetched:
        """GET ``path`` (absolute path) on origin ``key`` with query ``params``; a 2xx answer.

        Raises:
            SourceError: ``source_unavailable``, ``source_rate_limited``,
                ``source_response_too_large`` or ``source_bad_response`` (details: ``source``,
                ``status``).
            EgressBlocked: ``network_blocked``: the guard refused a request or a redirect.
        """
        origin = self.origins[key]
        url = httpx2.URL(self.base_of(key) + path, params={k: str(v) for k, v in (params or {}).items()})
        redirects = 0
        attempt = 0
        while True:
            attempt += 1
            await self._pacers[key].wait(self._sleep)
            try:
                status, headers, body, final = await self._once(origin, url)
            except (httpx2.TimeoutException, httpx2.TransportError) as exc:
                if attempt < self.max_attempts:
                    await self._sleep(self.backoff * 2 ** (attempt - 1))
                    continue
                kind = "timed out" if isinstance(exc, httpx2.TimeoutException) else "could not be reached"
                raise SourceError(
                    f"{origin.source} {kind} after {attempt} attempts",
                    details={"source": origin.source, "status": None},
                ) from None
            if 300 <= status < 400 and "location" in headers:
                redirects += 1
                if redirects > MAX_REDIRECTS:
                    raise SourceError(
                        f"{origin.source} redirected more than {MAX_REDIRECTS} times",
                        code=ErrorCode.SOURCE_BAD_RESPONSE,
                        details={"source": origin.source, "status": status},
                    )
                url = final.join(headers["location"])  # the guard checked it is same-origin
                attempt -= 1
                continue
            if status in (429, 503):
                wait = _retry_after(headers)
                if attempt < self.max_attempts and (wait is None or wait <= self.max_retry_after):
                    await self._sleep(wait if wait is not None else self.backoff * 2 ** (attempt - 1))
                    continue
                details: dict[str, Any] = {"source": origin.source, "status": status}
                if wait is not None:
                    details["retry_after"] = math.ceil(wait)
                raise SourceError(
                    f"{origin.source} is rate limiting requests (HTTP {status})",
                    code=ErrorCode.SOURCE_RATE_LIMITED,
                    details=details,
                )
            if status >= 500:
                if attempt < self.max_attempts:
                    await self._sleep(self.backoff * 2 ** (attempt - 1))
                    continue
                raise SourceError(
                    f"{origin.source} answered HTTP {status} after {attempt} attempts",
                    details={"source": origin.source, "status": status},
                )
            if status >= 400:
                raise SourceError(
                    f"{origin.source} refused the request (HTTP {status})",
                    code=ErrorCode.SOURCE_BAD_RESPONSE,
                    details={"source": origin.source, "status": status},
                )
            content_type = headers.get("content-type", "").partition(";")[0].strip().lower()
            endpoint = str(final.copy_with(query=None))
            return Fetched(status, body, content_type, endpoint, _now())

    async def _once(self, origin: Origin, url: httpx2.URL) -> tuple[int, httpx2.Headers, bytes, httpx2.URL]:
        """One request: ``(status, headers, body, url)``; the body only for a 2xx answer."""
        async with self._client.stream("GET", url) as response:
            if not 200 <= response.status_code < 300:
                return response.status_code, response.headers, b"", url
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise self._too_large(origin, response.status_code)
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > self.max_bytes:
                    raise self._too_large(origin, response.status_code)
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks), url

    def _too_large(self, origin: Origin, status: int) -> SourceError:
        return SourceError(
            f"{origin.source} sent more than {self.max_bytes} bytes (the response was abandoned)",
            code=ErrorCode.SOURCE_RESPONSE_TOO_LARGE,
            details={"source": origin.source, "status": status},
        )
