"""This process's identity among several Patchbay instances.

Every ``patchbay serve`` (and every CLI process) gets one id when it first asks, kept for the
life of the process: ``<host>-<pid>-<random>``. The random part makes two processes distinct even
when a pid is reused on the same host, or two containers share a hostname and pid. The id names a
lease's owner in Redis, so a person reading ``redis-cli`` can tell which instance holds what.
"""

from __future__ import annotations

import os
import re
import secrets
import socket

__all__ = ["instance_id"]

_ID: dict[int, str] = {}  # pid -> id: a forked child gets its own


def instance_id() -> str:
    """This process's unique instance id, e.g. ``"build-7-12345-3f9a1c2e"``.

    Stable for the life of the process (a forked child gets a new one); at most 64 characters of
    ``[A-Za-z0-9._-]``. Never raises.
    """
    pid = os.getpid()
    found = _ID.get(pid)
    if found is None:
        host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:32] or "host"
        found = _ID[pid] = f"{host}-{pid}-{secrets.token_hex(4)}"
    return found
