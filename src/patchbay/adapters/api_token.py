"""The REST API's access token: ``<data home>/api-token``, mode 0600, one per data home.

``patchbay serve`` requires it on every request (``Authorization: Bearer <token>`` or the session
cookie its login URL sets); clients on this machine that run as the data home's owner read it
here, everyone else cannot. Usage::

    from patchbay.adapters.api_token import api_token
    token = api_token(settings.home)             # created on first use
    httpx2.get(url, headers={"Authorization": f"Bearer {token}"})

File contract: 43 URL-safe characters (:func:`secrets.token_urlsafe` of 32 bytes) and a newline.
It is created atomically (written to a temporary file, then hard-linked under its name, so two
processes creating it at once agree on one token and nobody ever reads a half-written one),
opened with ``O_NOFOLLOW`` (a symlink planted in its place is refused), a file with another
name elsewhere (a hard link: its link count is not 1) is refused, and a file found readable by
others is put back to 0600. Delete the file to rotate the token; running servers keep the old
one until restarted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path

from patchbay.adapters.atomic import write_new
from patchbay.core.errors import CanonicalStateUnavailable

__all__ = ["API_TOKEN_FILE", "api_token", "read_api_token"]

API_TOKEN_FILE = "api-token"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,128}")
_MAX_BYTES = 1024
_TEMPORARY = re.compile(rf"\.{re.escape(API_TOKEN_FILE)}\.[0-9a-f]{{16}}\.tmp")


def _unavailable(home: Path, exc: OSError | str) -> CanonicalStateUnavailable:
    if isinstance(exc, str):
        reason = exc
    else:
        reason = "it is a symlink" if exc.errno == errno.ELOOP else (exc.strerror or type(exc).__name__)
    return CanonicalStateUnavailable(f"the API token file {home / API_TOKEN_FILE} cannot be used: {reason}")


def _being_created(home: Path, info: os.stat_result) -> bool:
    """Whether the file's one other name is the temporary one :func:`api_token` links it from
    (and unlinks next): a reader that comes in between sees two links."""
    if info.st_nlink != 2:
        return False
    try:
        with os.scandir(home) as entries:
            return any(
                _TEMPORARY.fullmatch(entry.name) is not None
                and entry.inode() == info.st_ino
                and entry.stat(follow_symlinks=False).st_dev == info.st_dev
                for entry in entries
            )
    except OSError:
        return False


def read_api_token(home: Path) -> str | None:
    """The data home's API token, or None when there is none yet.

    Args:
        home: the data home (``Settings.home``).

    Raises:
        CanonicalStateUnavailable: ``canonical_state_unavailable`` when the file is a symlink, a
            hard link, not a regular file, unreadable or malformed (the message never quotes its
            content).
    """
    path = Path(home) / API_TOKEN_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unavailable(Path(home), exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _unavailable(Path(home), "it is not a regular file")
        if info.st_nlink != 1 and not _being_created(Path(home), info) and os.fstat(fd).st_nlink != 1:
            raise _unavailable(Path(home), "it is hard-linked (it has another name too)")
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o600)  # someone widened it: put it back
        data = os.read(fd, _MAX_BYTES + 1)
    except OSError as exc:
        raise _unavailable(Path(home), exc) from None
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if len(data) > _MAX_BYTES or not _TOKEN.fullmatch(token):
        raise _unavailable(Path(home), "it does not hold a token (delete it to make a new one)")
    return token


def api_token(home: Path) -> str:
    """The data home's API token, created (with the data home, mode 0700) when there is none.

    Args:
        home: the data home (``Settings.home``).

    Returns:
        The token: 43 URL-safe characters.

    Raises:
        CanonicalStateUnavailable: ``canonical_state_unavailable`` when the data home or the file
            cannot be created or read (see :func:`read_api_token`).
    """
    home = Path(home)
    token = read_api_token(home)
    if token is not None:
        return token
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        dir_fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _unavailable(home, exc) from None
    candidate = secrets.token_urlsafe(32)
    tmp = f".{API_TOKEN_FILE}.{secrets.token_hex(8)}.tmp"
    try:
        write_new(dir_fd, tmp, (candidate + "\n").encode("ascii"), 0o600)
        # link, not rename: it fails when another process created the file first, and then
        # both use that one
        with contextlib.suppress(FileExistsError):
            os.link(tmp, API_TOKEN_FILE, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        os.fsync(dir_fd)
    except OSError as exc:
        raise _unavailable(home, exc) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        os.close(dir_fd)
    token = read_api_token(home)
    if token is None:
        raise _unavailable(home, "it vanished while it was being created")
    return token
