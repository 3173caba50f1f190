"""The egress guard (seed 003 §14.2, addendum 2026-09-04): URL, origin, redirect and address rules,
the check after DNS resolution at connect time, and that a refused request never leaves the machine
(a listener counts every connection)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import httpx2
import pytest

from patchbay.adapters.transports.egress import (
    EgressDecision,
    EgressGuard,
    EgressPolicy,
    address_problem,
    guarded_client,
    origin_of,
)
from patchbay.adapters.transports.errors import classify
from patchbay.core.errors import EgressBlocked, ErrorCode
from tests.support.egress import http_response, listening

pytestmark = pytest.mark.anyio

SECRET = "Bearer egress-cnry-5150"

REFUSED_UNLESS_ALLOWED = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.1.1",
    "100.64.0.1",
    "100.127.255.254",
    "::1",
    "fe80::1",
    "fd12:3456::1",
    "fec0::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::",
    "192.0.2.1",
    "198.18.0.1",
    "240.0.0.1",
]
ALWAYS_REFUSED = [
    "169.254.169.254",
    "169.254.170.2",
    "fd00:ec2::254",
    "100.100.100.200",
    "192.0.0.192",
    "::ffff:169.254.169.254",
    "0.0.0.0",
    "::",
    "224.0.0.1",
    "239.255.255.250",
    "ff02::1",
    "255.255.255.255",
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


# --- address and URL rules -----------------------------------------------------------------------


@pytest.mark.parametrize("address", REFUSED_UNLESS_ALLOWED)
def test_private_addresses_are_refused_by_default_and_allowed_with_allow_private(address: str) -> None:
    problem = address_problem(address)
    assert problem is not None and "allow_private" in problem
    assert address_problem(address, allow_private=True) is None


@pytest.mark.parametrize("address", ALWAYS_REFUSED)
def test_metadata_unspecified_and_multicast_addresses_are_refused_even_with_allow_private(address: str) -> None:
    assert address_problem(address) is not None
    assert address_problem(address, allow_private=True) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_problem(address) is None


def test_an_embedded_ipv4_address_is_judged_as_itself() -> None:
    assert "127.0.0.1" in (address_problem("::ffff:127.0.0.1") or "")
    assert "metadata" in (address_problem("64:ff9b::a9fe:a9fe", allow_private=True) or "")  # 169.254.169.254


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Example.COM/mcp?x=1#f", "https://example.com:443"),
        ("http://example.com/", "http://example.com:80"),
        ("https://example.com:8443/a/b", "https://example.com:8443"),
        ("http://[::1]:8080/mcp", "http://[::1]:8080"),
        ("https://bücher.example/x", "https://xn--bcher-kva.example:443"),
    ],
)
def test_an_origin_is_scheme_host_and_explicit_port_only(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "file:///etc/passwd", "/relative/path", "example.com/mcp", "https://u:pw@example.com/"],
)
def test_only_absolute_http_urls_without_userinfo_have_an_origin(url: str) -> None:
    with pytest.raises(EgressBlocked) as info:
        origin_of(url)
    assert info.value.code == ErrorCode.NETWORK_BLOCKED
    assert "pw" not in str(info.value)


# --- nothing leaves the machine -----------------------------------------------------------------


async def test_a_loopback_url_is_refused_by_default_and_never_connects() -> None:
    async with listening(lambda method, path: http_response()) as listener:
        url = f"{listener.origin}/mcp"
        decisions: list[EgressDecision] = []
        guard = EgressGuard(EgressPolicy(observer=decisions.append), origins=[url])
        async with guarded_client(guard, headers={"Authorization": SECRET}) as client:
            with pytest.raises(EgressBlocked) as info:
                await client.post(url, json={"x": 1})
        assert info.value.code == ErrorCode.NETWORK_BLOCKED
        assert "loopback" in info.value.message
        assert info.value.details["origin"] == listener.origin
        assert [(d.origin, d.approved) for d in decisions] == [(listener.origin, False)]
        assert (guard.approved, guard.blocked) == (0, 1)
        # The same listener is reachable once the connector allows it: the count above is real.
        allowed = EgressGuard(EgressPolicy(allow_private=True), origins=[url])
        async with guarded_client(allowed) as client:
            with anyio.fail_after(10):
                assert (await client.get(url)).status_code == 200
        assert listener.connections == 1
        assert allowed.approved == 1


async def test_a_name_that_resolves_public_first_and_private_second_is_refused() -> None:
    async with listening(lambda method, path: http_response()) as listener:
        asked: list[tuple[str, int]] = []

        async def resolver(host: str, port: int) -> Sequence[str]:
            asked.append((host, port))
            return ["93.184.216.34", "127.0.0.1"]

        url = f"http://mcp.rebind.test:{listener.port}/mcp"
        guard = EgressGuard(EgressPolicy(resolver=resolver), origins=[url])
        async with guarded_client(guard) as client:
            with pytest.raises(EgressBlocked) as info:
                await client.get(url)
        assert "mcp.rebind.test resolves to 127.0.0.1 is a loopback address" in info.value.message
        assert asked == [("mcp.rebind.test", listener.port)]
        assert listener.connections == 0  # nothing was tried, not even the public address


async def test_the_connection_goes_to_the_checked_address_with_the_name_in_the_host_header() -> None:
    answers = [["127.0.0.1"], ["169.254.169.254"]]
    asked: list[str] = []

    async def resolver(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        return answers[len(asked) - 1]

    async with listening(lambda method, path: http_response(body=b"checked")) as listener:
        url = f"http://mcp.patchbay.test:{listener.port}/mcp"
        guard = EgressGuard(EgressPolicy(allow_private=True, resolver=resolver), origins=[url])
        async with guarded_client(guard) as client:
            with anyio.fail_after(10):
                response = await client.get(url)
            # The system resolver does not know this name: the bytes went to the address checked.
            assert response.text == "checked"
            assert listener.requests[0]["headers"]["host"] == f"mcp.patchbay.test:{listener.port}"
            # The listener closed the connection; the next one is looked up and checked again.
            with pytest.raises(EgressBlocked) as info:
                await client.get(url)
        assert "cloud metadata" in info.value.message
        assert asked == ["mcp.patchbay.test", "mcp.patchbay.test"]
        assert listener.connections == 1


async def test_a_name_that_does_not_resolve_is_a_connect_error_not_a_block() -> None:
    async def resolver(host: str, port: int) -> Sequence[str]:
        raise OSError("Name or service not known")

    async def empty(host: str, port: int) -> Sequence[str]:
        return []

    url = "https://nowhere.patchbay.test/mcp"
    async with guarded_client(EgressGuard(EgressPolicy(resolver=resolver), origins=[url])) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get(url)
    async with guarded_client(EgressGuard(EgressPolicy(resolver=empty), origins=[url])) as client:
        with pytest.raises(EgressBlocked):
            await client.get(url)


async def test_a_request_to_another_origin_is_refused_and_never_connects() -> None:
    async with (
        listening(lambda method, path: http_response()) as home,
        listening(lambda method, path: http_response()) as other,
    ):
        guard = EgressGuard(EgressPolicy(allow_private=True), origins=[f"{home.origin}/mcp"])
        async with guarded_client(guard, headers={"Authorization": SECRET}) as client:
            with pytest.raises(EgressBlocked) as info:
                await client.get(f"{other.origin}/mcp")
            assert "cross-origin" in info.value.message
            # userinfo and other schemes are refused before any origin comparison
            for bad in (f"http://user:pw@127.0.0.1:{home.port}/mcp", "ftp://127.0.0.1/x"):
                with pytest.raises(EgressBlocked):
                    await client.get(bad)
        assert other.connections == 0
        assert home.connections == 0


# --- redirects -----------------------------------------------------------------------------------


async def test_a_redirect_to_another_origin_is_refused_and_the_credential_goes_nowhere() -> None:
    async with listening(lambda method, path: http_response(body=b"elsewhere")) as other:

        def answer(method: str, path: str) -> bytes:
            return http_response(307, b"", {"Location": f"http://localhost:{other.port}/steal"})

        async with listening(answer) as home:
            url = f"{home.origin}/mcp"
            guard = EgressGuard(EgressPolicy(allow_private=True), origins=[url])
            async with guarded_client(guard, headers={"Authorization": SECRET}) as client:
                with anyio.fail_after(10), pytest.raises(EgressBlocked) as info:
                    # Even a client told to follow redirects never gets the response to follow.
                    await client.post(url, json={"jsonrpc": "2.0"}, follow_redirects=True)
            assert "redirect to another origin (http://localhost" in info.value.message
            assert home.connections == 1
            assert other.connections == 0
            assert guard.blocked == 1


@pytest.mark.parametrize(
    "location",
    ["https://127.0.0.1:{port}/mcp", "http://127.0.0.1:{other}/mcp", "http://u:pw@127.0.0.1:{port}/mcp", "ftp://x/"],
)
async def test_redirects_that_leave_the_origin_or_add_userinfo_are_refused(location: str) -> None:
    async with listening() as other:
        home_port: list[int] = []

        def answer(method: str, path: str) -> bytes:
            return http_response(308, b"", {"Location": location.format(port=home_port[0], other=other.port)})

        async with listening(answer) as home:
            home_port.append(home.port)
            url = f"{home.origin}/mcp"
            async with guarded_client(EgressGuard(EgressPolicy(allow_private=True), origins=[url])) as client:
                with anyio.fail_after(10), pytest.raises(EgressBlocked):
                    await client.get(url, follow_redirects=True)
        assert other.connections == 0


async def test_a_same_origin_redirect_is_followed_only_after_the_guard_checked_it_again() -> None:
    def answer(method: str, path: str) -> bytes:
        if path == "/mcp":
            return http_response(307, b"", {"Location": "/mcp/"})
        return http_response(body=b"arrived")

    asked: list[str] = []
    addresses = [["127.0.0.1"], ["169.254.169.254"]]

    async def resolver(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        return addresses[len(asked) - 1]

    async with listening(answer) as home:
        decisions: list[EgressDecision] = []
        url = f"{home.origin}/mcp"
        guard = EgressGuard(EgressPolicy(allow_private=True, observer=decisions.append), origins=[url])
        async with guarded_client(guard) as client:
            with anyio.fail_after(10):
                response = await client.get(url, follow_redirects=True)
        assert response.text == "arrived"
        assert [r["path"] for r in home.requests] == ["/mcp", "/mcp/"]
        assert [d.approved for d in decisions] == [True, True]
        assert [str(d.request.url) for d in decisions] == [url, f"{url}/"]

        # The followed request is checked at connect time too: a name that now resolves to a
        # metadata address stops the redirect before it leaves.
        named = f"http://mcp.patchbay.test:{home.port}/mcp"
        guard = EgressGuard(EgressPolicy(allow_private=True, resolver=resolver), origins=[named])
        async with guarded_client(guard) as client:
            with anyio.fail_after(10), pytest.raises(EgressBlocked):
                await client.get(named, follow_redirects=True)
        assert home.connections == 3


# --- error mapping -------------------------------------------------------------------------------


async def test_classify_maps_a_refusal_to_network_blocked_however_it_is_wrapped() -> None:
    blocked = EgressBlocked("10.0.0.1 is a private address", origin="http://10.0.0.1:80")
    assert classify(ExceptionGroup("x", [ConnectionRefusedError(), blocked]))[0] == ErrorCode.NETWORK_BLOCKED
    try:
        try:
            raise blocked
        except EgressBlocked as inner:
            raise httpx2.ConnectError("wrapped") from inner
    except httpx2.ConnectError as wrapped:
        code, message = classify(ExceptionGroup("y", [wrapped]))
    assert code == ErrorCode.NETWORK_BLOCKED
    assert "10.0.0.1 is a private address" in message
