"""Two real ``patchbay serve`` processes on one data home and the machine's Redis: a probe lease
held by an instance that is killed mid-probe expires, and the other instance takes it over."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis
import requests

from tests.support.coordination import MACHINE_REDIS, unique_prefix
from tests.support.paths import FIXTURES
from tests.support.serve import serve_process

LEASE_TTL = 4.0


def wait_for(condition: Any, what: str, timeout: float = 20.0) -> Any:
    """Poll ``condition()`` (a Redis read: no event to wait on) until it is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_probe_lease_held_by_a_killed_instance_expires_and_the_other_instance_takes_it_over(tmp_path: Path) -> None:
    with unique_prefix() as prefix:
        env = {
            **os.environ,
            "PATCHBAY_REDIS_URL": MACHINE_REDIS,
            "PATCHBAY_REDIS_PREFIX": prefix,
            "PATCHBAY_PROBE_LEASE_TTL": str(LEASE_TTL),
        }
        home = tmp_path / "home"
        client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)

        def lease_owner() -> str | None:
            keys = [key for key in client.scan_iter(match=f"{prefix}lease:probe:*") if not key.endswith(":slots")]
            value = client.get(keys[0]) if keys else None
            return value if isinstance(value, str) else None

        try:
            # A probes for a minute; B gives up after one second once it may start
            with (
                serve_process(home, tmp_path, env={**env, "PATCHBAY_PROBE_CONNECT_TIMEOUT": "60"}) as a,
                serve_process(home, tmp_path, env={**env, "PATCHBAY_PROBE_CONNECT_TIMEOUT": "1"}) as b,
            ):
                assert a.info["coordination"] == b.info["coordination"] == MACHINE_REDIS
                created = a.session.post(
                    f"{a.url}/api/mcp/connectors",
                    json={
                        "name": "hang",
                        "target": {
                            "transport": "stdio",
                            "command": sys.executable,
                            "args": [str(FIXTURES / "hang_server.py")],
                        },
                    },
                    timeout=30,
                )
                assert created.status_code == 201, created.text

                def probe_on_a() -> None:
                    try:
                        a.session.post(f"{a.url}/api/mcp/connectors/hang/probe", timeout=60)
                    except requests.RequestException:
                        pass  # A is killed while it answers

                on_a = threading.Thread(target=probe_on_a, daemon=True)
                on_a.start()
                owner_a = wait_for(lambda: (o := lease_owner()) and f"-{a.process.pid}-" in o and o, "A's lease")

                a.process.send_signal(signal.SIGKILL)
                a.process.wait(timeout=10)
                assert lease_owner() == owner_a  # nobody released it: it stands until it expires
                on_a.join(timeout=30)

                answers: list[requests.Response] = []
                on_b = threading.Thread(
                    target=lambda: answers.append(b.session.post(f"{b.url}/api/mcp/connectors/hang/probe", timeout=60)),
                    daemon=True,
                )
                on_b.start()
                owner_b = wait_for(
                    lambda: (o := lease_owner()) and f"-{b.process.pid}-" in o and o,
                    "B's takeover",
                    timeout=LEASE_TTL * 10,
                )
                on_b.join(timeout=30)
                assert owner_b != owner_a
                assert not on_b.is_alive() and answers, "B's probe did not answer"
                report = answers[0].json()
                assert answers[0].status_code == 200 and (report["state"], report["code"]) == ("error", "timeout")
                wait_for(lambda: lease_owner() is None, "B's release", timeout=10)
        finally:
            client.close()
