"""The snapshot key: ``<data home>/snapshot.key``, 32 random bytes, mode 0600.

The control plane signs every runtime snapshot with this key and a runtime verifies it before use
(:mod:`patchbay.runtime.snapshot`). The key is created atomically on first use, opened with
``O_NOFOLLOW``, put back to 0600 when others may read it, and refused (never replaced) when it is
not a regular file of exactly :data:`KEY_BYTES` bytes.

Errors are :class:`~patchbay.core.errors.ConfigError` (``invalid_config``, field
``snapshot_key``); no message quotes key bytes.

Beside the key, the data home keeps each project's projection generation
(``<data home>/snapshot-generations/<project id>``, a decimal number): the store's change counter
of the newest snapshot the control plane wrote, or tried to write, for that project. A sealed file
older than it is a replay, and the loader refuses it.

Design: docs/security.md
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path

from patchbay.adapters.atomic import replace_file
from patchbay.core.errors import ConfigError

__all__ = [
    "GENERATIONS_DIR",
    "KEY_BYTES",
    "KEY_FILE",
    "load_generation",
    "load_key",
    "load_or_create_key",
    "record_generation",
]

KEY_FILE = "snapshot.key"
KEY_BYTES = 32
"""Length of the key (bytes): an HMAC-SHA-256 key of the hash's own size."""
_FIELD = "snapshot_key"
GENERATIONS_DIR = "snapshot-generations"
_PROJECT_ID = re.compile(r"prj_[0-9a-f]{16}")
_MAX_GENERATION_BYTES = 32


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link"
    return exc.strerror or type(exc).__name__


def _read(path: Path) -> bytes | None:
    """The key's bytes, or None when there is no key file.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot_key``): a symlink, not a regular file,
            unreadable, or not exactly :data:`KEY_BYTES` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(_FIELD, f"{path} cannot be opened ({_why(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(_FIELD, f"{path} is not a regular file")
        if info.st_mode & 0o077:
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)  # someone widened it: put it back
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(KEY_BYTES + 1)
    except OSError as exc:
        raise ConfigError(_FIELD, f"{path} cannot be read ({_why(exc)})") from None
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise ConfigError(_FIELD, f"{path} is corrupt (not {KEY_BYTES} bytes); remove it and re-project the workspaces")
    return data


def load_key(home: Path | str) -> bytes:
    """The data home's snapshot key, for verifying (never created here: a runtime that finds no
    key has nothing it could verify against).

    Args:
        home: the data home (``Settings.home``).

    Returns:
        :data:`KEY_BYTES` bytes.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot_key``): no key yet (no snapshot was
            ever signed in this data home), or the rules of :func:`_read`.
    """
    path = Path(home) / KEY_FILE
    data = _read(path)
    if data is None:
        raise ConfigError(
            _FIELD, f"there is no snapshot key at {path}: no snapshot was signed for this data home (re-project)"
        )
    return data


def load_or_create_key(home: Path | str) -> bytes:
    """The data home's snapshot key, created (32 random bytes, 0600; the home 0700) on first use.

    Args:
        home: the data home (``Settings.home``).

    Returns:
        :data:`KEY_BYTES` bytes; the same bytes in every process that uses this home.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot_key``): the home or key cannot be
            created or read, or the existing key breaks the rules of :func:`_read`.
    """
    home = Path(home)
    path = home / KEY_FILE
    data = _read(path)
    if data is not None:
        return data
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        dir_fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(_FIELD, f"the data home {home} cannot be used ({_why(exc)})") from None
    tmp = f".{KEY_FILE}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):  # another process created it first: use theirs
            os.link(tmp, KEY_FILE, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    except OSError as exc:
        raise ConfigError(_FIELD, f"{path} cannot be created ({_why(exc)})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        os.close(dir_fd)
    return load_key(home)


def _generation_name(project_id: str) -> str:
    if not _PROJECT_ID.fullmatch(project_id):
        raise ConfigError("project_id", "is not a project id (prj_ and 16 hex digits)")
    return project_id


def load_generation(home: Path | str, project_id: str) -> int:
    """The projection generation recorded for ``project_id`` in data home ``home``; 0 when none
    was recorded yet.

    Raises:
        ConfigError: ``invalid_config``: field ``project_id`` for a malformed id; field
            ``snapshot_key`` when the record is a symlink, not a regular file, unreadable or not
            a number (refused rather than read as 0, which would accept any older file).
    """
    path = Path(home) / GENERATIONS_DIR / _generation_name(project_id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise ConfigError(_FIELD, f"{path} cannot be opened ({_why(exc)})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(_FIELD, f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(_MAX_GENERATION_BYTES + 1)
    except OSError as exc:
        raise ConfigError(_FIELD, f"{path} cannot be read ({_why(exc)})") from None
    finally:
        os.close(fd)
    text = data.decode("ascii", errors="replace").strip()
    if len(data) > _MAX_GENERATION_BYTES or not text.isdigit():
        raise ConfigError(_FIELD, f"{path} is corrupt (not a number); re-project the workspace")
    return int(text)


def record_generation(home: Path | str, project_id: str, generation: int) -> None:
    """Raise ``project_id``'s projection generation in data home ``home`` to ``generation`` (a
    record already higher is kept). Callers hold the workspace's projection lock, so records of
    one project never race.

    Args:
        home: the data home (``Settings.home``); the directory is created 0700.
        project_id: ``prj_`` and 16 hex digits.
        generation: the store's change counter (``Repository.state_version()``), >= 0.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot_key``) when the record cannot be read
            or written; field ``project_id`` for a malformed id.
    """
    name = _generation_name(project_id)
    if generation <= load_generation(home, project_id):
        return
    folder = Path(home) / GENERATIONS_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(_FIELD, f"{folder} cannot be used ({_why(exc)})") from None
    try:
        replace_file(dir_fd, name, f"{generation}\n".encode("ascii"), 0o600)
    except OSError as exc:
        raise ConfigError(_FIELD, f"{folder / name} cannot be written ({_why(exc)})") from None
    finally:
        os.close(dir_fd)
