"""Atomic file replacement inside an open directory, and the exclusive lock that orders its
writers (the credential store, runtime snapshots).

A file is replaced by writing a temporary file next to it (created exclusively with
``O_NOFOLLOW``, so neither an existing file nor a symlink planted under its name is ever written
through), ``fsync``-ing it, renaming it over the target (``os.replace``, atomic on POSIX) and
``fsync``-ing the directory so the rename itself is durable. A reader sees the old file or the new
one, never a mix; a failed write leaves the old file and no temporary file behind.

Writers of one file take an exclusive ``flock`` on a sibling lock file first
(:func:`lock_exclusive`), so the last writer to take it writes the newest state. The caller owns
``dir_fd`` and the lock file's descriptor; paths are names inside the directory. Content is
bytes, or a sequence of bytes written one after another (``writev``) without joining them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import time
from collections.abc import Sequence

__all__ = ["Content", "lock_exclusive", "replace_file", "write_new"]

_LOCK_POLL_SECONDS = 0.01
_IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 16
"""Most buffers one ``writev`` takes (POSIX guarantees at least 16)."""

Content = bytes | Sequence[bytes]
"""A file's whole content: bytes, or parts whose concatenation it is."""


def lock_exclusive(fd: int, timeout: float) -> bool:
    """Take an exclusive ``flock`` on open file ``fd``, waiting up to ``timeout`` seconds.

    ``flock`` has no timeout of its own, so this polls every 10 ms. The lock is released when
    ``fd`` is closed.

    Returns:
        True once the lock is held; False when another holder kept it for ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_LOCK_POLL_SECONDS)  # another writer holds it


def write_new(dir_fd: int, name: str, data: Content, mode: int) -> None:
    """Create ``name`` in ``dir_fd`` (never an existing file or symlink), write ``data``, fsync.

    Args:
        dir_fd: an open directory.
        name: a file name inside it.
        data: the whole content (:data:`Content`).
        mode: the file's permission bits, set exactly (whatever the umask).

    Raises:
        OSError: the file exists (``EEXIST``), cannot be created, written or synced.
    """
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)  # exactly this mode, whatever the umask
        _write_all(fd, (data,) if isinstance(data, bytes) else data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, parts: Sequence[bytes]) -> None:
    """Write ``parts`` in order to ``fd``, as few ``writev`` calls as the kernel allows."""
    pending = [memoryview(part) for part in parts if part]
    first = 0
    while first < len(pending):
        written = os.writev(fd, pending[first : first + _IOV_MAX])
        if written == 0:  # a regular file takes at least one byte or raises (ENOSPC, EIO)
            raise OSError(errno.EIO, "the write made no progress")
        while written:  # a short write: skip what went out, resume inside the part it stopped in
            size = len(pending[first])
            if written < size:
                pending[first] = pending[first][written:]
                break
            written -= size
            first += 1


def replace_file(dir_fd: int, name: str, data: Content, mode: int, *, strict_dir_sync: bool = True) -> None:
    """Atomically replace ``name`` in ``dir_fd`` with ``data``: a temporary ``.<name>.<hex>.tmp``,
    fsync, rename over ``name``, fsync of the directory.

    Args:
        dir_fd: an open directory (the caller keeps it open and closes it).
        name: the target's file name inside it.
        data: the whole new content (:data:`Content`).
        mode: the new file's permission bits.
        strict_dir_sync: when false, a failing fsync of the directory after the rename is ignored
            (the new content is already in place; only the rename's durability is at stake).

    Raises:
        OSError: the temporary file cannot be written, the rename fails (the temporary file is
            removed; the old file is untouched), or, with ``strict_dir_sync``, the directory
            cannot be synced.
    """
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    try:
        write_new(dir_fd, tmp, data, mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    if strict_dir_sync:
        os.fsync(dir_fd)
        return
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)
