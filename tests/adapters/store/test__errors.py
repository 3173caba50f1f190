"""An unusable store is ``CanonicalStateUnavailable`` (seed 003 §15), with one-line messages; file modes; locking.

The tests run as root, which ignores file modes: read-only databases are made with ``chattr +i``
(skipped where the filesystem refuses it) or SQLite's ``mode=ro`` URI, never with ``chmod``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import event, func, select

from patchbay.adapters.store import Repository, create_engine_for, db, open_store
from patchbay.adapters.store.tables import mcp_global_tool_grants
from patchbay.core.errors import CanonicalStateUnavailable, ErrorCode
from patchbay.core.models import StdioTarget
from patchbay.core.settings import Settings

STDIO = StdioTarget(command="mcp-server-time")


def _assert_one_line(error: CanonicalStateUnavailable, database: Path | str, *fragments: str) -> None:
    """The stable code, one line naming the database, no SQL, no chained SQLAlchemy exception."""
    message = str(error)
    assert error.code == ErrorCode.CANONICAL_STATE_UNAVAILABLE
    assert "\n" not in message and "\r" not in message
    assert f"database {database} " in message
    for fragment in fragments:
        assert fragment in message
    for leak in ("[SQL", "[parameters", "INSERT", "SELECT", "UPDATE", "sqlalche.me"):
        assert leak not in message
    assert error.__cause__ is None and error.__suppress_context__
    assert error.details["database"] == str(database)


def _grant_count(repo: Repository) -> int:
    with repo.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(mcp_global_tool_grants)).scalar_one()


@contextmanager
def _immutable(*paths: Path) -> Iterator[None]:
    """``chattr +i`` (binding even for root) for the block; fails in CI and skips elsewhere where unsupported."""
    done: list[Path] = []
    try:
        for path in paths:
            result = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
            if result.returncode != 0:
                message = f"chattr +i unavailable here: {result.stderr.decode(errors='replace').strip()}"
                if os.environ.get("CI"):
                    pytest.fail(message)  # CI must prove the read-only case, not skip it
                pytest.skip(message)
            done.append(path)
        yield
    finally:
        for path in done:
            subprocess.run(["chattr", "-i", str(path)], check=True)


def _closed_store(home: Path) -> Path:
    """A migrated store with one connector, closed (so no -wal/-shm is left); its database path."""
    repo = open_store(Settings(home=home))
    repo.connectors.create("time", "Time", STDIO)
    repo.close()
    return home / "patchbay.db"


# -- the data home ---------------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="a data home path that is a file")
def test_a_data_home_that_is_a_file_is_unavailable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory")

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=home))

    _assert_one_line(info.value, home / "patchbay.db", "cannot be created", f"{home} exists and is not a directory")


@pytest.mark.sqlite_only(reason="a data home path under a file")
def test_a_data_home_under_a_file_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    home = tmp_path / "file" / "home"

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=home))

    _assert_one_line(info.value, home / "patchbay.db", "cannot be created", "is not a directory")


@pytest.mark.sqlite_only(reason="the SQLite file's directory")
def test_a_data_home_that_cannot_be_created_is_unavailable(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    home = parent / "home"

    with _immutable(parent), pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=home))

    _assert_one_line(info.value, home / "patchbay.db", "is read-only")
    assert not home.exists()


@pytest.mark.sqlite_only(reason="the SQLite file's path")
def test_a_database_path_that_is_a_directory_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "patchbay.db").mkdir()

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=tmp_path))

    _assert_one_line(info.value, tmp_path / "patchbay.db", "is a directory")


# -- read-only databases -----------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="a read-only SQLite file's directory")
def test_a_read_only_data_home_is_unavailable(tmp_path: Path) -> None:
    database = _closed_store(tmp_path / "home")

    with _immutable(database.parent), pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=database.parent))  # SQLite cannot create patchbay.db-wal / -shm

    _assert_one_line(info.value, database, "is read-only", "unable to open database file")


@pytest.mark.sqlite_only(reason="a read-only SQLite file")
def test_a_read_only_file_and_home_are_unavailable(tmp_path: Path) -> None:
    database = _closed_store(tmp_path / "home")

    with _immutable(database, database.parent), pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=database.parent))

    _assert_one_line(info.value, database, "is read-only")


@pytest.mark.sqlite_only(reason="a read-only SQLite file")
def test_a_new_read_only_database_file_cannot_be_migrated(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "patchbay.db").touch()

    with _immutable(home / "patchbay.db"), pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=home))

    _assert_one_line(info.value, home / "patchbay.db", "is read-only", "attempt to write a readonly database")


def test_opening_read_only_through_the_uri_fails_the_migration(tmp_path: Path) -> None:
    database = tmp_path / "patchbay.db"
    database.touch()  # mode=ro never creates the file; an empty file is an empty database

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=tmp_path, database_url=f"sqlite:///file:{database}?mode=ro&uri=true"))

    _assert_one_line(info.value, database, "is read-only", "attempt to write a readonly database")


@pytest.mark.sqlite_only(reason="a read-only SQLite file")
def test_repository_writes_on_a_read_only_database_are_unavailable(tmp_path: Path) -> None:
    database = _closed_store(tmp_path)
    repo = Repository(create_engine_for(f"sqlite:///file:{database}?mode=ro&uri=true"))
    try:
        connector = repo.connectors.get_by_name("time")  # reads still work
        writes = [
            lambda: repo.connectors.create("other", "Other", STDIO),
            lambda: repo.grants.set_global(connector.connector_id, "get_time", "allow"),
            lambda: repo.connectors.update_settings(connector.connector_id, 1, enabled=False),
            lambda: repo.projects.ensure(tmp_path),
            lambda: repo.connectors.delete(connector.connector_id),
        ]
        for write in writes:
            with pytest.raises(CanonicalStateUnavailable) as info:
                write()
            _assert_one_line(info.value, database, "is read-only (attempt to write a readonly database)")
        assert [c.name for c in repo.connectors.list_all()] == ["time"]
    finally:
        repo.close()


# -- corrupt databases -------------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="a SQLite file's contents")
def test_a_file_that_is_not_a_database_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "patchbay.db").write_bytes(b"this is not SQLite\n" * 512)

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(home=tmp_path))

    _assert_one_line(info.value, tmp_path / "patchbay.db", "is not a SQLite database (file is not a database)")


@pytest.mark.sqlite_only(reason="a SQLite file's contents")
def test_a_malformed_database_is_unavailable(tmp_path: Path) -> None:
    repo = open_store(Settings(home=tmp_path))
    for i in range(100):
        repo.connectors.create(f"c{i}", "C" * 500, STDIO)
    repo.close()  # checkpoints the WAL into patchbay.db
    database = tmp_path / "patchbay.db"
    data = bytearray(database.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    data[2 * page_size :] = b"\xab" * (len(data) - 2 * page_size)  # keep the header and page 1 (the schema)
    database.write_bytes(bytes(data))

    with pytest.raises(CanonicalStateUnavailable) as info:
        repo = open_store(Settings(home=tmp_path))
        try:
            repo.connectors.list_all()
        finally:
            repo.close()

    _assert_one_line(info.value, database, "is corrupt (database disk image is malformed)")


def test_an_unreachable_postgres_is_unavailable_without_the_password() -> None:
    url = "postgresql+psycopg://patchbay:s3cret@127.0.0.1:1/patchbay?connect_timeout=3"

    with pytest.raises(CanonicalStateUnavailable) as info:
        open_store(Settings(database_url=url))

    shown = "postgresql+psycopg://patchbay:***@127.0.0.1:1/patchbay?connect_timeout=3"
    _assert_one_line(info.value, shown, "is unavailable")
    assert "s3cret" not in str(info.value) and "s3cret" not in repr(info.value.details)


# -- file modes ----------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.sqlite_only(reason="the SQLite file's mode")
@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_a_new_data_home_is_0700_and_the_database_files_0600(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "data" / "patchbay"
    previous = os.umask(umask)
    try:
        repo = open_store(Settings(home=home))
        try:
            repo.connectors.create("time", "Time", STDIO)
            assert _mode(home) == 0o700
            for name in ("patchbay.db", "patchbay.db-wal", "patchbay.db-shm"):
                assert _mode(home / name) == 0o600, name
        finally:
            repo.close()
    finally:
        os.umask(previous)


@pytest.mark.sqlite_only(reason="the SQLite file's mode")
def test_an_existing_data_home_keeps_its_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)

    open_store(Settings(home=home)).close()

    assert _mode(home) == 0o755
    assert _mode(home / "patchbay.db") == 0o600


# -- locking ----------------------------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="SQLite's busy timeout")
def test_sqlite_waits_thirty_seconds_for_a_lock(tmp_path: Path) -> None:
    repo = open_store(Settings(home=tmp_path))
    try:
        with repo.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    finally:
        repo.close()


@pytest.mark.sqlite_only(reason="SQLite's busy timeout")
def test_a_write_blocked_past_busy_timeout_is_unavailable_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = open_store(Settings(home=tmp_path))
    connector = repo.connectors.create("time", "Time", STDIO)
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)
    repo.engine.dispose()  # new connections pick up the short timeout
    holder = sqlite3.connect(tmp_path / "patchbay.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(CanonicalStateUnavailable) as info:
            repo.grants.set_global(connector.connector_id, "get_time", "allow")
        _assert_one_line(info.value, tmp_path / "patchbay.db", "is locked", "database is locked")
        holder.execute("ROLLBACK")

        repo.grants.set_global(connector.connector_id, "get_time", "allow")
        assert _grant_count(repo) == 1
    finally:
        holder.close()
        repo.close()


def test_a_committed_write_never_reads_afterwards(tmp_path: Path) -> None:
    """Once a write method's transaction commits, any further database access would fail here."""
    repo = open_store(Settings(home=tmp_path))
    committed = False

    def on_commit(_conn: object) -> None:
        nonlocal committed
        committed = True

    def on_begin(_conn: object) -> None:
        if committed:
            raise sqlite3.OperationalError("database is locked")

    event.listen(repo.engine, "commit", on_commit)
    event.listen(repo.engine, "begin", on_begin)

    def write(action):  # type: ignore[no-untyped-def]
        nonlocal committed
        committed = False
        return action()

    try:
        connector = write(lambda: repo.connectors.create("time", "Time", STDIO))
        project = write(lambda: repo.projects.ensure(tmp_path))
        assert write(lambda: repo.grants.set_global(connector.connector_id, "get_time", "allow")).decision == "allow"
        assert write(
            lambda: repo.grants.set_for_project(project.project_id, connector.connector_id, "get_time", "deny")
        )
        assert write(lambda: repo.connectors.update(connector.connector_id, 1, display_name="Clock")).revision == 2
        assert (
            write(lambda: repo.connectors.update_settings(connector.connector_id, 1, enabled=False)).settings.revision
            == 2
        )
        assert write(lambda: repo.grants.clear_global(connector.connector_id, "get_time")) is True
        write(lambda: repo.connectors.delete(connector.connector_id))

        with pytest.raises(CanonicalStateUnavailable):  # the trap is armed: a later read does fail
            repo.connectors.list_all()
    finally:
        event.remove(repo.engine, "begin", on_begin)
        event.remove(repo.engine, "commit", on_commit)
        repo.close()


def test_many_concurrent_writers_all_succeed(tmp_path: Path) -> None:
    """Like 80 CLI processes granting at once: each writer has its own engine and connections."""
    setup = open_store(Settings(home=tmp_path))
    connector_id = setup.connectors.create("time", "Time", STDIO).connector_id
    setup.close()

    def grant(worker: int) -> int:
        repo = open_store(Settings(home=tmp_path))
        try:
            for i in range(5):
                repo.grants.set_global(connector_id, f"tool_{worker}_{i}", "allow")
            return len(repo.grants.list_global(connector_id))
        finally:
            repo.close()

    with ThreadPoolExecutor(40) as pool:
        assert all(count >= 5 for count in pool.map(grant, range(40)))

    repo = open_store(Settings(home=tmp_path))
    try:
        assert _grant_count(repo) == 200
    finally:
        repo.close()
