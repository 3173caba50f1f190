"""LoopbackCallback: the loopback redirect endpoint of an authorization-code login (seed 003 §11.2:
state single use, 10-minute expiry, bound to the redirect URI; the page shows only success or
failure; RFC 8252 §7.3 loopback only)."""

from __future__ import annotations

from urllib.parse import urlencode

import anyio
import httpx2
import psutil
import pytest

from patchbay.adapters.oauth import STATE_TTL, LoopbackCallback
from patchbay.core.errors import AuthorizationFailed, ErrorCode

pytestmark = pytest.mark.anyio

CODE = "code-7f3a9c1e5b2d4f6a8c0e"
STATE = "state-2b4d6f8a0c1e3a5c7e9b"
SUCCESS = "Authorization complete"
FAILURE = "Authorization failed"


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def authorization_url(redirect_uri: str, state: str = STATE) -> str:
    query = {"response_type": "code", "client_id": "c1", "redirect_uri": redirect_uri, "state": state}
    return "http://127.0.0.1:9/authorize?" + urlencode(query)


async def visit(callback: LoopbackCallback, path: str = "/callback", **query: str) -> httpx2.Response:
    """What the browser does after the authorization server's 302: GET the redirect URI."""
    url = f"http://127.0.0.1:{callback.port}{path}" + (f"?{urlencode(query)}" if query else "")
    async with httpx2.AsyncClient(trust_env=False, timeout=10.0) as http:
        return await http.get(url)


async def nothing_arrives(callback: LoopbackCallback) -> None:
    with pytest.raises(AuthorizationFailed) as caught:
        await callback.wait(within=0.3)
    assert caught.value.details["error"] == "timeout"


async def test_a_redirect_completes_the_login_once_and_its_replay_is_refused() -> None:
    async with LoopbackCallback(connector_id="con_1") as callback:
        callback.expect(authorization_url(callback.redirect_uri))
        first = await visit(callback, code=CODE, state=STATE)
        with anyio.fail_after(5):
            result = await callback.wait()
        assert (result.code, result.state) == (CODE, STATE)
        assert first.status_code == 200 and SUCCESS in first.text

        replay = await visit(callback, code=CODE, state=STATE)
        assert replay.status_code == 400 and FAILURE in replay.text
        assert callback.refused == 1
        await nothing_arrives(callback)


async def test_the_page_never_shows_the_code_or_the_state() -> None:
    async with LoopbackCallback(connector_id="con_1") as callback:
        callback.expect(authorization_url(callback.redirect_uri))
        pages = [await visit(callback, code=CODE, state=STATE), await visit(callback, code=CODE, state=STATE)]
        pages.append(await visit(callback, code=CODE, state="unknown-" + STATE))
    for page in pages:
        assert CODE not in page.text and STATE not in page.text
        assert all(CODE not in value and STATE not in value for value in page.headers.values())
        assert page.headers["cache-control"] == "no-store"
        assert page.headers["referrer-policy"] == "no-referrer"


async def test_a_state_expires_after_ten_minutes() -> None:
    clock = FakeClock()
    async with LoopbackCallback(connector_id="con_1", clock=clock) as callback:
        assert STATE_TTL == 600.0
        callback.expect(authorization_url(callback.redirect_uri, state="early-" + STATE))
        callback.expect(authorization_url(callback.redirect_uri))
        clock.now += STATE_TTL - 1  # still valid one second before
        early = await visit(callback, code=CODE, state="early-" + STATE)
        assert early.status_code == 200
        with anyio.fail_after(5):
            assert (await callback.wait()).state == "early-" + STATE

        clock.now += 2  # ten minutes and one second after it was issued
        late = await visit(callback, code=CODE, state=STATE)
        assert late.status_code == 400 and FAILURE in late.text
        assert callback.refused == 1
        await nothing_arrives(callback)


async def test_a_state_is_bound_to_this_redirect_uri_and_path() -> None:
    async with LoopbackCallback(connector_id="con_1") as callback:
        other = f"http://127.0.0.1:{callback.port + 1}/callback"
        with pytest.raises(AuthorizationFailed) as caught:
            callback.expect(authorization_url(other, state="elsewhere-" + STATE))
        assert caught.value.details["error"] == "redirect_uri_mismatch"
        assert caught.value.code == ErrorCode.AUTH_REQUIRED
        # Never registered: a redirect carrying it is refused.
        assert (await visit(callback, code=CODE, state="elsewhere-" + STATE)).status_code == 400

        callback.expect(authorization_url(callback.redirect_uri))
        wrong_path = await visit(callback, "/elsewhere", code=CODE, state=STATE)
        assert wrong_path.status_code == 400 and FAILURE in wrong_path.text
        assert callback.refused == 2
        async with httpx2.AsyncClient(trust_env=False, timeout=10.0) as http:
            post = await http.post(f"{callback.redirect_uri}?{urlencode({'code': CODE, 'state': STATE})}")
        assert post.status_code == 400  # only a GET can complete it
        # The state is still good for the right path.
        assert (await visit(callback, code=CODE, state=STATE)).status_code == 200
        with anyio.fail_after(5):
            assert (await callback.wait()).code == CODE


async def test_an_authorization_request_without_state_is_refused() -> None:
    async with LoopbackCallback(connector_id="con_1") as callback:
        url = "http://127.0.0.1:9/authorize?" + urlencode({"redirect_uri": callback.redirect_uri})
        with pytest.raises(AuthorizationFailed) as caught:
            callback.expect(url)
        assert caught.value.details["error"] == "no_state"


async def test_access_denied_fails_the_login_and_the_page_says_it_failed() -> None:
    async with LoopbackCallback(connector_id="con_1") as callback:
        callback.expect(authorization_url(callback.redirect_uri))
        page = await visit(callback, error="access_denied", state=STATE)
        with anyio.fail_after(5), pytest.raises(AuthorizationFailed) as caught:
            await callback.wait()
        assert caught.value.details["error"] == "access_denied"
        assert caught.value.code == ErrorCode.AUTH_REQUIRED
        assert STATE not in page.text
        # Seed 003 §11.2: the page shows only success or failure -- and a denial is a failure.
        assert FAILURE in page.text and SUCCESS not in page.text


async def test_a_failing_verify_refuses_the_callback_and_fails_the_login() -> None:
    class Changed(Exception):
        pass

    async def verify() -> None:
        raise Changed("the connector's URL changed mid-login")

    async with LoopbackCallback(connector_id="con_1", verify=verify) as callback:
        callback.expect(authorization_url(callback.redirect_uri))
        page = await visit(callback, code=CODE, state=STATE)
        assert page.status_code == 400 and FAILURE in page.text
        with anyio.fail_after(5), pytest.raises(Changed):
            await callback.wait()
        assert callback.refused == 1


async def test_it_listens_on_ipv4_loopback_only() -> None:
    async with LoopbackCallback(connector_id="con_1") as callback:
        assert callback.redirect_uri == f"http://127.0.0.1:{callback.port}/callback"
        listening = [
            c
            for c in psutil.Process().net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == callback.port
        ]
        assert [c.laddr.ip for c in listening] == ["127.0.0.1"]
        other_addresses = [
            a.address
            for addresses in psutil.net_if_addrs().values()
            for a in addresses
            if a.family.name == "AF_INET" and not a.address.startswith("127.")
        ]
        for address in other_addresses:
            with anyio.fail_after(5), pytest.raises(OSError):
                await anyio.connect_tcp(address, callback.port)


async def test_a_busy_preferred_port_falls_back_to_a_free_one() -> None:
    async with LoopbackCallback(connector_id="con_1") as first:
        async with LoopbackCallback(connector_id="con_2", port=first.port) as second:
            assert second.port not in (0, first.port)
