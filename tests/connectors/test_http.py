"""The built-in connectors' HTTP helper against a fake origin on 127.0.0.1, through the real
egress guard: retries, Retry-After, the size cap, redirects, rate spacing, the loopback override."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from patchbay.connectors._http import Origin, SourceClient, checked_override, user_agent
from patchbay.core.errors import EgressBlocked, ErrorCode, SourceError
from tests.support.science import FakeOrigin, Reply

pytestmark = pytest.mark.anyio

OK = Reply(200, b'{"ok": true}', {"Content-Type": "application/json"})


class Waits:
    """A ``sleep`` that records what it was asked to wait and returns at once."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def client(origin: FakeOrigin, waits: Waits, **options: object) -> SourceClient:
    per_second = float(options.pop("per_second", 0))  # type: ignore[arg-type]
    return SourceClient(
        {"api": Origin("Example API", "https://api.example.org", per_second=per_second)},
        base_url=origin.url,
        sleep=waits,
        **options,  # type: ignore[arg-type]
    )


async def test_a_429_waits_for_retry_after_and_then_succeeds(origin: FakeOrigin) -> None:
    origin.queue("/data", Reply(429, headers={"Retry-After": "7"}))
    origin.route("/data", OK)
    waits = Waits()
    with anyio.fail_after(10):
        async with client(origin, waits) as http:
            fetched = await http.get("api", "/data", {"q": "x"})
    assert fetched.body == b'{"ok": true}'
    assert fetched.endpoint == f"{origin.url}/data"
    assert waits.seconds == [7.0]
    assert origin.paths() == ["/data", "/data"]


async def test_a_retry_after_longer_than_allowed_gives_up_at_once(origin: FakeOrigin) -> None:
    origin.route("/data", Reply(429, headers={"Retry-After": "3600"}))
    waits = Waits()
    with anyio.fail_after(10), pytest.raises(SourceError) as info:
        async with client(origin, waits) as http:
            await http.get("api", "/data")
    assert info.value.code == ErrorCode.SOURCE_RATE_LIMITED
    assert info.value.details == {"source": "Example API", "status": 429, "retry_after": 3600}
    assert origin.paths() == ["/data"]


async def test_5xx_is_retried_a_bounded_number_of_times_with_backoff(origin: FakeOrigin) -> None:
    origin.route("/data", Reply(502))
    waits = Waits()
    with anyio.fail_after(10), pytest.raises(SourceError) as info:
        async with client(origin, waits, max_attempts=3, backoff=0.5) as http:
            await http.get("api", "/data")
    assert info.value.code == ErrorCode.SOURCE_UNAVAILABLE
    assert info.value.details == {"source": "Example API", "status": 502}
    assert origin.paths() == ["/data"] * 3
    assert waits.seconds == [0.5, 1.0]


async def test_a_4xx_is_a_bad_response_without_retry(origin: FakeOrigin) -> None:
    waits = Waits()
    with anyio.fail_after(10), pytest.raises(SourceError) as info:
        async with client(origin, waits) as http:
            await http.get("api", "/missing")
    assert info.value.code == ErrorCode.SOURCE_BAD_RESPONSE
    assert info.value.details["status"] == 404
    assert origin.paths() == ["/missing"]


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "read-until-close"])
async def test_an_oversized_body_is_abandoned_at_the_cap(origin: FakeOrigin, declared: bool) -> None:
    origin.route("/big", Reply(200, b"x" * 50_000, length=declared))
    with anyio.fail_after(10), pytest.raises(SourceError) as info:
        async with client(origin, Waits(), max_bytes=10_000) as http:
            await http.get("api", "/big")
    assert info.value.code == ErrorCode.SOURCE_RESPONSE_TOO_LARGE
    assert "10000 bytes" in info.value.message


async def test_a_redirect_to_another_origin_is_refused(origin: FakeOrigin) -> None:
    origin.route("/moved", Reply(302, headers={"Location": "https://elsewhere.example.net/data"}))
    with anyio.fail_after(10), pytest.raises(EgressBlocked) as info:
        async with client(origin, Waits()) as http:
            await http.get("api", "/moved")
    assert info.value.code == ErrorCode.NETWORK_BLOCKED
    assert origin.paths() == ["/moved"]


async def test_a_same_origin_redirect_is_followed(origin: FakeOrigin) -> None:
    origin.route("/old", Reply(301, headers={"Location": "/new?page=2"}))
    origin.route("/new", OK)
    with anyio.fail_after(10):
        async with client(origin, Waits()) as http:
            fetched = await http.get("api", "/old")
    assert fetched.endpoint == f"{origin.url}/new"
    assert [(seen.path, seen.query) for seen in origin.requests] == [("/old", {}), ("/new", {"page": "2"})]


async def test_requests_to_one_host_are_spaced_by_its_rate(origin: FakeOrigin) -> None:
    origin.route("/data", OK)
    waits = Waits()
    with anyio.fail_after(10):
        async with client(origin, waits, per_second=2) as http:
            await http.get("api", "/data")
            await http.get("api", "/data")
    assert len(waits.seconds) == 1
    assert 0.3 < waits.seconds[0] <= 0.5


async def test_the_user_agent_names_the_configured_contact(origin: FakeOrigin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHBAY_SCIENCE_CONTACT", "lab@example.org")
    origin.route("/data", OK)
    with anyio.fail_after(10):
        async with client(origin, Waits()) as http:
            await http.get("api", "/data")
    assert origin.requests[0].headers["user-agent"].endswith("(built-in connector; mailto:lab@example.org)")
    assert user_agent("not a mail address\r\nX: y") == user_agent("")


async def test_without_the_override_the_egress_guard_refuses_private_addresses() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with anyio.fail_after(10), pytest.raises(EgressBlocked) as info:
        async with SourceClient({"api": Origin("Example API", "https://api.example.org")}, resolver=resolver) as http:
            await http.get("api", "/data")
    assert info.value.code == ErrorCode.NETWORK_BLOCKED


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1:8443",
        "http://localhost:8080",
        "http://10.0.0.1:80",
        "http://api.example.org:80",
        "http://127.0.0.1",
        "http://127.0.0.1:80/path",
        "http://user@127.0.0.1:80",
        "http://127.0.0.2:80",
    ],
)
def test_the_base_url_override_accepts_loopback_ip_origins_only(url: str) -> None:
    with pytest.raises(ValueError):
        checked_override(url)


def test_the_base_url_override_gives_the_loopback_origin() -> None:
    assert checked_override("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert checked_override("http://[::1]:9000") == "http://[::1]:9000"
