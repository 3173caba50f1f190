"""Turning database and filesystem failures into ``CanonicalStateUnavailable`` at the store boundary.

What counts as "the canonical store is unavailable":

- ``sqlalchemy.exc.OperationalError`` and ``InterfaceError`` (cannot open, read-only, locked,
  disk I/O, disk full, server gone), and a plain ``DatabaseError`` (SQLite's "file is not a
  database", "database disk image is malformed");
- ``OSError`` (the data home is a file, sits under a file, cannot be created);
- the same ``sqlite3`` exceptions, should one escape unwrapped.

Not translated, because they are about the request or the code, not the store:
``IntegrityError`` (mapped to ``ConfigError`` and friends where the repository expects one),
``DataError``, ``ProgrammingError`` and ``NotSupportedError``.

The message is one line: ``database <path> <what> (<driver's first line>)``. It never contains
SQL text or bound parameters (SQLAlchemy's own ``str(exc)`` does), and PostgreSQL URLs are
shown with the password hidden.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from urllib.parse import urlsplit

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    DatabaseError,
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
)

from patchbay.core.errors import CanonicalStateUnavailable

__all__ = ["database_label", "is_unavailable", "unavailable"]

#: Exceptions that may mean "unavailable"; :func:`is_unavailable` has the final word.
CANDIDATES: tuple[type[BaseException], ...] = (DBAPIError, OSError, sqlite3.Error)

_NOT_UNAVAILABLE: tuple[type[BaseException], ...] = (
    IntegrityError,
    DataError,
    ProgrammingError,
    NotSupportedError,
    sqlite3.IntegrityError,
    sqlite3.DataError,
    sqlite3.ProgrammingError,
    sqlite3.NotSupportedError,
)
_MAX_DETAIL = 300


def is_unavailable(exc: BaseException) -> bool:
    """True when ``exc`` means the store cannot be used (see the module docstring)."""
    if isinstance(exc, _NOT_UNAVAILABLE):
        return False
    return isinstance(exc, (OperationalError, InterfaceError, DatabaseError, OSError, sqlite3.Error))


def database_label(url: str | URL) -> str:
    """How messages name a database: the SQLite file path, or the URL without its password."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return parsed.render_as_string(hide_password=True)
    database = parsed.database or ":memory:"
    if database.startswith("file:"):  # sqlite:///file:/path?mode=ro&uri=true
        database = urlsplit(database).path or database
    return database


def unavailable(label: str, exc: BaseException) -> CanonicalStateUnavailable:
    """The one-line ``CanonicalStateUnavailable`` for ``exc`` on database ``label``.

    Raise it ``from None``: the chained SQLAlchemy exception would print SQL and parameters.
    """
    what, detail = _describe(label, exc)
    message = f"database {_one_line(label)} {what}" + (f" ({detail})" if detail else "")
    return CanonicalStateUnavailable(message, details={"database": label, "cause": detail or what})


def _describe(label: str, exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, OSError):
        return _describe_os_error(exc)
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    detail = _one_line(str(orig)) or type(orig).__name__
    lowered = detail.lower()
    if "readonly" in lowered or "read-only" in lowered:
        return "is read-only", detail
    if "file is not a database" in lowered:
        return "is not a SQLite database", detail
    if "malformed" in lowered or "corrupt" in lowered:
        return "is corrupt", detail
    if "locked" in lowered or "busy" in lowered:
        return "is locked by another process; try again", detail
    if "disk is full" in lowered:
        return "is on a full disk", detail
    if "unable to open" in lowered or "disk i/o error" in lowered:
        if os.path.isdir(label):
            return "is a directory, not a file", detail
        if _read_only_path(label):
            return "is read-only: the file or its directory cannot be written", detail
        return "cannot be opened", detail
    return "is unavailable", detail


def _describe_os_error(exc: OSError) -> tuple[str, str]:
    where = _one_line(os.fsdecode(exc.filename)) if exc.filename is not None else ""
    if exc.errno == errno.EEXIST and where:
        return "cannot be created", f"{where} exists and is not a directory"
    if exc.errno == errno.ENOTDIR and where:
        return "cannot be created", f"a parent of {where} is not a directory"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "is read-only", f"{exc.strerror}: {where}" if where else str(exc.strerror)
    reason = exc.strerror or type(exc).__name__
    return "cannot be created or opened", f"{reason}: {where}" if where else reason


def _read_only_path(path: str) -> bool:
    if not path or path == ":memory:":
        return False
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return True
    return os.path.isdir(directory) and not os.access(directory, os.W_OK)


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    first = re.sub(r"[\x00-\x1f\x7f]+", " ", first).strip()
    return first if len(first) <= _MAX_DETAIL else first[: _MAX_DETAIL - 1] + "…"
