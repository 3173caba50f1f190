"""This process's instance identity: ``<hostname>-<pid>-<random>``, made once per process.

Several ``patchbay serve`` processes may share one PostgreSQL store; the id tells them apart in
``/api/health``, the serve log line and (with a shared store) every session event's
``instance`` field. It names a process, not a secret: hostname and pid are what ``ps`` shows.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import threading

__all__ = ["instance_id"]

_lock = threading.Lock()
_current: tuple[int, str] | None = None
_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


def instance_id() -> str:
    """This process's instance id, e.g. ``build-host-4242-3f9a1c2b``: the hostname (characters
    other than letters, digits, ``.`` and ``-`` become ``-``; at most 63), the pid and 8 random hex
    digits. Made on the first call; the same on every later call in this process (a forked child
    gets its own)."""
    global _current
    pid = os.getpid()
    with _lock:
        if _current is None or _current[0] != pid:
            host = _UNSAFE.sub("-", socket.gethostname()).strip("-")[:63] or "host"
            _current = (pid, f"{host}-{pid}-{secrets.token_hex(4)}")
        return _current[1]
