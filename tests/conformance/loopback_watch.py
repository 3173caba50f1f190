"""Which TCP listeners a process tree opens: the conformance runner's proof that every scenario
server (and every client's callback server) stayed on loopback."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import psutil

__all__ = ["ListenerWatch"]


class ListenerWatch:
    """Samples the listening TCP sockets of a process and its descendants until stopped.

    Linux only (``/proc``), and cheap on purpose -- it runs beside 26 clients on two cores: each
    sample lists the tree's socket inodes from ``/proc/<pid>/fd`` and reads the LISTEN rows of
    ``/proc/net/tcp`` and ``tcp6`` once.
    """

    def __init__(self, pid: int, interval: float = 0.25):
        self.pid = pid
        self.interval = interval
        self.seen: set[tuple[str, int]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="conformance-listener-watch", daemon=True)

    def __enter__(self) -> ListenerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self.sample()
            # A monitor's sampling period (no event exists for "a socket started listening").
            if self._stop.wait(self.interval):
                return

    def sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            pids = [root.pid, *(child.pid for child in root.children(recursive=True))]
        except psutil.Error:
            return
        inodes = _socket_inodes(pids)
        if inodes:
            self.seen |= {(ip, port) for ip, port, inode in _tcp_listeners() if inode in inodes}

    @property
    def non_loopback(self) -> list[str]:
        return sorted(
            f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
            for ip, port in self.seen
            if not ipaddress.ip_address(ip).is_loopback
        )


def _socket_inodes(pids: Iterable[int]) -> set[str]:
    """The socket inodes the processes ``pids`` hold open."""
    inodes: set[str] = set()
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                link = os.readlink(f"{fd_dir}/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    return inodes


def _tcp_listeners() -> list[tuple[str, int, str]]:
    """``(ip, port, inode)`` of every listening TCP socket in ``/proc/net/tcp`` and ``tcp6``."""
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            # The kernel prints each 32-bit word of the address in host (little-endian) order.
            packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            rows.append((str(ipaddress.ip_address(packed)), int(port, 16), fields[9]))
    return rows
