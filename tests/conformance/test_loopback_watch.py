"""The listener watch: it sees a descendant's listening socket and flags every address off loopback."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conformance.loopback_watch import ListenerWatch


def test_the_listener_watch_sees_a_descendants_listening_socket() -> None:
    listen = (
        "import socket, sys\n"
        "s = socket.socket()\n"
        "s.bind(('127.0.0.1', 0))\n"
        "s.listen()\n"
        "print(s.getsockname()[1], flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", listen], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        watch = ListenerWatch(os.getpid())
        watch.sample()
        assert ("127.0.0.1", port) in watch.seen
        assert watch.non_loopback == []
    finally:
        child.stdin.close()
        child.wait(timeout=10)
        child.stdout.close()


def test_the_listener_watch_reports_every_address_off_loopback() -> None:
    watch = ListenerWatch(os.getpid())
    watch.seen = {("127.0.0.1", 1), ("::1", 2), ("0.0.0.0", 3), ("::", 4), ("192.168.1.5", 5)}
    assert watch.non_loopback == ["0.0.0.0:3", "192.168.1.5:5", "[::]:4"]
