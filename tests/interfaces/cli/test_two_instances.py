"""Two real ``patchbay serve`` processes, each with its own data home, on one fresh PostgreSQL
schema and one Redis: they start together on an empty database; what one instance commits, the
other lists, probes and calls; a grant changed on one reaches the other's session before its next
call; a grant committed on one reaches a gateway host connected to the other (over ``/mcp``, and
a ``patchbay gateway --stdio`` on the same Redis) as ``tools/list_changed`` through Redis, not the
change-counter poll; optimistic revisions have one winner across both; a probe lease held by a killed instance
expires and the other takes over; Redis stopped mid-test degrades both, which keep answering, and
they recover when it returns; and the instances' Redis connections stay flat over repeated start
and stop (docs/deployment.md)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
import pytest
import redis
import requests
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.support.coordination import MACHINE_REDIS, OwnRedis, unique_prefix
from tests.support.paths import FIXTURES
from tests.support.postgres import postgres_schema
from tests.support.serve import Served, serve_process
from tests.support.servers import free_port

T = TypeVar("T")

TIME_SERVER = str(Path(sys.executable).with_name("mcp-server-time"))
HANG_SERVER = [str(FIXTURES / "hang_server.py")]
LEASE_TTL = 4.0


def wait_for(condition: Callable[[], T | None], what: str, timeout: float = 30.0) -> T:
    """Poll ``condition()`` until it is truthy and return it. Only for conditions with no event
    to wait on: another process's HTTP answer, a Redis key, Redis's list of clients."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)  # no event crosses the process boundary; bounded by the deadline
    raise AssertionError(f"timed out waiting for {what}")


def base_env(database_url: str, redis_url: str, prefix: str, **extra: str) -> dict[str, str]:
    """The environment every instance of one deployment shares."""
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PATCHBAY_BUILTINS": "off",
        "PATCHBAY_DATABASE_URL": database_url,
        "PATCHBAY_REDIS_URL": redis_url,
        "PATCHBAY_REDIS_PREFIX": prefix,
        **extra,
    }


@contextlib.contextmanager
def instance(tmp_path: Path, name: str, env: dict[str, str]) -> Iterator[Served]:
    """One ``patchbay serve`` with its own data home ``tmp_path/name`` (as on its own host)."""
    with serve_process(tmp_path / name, tmp_path, env=env) as served:
        yield served


def health(served: Served) -> dict[str, Any]:
    """``GET /api/health`` with the token (the details); bounded."""
    answer = served.session.get(f"{served.url}/api/health", timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def create(served: Served, name: str, command: str, args: list[str] | None = None) -> dict[str, Any]:
    body = {"name": name, "target": {"transport": "stdio", "command": command, "args": args or []}, "enabled": True}
    answer = served.session.post(f"{served.url}/api/mcp/connectors", json=body, timeout=30)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def two_instances_share_one_connector(tmp_path: Path, database: str, a: Served, b: Served) -> None:
    """What A commits, B lists, probes and calls; B's session is B's alone, its event log everyone's."""
    assert a.info["token"] == b.info["token"]
    assert a.info["instance"] != b.info["instance"]
    assert a.info["database"] == b.info["database"] == database
    for served in (a, b):
        details = health(served)
        assert details["status"] == "ok"
        assert details["database"] == {"backend": "postgresql", "ok": True}
        assert details["coordination"] == {"backend": "redis", "ok": True}

    created = create(a, "time", TIME_SERVER)

    listed = b.session.get(f"{b.url}/api/mcp/connectors", timeout=30)
    assert listed.status_code == 200, listed.text
    assert [(c["connector_id"], c["name"]) for c in listed.json()["connectors"]] == [(created["connector_id"], "time")]

    probed = b.session.post(f"{b.url}/api/mcp/connectors/time/probe", timeout=60)
    assert probed.status_code == 200, probed.text
    report = probed.json()
    assert report["state"] == "ready" and sorted(report["tools"]) == ["convert_time", "get_current_time"]
    # B's probe is in the shared store: A shows it
    seen_on_a = a.session.get(f"{a.url}/api/mcp/connectors/time", timeout=30).json()
    assert seen_on_a["last_probe"]["state"] == "ready" and seen_on_a["tool_count"] == 2

    granted = a.session.put(
        f"{a.url}/api/mcp/connectors/time/settings",
        json={"revision": 1, "approval_mode": "allow_all"},
        timeout=30,
    )
    assert granted.status_code == 200, granted.text

    opened = b.session.post(f"{b.url}/api/sessions", json={"cwd": str(tmp_path)}, timeout=30)
    assert opened.status_code == 201, opened.text
    sid = opened.json()["session_id"]
    called = b.session.post(
        f"{b.url}/api/sessions/{sid}/call",
        json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}},
        timeout=60,
    )
    assert called.status_code == 200, called.text
    assert called.json()["structured_content"]["timezone"] == "UTC"

    # the session is host-local (its runtime and servers run on B); its event log is shared
    assert a.session.get(f"{a.url}/api/sessions/{sid}", timeout=30).status_code == 404

    def completed_on_a() -> bool | None:
        events = a.session.get(f"{a.url}/api/sessions/{sid}/events", timeout=30)
        assert events.status_code == 200, events.text
        return "mcp.call.completed" in [event["type"] for event in events.json()["events"]] or None

    # B's event-log writer appends the call's last events in the background, after the answer
    wait_for(completed_on_a, "the call's completion in the shared event log, read through A")


def test_a_connector_added_through_a_is_listed_probed_and_callable_through_b(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix)
        with instance(tmp_path, "a", env) as a:
            # one token for the fleet: the operator gives every data home the same api-token file
            (tmp_path / "b").mkdir(mode=0o700)
            shared = tmp_path / "b" / "api-token"
            shared.write_bytes((tmp_path / "a" / "api-token").read_bytes())
            shared.chmod(0o600)
            with instance(tmp_path, "b", env) as b:
                two_instances_share_one_connector(tmp_path, database, a, b)


def subscribers(prefix: str) -> int:
    """How many connections are subscribed to the deployment's wake-up channel."""
    client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2)
    try:
        return int(client.pubsub_numsub(f"{prefix}wake")[0][1])
    finally:
        client.close()


def governed_time(served: Served) -> None:
    """``time`` created and probed through ``served``, ``get_current_time`` allowed: its catalog
    is cached, so a gateway lists both tools (``convert_time`` asks by default)."""
    create(served, "time", TIME_SERVER)
    probed = served.session.post(f"{served.url}/api/mcp/connectors/time/probe", timeout=60)
    assert probed.status_code == 200 and probed.json()["state"] == "ready", probed.text
    allowed = served.session.put(
        f"{served.url}/api/mcp/connectors/time/tools/get_current_time", json={"decision": "allow"}, timeout=30
    )
    assert allowed.status_code == 200, allowed.text


async def deny_current_time(served: Served) -> None:
    """Deny ``get_current_time`` through ``served`` (the commit the other side must hear of)."""
    async with httpx2.AsyncClient(headers=served.headers, timeout=30) as http:
        denied = await http.put(
            f"{served.url}/api/mcp/connectors/time/tools/get_current_time", json={"decision": "deny"}
        )
        assert denied.status_code == 200, denied.text


@pytest.mark.anyio
async def test_a_grant_committed_on_a_reaches_a_gateway_host_on_b_through_redis_not_the_poll(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix)
        # B reads the change counter once an hour: only a wake-up can reload its gateway in time
        slow_poll = {**env, "PATCHBAY_GATEWAY_RELOAD_POLL": "3600"}
        with instance(tmp_path, "a", env) as a, instance(tmp_path, "b", slow_poll) as b:
            governed_time(a)
            changed = anyio.Event()

            async def on_message(message: Any) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    changed.set()

            with anyio.fail_after(60):
                async with (
                    httpx2.AsyncClient(headers=b.headers, timeout=httpx2.Timeout(30, read=300)) as http,
                    Client(
                        streamable_http_client(f"{b.url}/mcp?mode=direct", http_client=http),
                        mode="legacy",
                        message_handler=on_message,
                    ) as host,
                ):
                    before = {tool.name for tool in (await host.list_tools()).tools}
                    assert before == {"time__get_current_time", "time__convert_time"}
                    # both instances' wake-up subscriptions are up (each subscribes in the background)
                    wait_for(lambda: subscribers(prefix) >= 2 or None, "both instances' subscriptions")
                    await deny_current_time(a)
                    await changed.wait()
                    after = {tool.name for tool in (await host.list_tools()).tools}
                    assert after == {"time__convert_time"}


@pytest.mark.anyio
async def test_a_grant_committed_on_a_serve_reaches_a_stdio_gateway_on_the_same_redis(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix)
        with instance(tmp_path, "a", env) as a:
            governed_time(a)
            changed = anyio.Event()

            async def on_message(message: Any) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    changed.set()

            params = StdioServerParameters(
                command=str(Path(sys.executable).with_name("patchbay")),
                args=[
                    "--home",
                    str(tmp_path / "g"),
                    "gateway",
                    "--stdio",
                    "--project",
                    str(tmp_path),
                    "--mode",
                    "direct",
                ],
                env={**env, "PATCHBAY_GATEWAY_RELOAD_POLL": "3600"},
            )
            with anyio.fail_after(60):
                async with Client(params, mode="legacy", message_handler=on_message) as host:
                    before = {tool.name for tool in (await host.list_tools()).tools}
                    assert before == {"time__get_current_time", "time__convert_time"}
                    wait_for(lambda: subscribers(prefix) >= 2 or None, "A's and the gateway's subscriptions")
                    await deny_current_time(a)
                    await changed.wait()
                    after = {tool.name for tool in (await host.list_tools()).tools}
                    assert after == {"time__convert_time"}


def test_two_instances_started_at_once_on_an_empty_database_both_migrate_and_serve(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix)
        managers = [instance(tmp_path, name, env) for name in ("a", "b")]
        with contextlib.ExitStack() as stack, ThreadPoolExecutor(max_workers=2) as pool:
            # both start on one empty schema: one migrates, the other waits for it
            entered = [pool.submit(manager.__enter__) for manager in managers]
            started: list[Served] = []
            failures: list[BaseException] = []
            for manager, future in zip(managers, entered, strict=True):
                try:
                    started.append(future.result(timeout=120))
                except Exception as exc:  # the other one is still stopped below
                    failures.append(exc)
                else:
                    stack.callback(manager.__exit__, None, None, None)
            if failures:
                raise failures[0]
            a, b = started
            for served in started:
                assert health(served)["database"] == {"backend": "postgresql", "ok": True}
            create(a, "time", TIME_SERVER)
            listed = b.session.get(f"{b.url}/api/mcp/connectors", timeout=30)
            assert [c["name"] for c in listed.json()["connectors"]] == ["time"]


def test_a_grant_changed_through_b_reaches_a_s_session_before_its_next_call(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix)
        with instance(tmp_path, "a", env) as a, instance(tmp_path, "b", env) as b:
            create(a, "time", TIME_SERVER)
            allowed = a.session.put(
                f"{a.url}/api/mcp/connectors/time/tools/get_current_time", json={"decision": "allow"}, timeout=30
            )
            assert allowed.status_code == 200, allowed.text
            opened = a.session.post(f"{a.url}/api/sessions", json={"cwd": str(tmp_path)}, timeout=30)
            assert opened.status_code == 201, opened.text
            sid = opened.json()["session_id"]

            def call() -> requests.Response:
                return a.session.post(
                    f"{a.url}/api/sessions/{sid}/call",
                    json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}},
                    timeout=60,
                )

            assert call().status_code == 200
            denied = b.session.put(
                f"{b.url}/api/mcp/connectors/time/tools/get_current_time", json={"decision": "deny"}, timeout=30
            )
            assert denied.status_code == 200, denied.text
            refused = call()  # the very next call on A, with no wait in between
            # a global deny takes the tool out of the projection: A's session was rebuilt first
            assert (refused.status_code, refused.json()["error"]["code"]) == (422, "unknown_tool"), refused.text
            info = a.session.get(f"{a.url}/api/sessions/{sid}", timeout=30).json()
            assert (info["state"], info["builds"]) == ("ready", 2)


def test_twenty_concurrent_patches_across_both_instances_have_exactly_one_winner(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix)
        with instance(tmp_path, "a", env) as a, instance(tmp_path, "b", env) as b:
            created = create(a, "time", TIME_SERVER)
            assert created["revision"] == 1
            start = threading.Barrier(20)

            def patch(index: int) -> tuple[int, dict[str, Any], str]:
                served = (a, b)[index % 2]
                name = f"writer {index}"
                start.wait(timeout=30)  # all twenty leave together
                answer = served.session.patch(
                    f"{served.url}/api/mcp/connectors/time", json={"revision": 1, "display_name": name}, timeout=60
                )
                return answer.status_code, answer.json(), name

            with ThreadPoolExecutor(max_workers=20) as pool:
                outcomes = list(pool.map(patch, range(20)))

            winners = [(body, name) for status, body, name in outcomes if status == 200]
            losers = [body for status, body, _ in outcomes if status != 200]
            assert len(winners) == 1, [status for status, _, _ in outcomes]
            assert {(status, body["error"]["code"]) for status, body, _ in outcomes if status != 200} == {
                (409, "revision_conflict")
            }
            assert len(losers) == 19
            won, name = winners[0]
            assert (won["revision"], won["display_name"]) == (2, name)
            for served in (a, b):  # both read the one committed state
                final = served.session.get(f"{served.url}/api/mcp/connectors/time", timeout=30).json()
                assert (final["revision"], final["display_name"]) == (2, name)


def test_a_probe_lease_held_by_a_killed_instance_expires_and_the_other_instance_takes_it_over(tmp_path: Path) -> None:
    with postgres_schema() as database, unique_prefix() as prefix:
        env = base_env(database, MACHINE_REDIS, prefix, PATCHBAY_PROBE_LEASE_TTL=str(LEASE_TTL))
        client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)

        def lease_owner() -> str | None:
            keys = [key for key in client.scan_iter(match=f"{prefix}lease:probe:*") if not key.endswith(":slots")]
            value = client.get(keys[0]) if keys else None
            return value if isinstance(value, str) else None

        try:
            # A probes for a minute; B gives up one second after it may start
            with (
                instance(tmp_path, "a", {**env, "PATCHBAY_PROBE_CONNECT_TIMEOUT": "60"}) as a,
                instance(tmp_path, "b", {**env, "PATCHBAY_PROBE_CONNECT_TIMEOUT": "1"}) as b,
            ):
                create(a, "hang", sys.executable, HANG_SERVER)

                def probe_on_a() -> None:
                    with contextlib.suppress(requests.RequestException):  # A is killed while it answers
                        a.session.post(f"{a.url}/api/mcp/connectors/hang/probe", timeout=60)

                on_a = threading.Thread(target=probe_on_a, daemon=True)
                on_a.start()
                owner_a = wait_for(
                    lambda: (o := lease_owner()) and o.startswith(f"{a.info['instance']}/") and o, "A's lease"
                )

                a.process.send_signal(signal.SIGKILL)
                a.process.wait(timeout=10)
                on_a.join(timeout=30)
                assert lease_owner() == owner_a  # nobody released it: it stands until it expires

                answers: list[requests.Response] = []
                on_b = threading.Thread(
                    target=lambda: answers.append(b.session.post(f"{b.url}/api/mcp/connectors/hang/probe", timeout=60)),
                    daemon=True,
                )
                taken_at = time.monotonic()
                on_b.start()
                owner_b = wait_for(
                    lambda: (o := lease_owner()) and o.startswith(f"{b.info['instance']}/") and o,
                    "B's takeover",
                    timeout=LEASE_TTL * 10,
                )
                on_b.join(timeout=30)
                assert owner_b != owner_a
                assert time.monotonic() - taken_at <= LEASE_TTL * 10
                assert not on_b.is_alive() and answers, "B's probe did not answer"
                report = answers[0].json()
                assert answers[0].status_code == 200 and (report["state"], report["code"]) == ("error", "timeout")
                wait_for(lambda: lease_owner() is None, "B's release", timeout=10)
        finally:
            client.close()


def test_redis_stopped_mid_test_degrades_both_instances_which_keep_answering_and_recover(tmp_path: Path) -> None:
    own = OwnRedis(free_port())
    own.start()
    try:
        with postgres_schema() as database:
            env = base_env(database, own.url, "patchbay-two:")
            with instance(tmp_path, "a", env) as a, instance(tmp_path, "b", env) as b:
                create(a, "time", TIME_SERVER)
                allowed = a.session.put(
                    f"{a.url}/api/mcp/connectors/time/settings",
                    json={"revision": 1, "approval_mode": "allow_all"},
                    timeout=30,
                )
                assert allowed.status_code == 200, allowed.text
                sessions: dict[str, str] = {}
                for served in (a, b):
                    assert health(served)["coordination"] == {"backend": "redis", "ok": True}
                    opened = served.session.post(f"{served.url}/api/sessions", json={"cwd": str(tmp_path)}, timeout=30)
                    assert opened.status_code == 201, opened.text
                    sessions[served.url] = opened.json()["session_id"]

                def call(served: Served) -> requests.Response:
                    return served.session.post(
                        f"{served.url}/api/sessions/{sessions[served.url]}/call",
                        json={"tool": "mcp.time.get_current_time", "arguments": {"timezone": "UTC"}},
                        timeout=60,
                    )

                own.stop()
                for served in (a, b):
                    degraded = wait_for(
                        lambda s=served: (h := health(s))["status"] == "degraded" and h, "degraded coordination"
                    )
                    assert degraded["coordination"] == {"backend": "redis", "ok": False}
                    assert degraded["database"] == {"backend": "postgresql", "ok": True}
                    # requests still answer, from the store, in bounded time
                    started = time.monotonic()
                    listed = served.session.get(f"{served.url}/api/mcp/connectors", timeout=10)
                    assert listed.status_code == 200 and [c["name"] for c in listed.json()["connectors"]] == ["time"]
                    assert time.monotonic() - started < 5  # no wait on Redis beyond its timeout
                    called = call(served)
                    assert called.status_code == 200, called.text
                    probed = served.session.post(f"{served.url}/api/mcp/connectors/time/probe", timeout=60)
                    assert probed.status_code == 200 and probed.json()["state"] == "ready", probed.text
                    assert time.monotonic() - started < 30

                own.start()
                for served in (a, b):
                    # the stores retry Redis at most every 2 s: poll the health answer
                    recovered = wait_for(lambda s=served: (h := health(s))["status"] == "ok" and h, "recovery")
                    assert recovered["coordination"] == {"backend": "redis", "ok": True}
                    assert call(served).status_code == 200
    finally:
        own.stop()


def _clients(server: redis.Redis, instances: list[str]) -> list[str]:
    """The names of Redis's clients that belong to ``instances`` (``CLIENT LIST``)."""
    return sorted(
        str(entry.get("name", ""))
        for entry in server.client_list()
        if any(str(entry.get("name", "")).endswith(f"-{ident}") for ident in instances)
    )


def test_the_instances_redis_connections_stay_flat_over_repeated_start_and_stop(tmp_path: Path) -> None:
    own = OwnRedis(free_port())
    own.start()
    server = redis.Redis.from_url(own.url, socket_timeout=2, decode_responses=True)
    try:
        with postgres_schema() as database:
            env = base_env(database, own.url, "patchbay-two:")
            baseline = len(server.client_list())
            per_round: list[tuple[int, int]] = []
            for round_ in range(3):
                with instance(tmp_path, f"a{round_}", env) as a, instance(tmp_path, f"b{round_}", env) as b:
                    if round_ == 0:
                        create(a, "time", TIME_SERVER)
                    ids = [a.info["instance"], b.info["instance"]]
                    for served in (a, b):  # use every coordination path once: health, probe, status
                        assert health(served)["status"] == "ok"
                        probed = served.session.post(f"{served.url}/api/mcp/connectors/time/probe", timeout=60)
                        assert probed.status_code == 200 and probed.json()["state"] == "ready", probed.text
                    names = _clients(server, ids)
                    assert names, "the instances' Redis clients carry no name with their instance id"
                    # every connection but this test's own is named for the instance that holds it
                    assert len(server.client_list()) == baseline + len(names), server.client_list()
                    for _ in range(10):  # more requests reuse the same kinds of connections
                        for served in (a, b):
                            assert health(served)["status"] == "ok"
                            assert served.session.get(f"{served.url}/api/mcp/connectors", timeout=10).ok
                    # (a pool opens a second connection when a background status write overlaps a
                    # request: how many is a matter of timing, which kinds and whose is not)
                    kinds = sorted(set(_clients(server, ids)))
                    assert kinds == sorted(set(names))
                    per_round.append((len(kinds), len({n.rsplit("-", 3)[0] for n in kinds})))
                # gone with the processes: Redis notices the closed sockets on its own schedule
                wait_for(lambda ids=ids: not _clients(server, ids), "the instances' clients to go", timeout=15)
                wait_for(lambda: len(server.client_list()) == baseline, "Redis's client count back at its baseline")
            assert len(set(per_round)) == 1, per_round
    finally:
        server.close()
        own.stop()
