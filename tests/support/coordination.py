"""Redis for the coordination tests: the machine's Redis on 127.0.0.1:6379 under a unique key
prefix per test, or a ``redis-server`` of a test's own (on a free port, no persistence) that the
test can stop and start again."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator

import redis

MACHINE_REDIS = "redis://127.0.0.1:6379/0"


@contextlib.contextmanager
def unique_prefix() -> Iterator[str]:
    """A key prefix no other test uses; every key under it is deleted afterwards."""
    prefix = f"patchbay-test:{uuid.uuid4().hex}:"
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2)
        try:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


def machine_keys(prefix: str) -> list[str]:
    """The keys under ``prefix`` in the machine's Redis, sorted."""
    client = redis.Redis.from_url(MACHINE_REDIS, socket_timeout=2, decode_responses=True)
    try:
        return sorted(client.scan_iter(match=f"{prefix}*"))
    finally:
        client.close()


class OwnRedis:
    """A ``redis-server`` on ``127.0.0.1:<port>`` that a test starts and stops (no persistence)."""

    def __init__(self, port: int, *args: str) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.args = args
        """Extra ``redis-server`` options (e.g. ``--requirepass``)."""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH")
        self._process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *self.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=0.2, socket_connect_timeout=0.2)
        protected = "--requirepass" in self.args
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                if self._process.poll() is not None:
                    raise RuntimeError(f"redis-server exited early with {self._process.returncode}")
                try:
                    if client.ping():
                        return
                except redis.exceptions.AuthenticationError:
                    if protected:  # it answers: it wants the password
                        return
                except redis.exceptions.RedisError:
                    pass
                time.sleep(0.05)  # no readiness event to wait on; bounded by the deadline
        finally:
            client.close()
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
