"""Session event logs in the shared store's table: the same appends as the JSONL log (redacted,
queued for the background writer), committed by a worker thread, read back verified."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from sqlalchemy import Engine

from patchbay.adapters.store import create_engine_for, upgrade_to_head
from patchbay.core.errors import ErrorCode, NotFoundError, PatchbayError
from patchbay.core.instance import instance_id
from patchbay.core.settings import Settings
from patchbay.runtime.events.backend import events_in_database, open_event_log, session_logs
from patchbay.runtime.events.database import DatabaseEventLog, DatabaseSessionLogs, event_engine
from patchbay.runtime.events.log import EventLog, session_log_path
from patchbay.runtime.events.reading import SessionLogs
from tests.support.postgres import postgres_schema

pytestmark = pytest.mark.anyio

SID = "ses_00000000000000cc"


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_schema() as url:
        engine = create_engine_for(url)
        upgrade_to_head(engine)
        engine.dispose()
        yield url


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    engine = create_engine_for(pg_url)
    yield engine
    engine.dispose()


def test_the_store_url_chooses_files_or_the_table(tmp_path: Path, pg_url: str) -> None:
    files = Settings(home=tmp_path)
    assert not events_in_database(files) and isinstance(session_logs(files), SessionLogs)
    shared = Settings(home=tmp_path, database_url=pg_url)
    assert events_in_database(shared) and isinstance(session_logs(shared), DatabaseSessionLogs)
    with open_event_log(files, session_log_path(files.sessions_dir, "ses_file"), "ses_file") as log:
        assert type(log) is EventLog
    with open_event_log(shared, session_log_path(shared.sessions_dir, SID), SID) as log:
        assert isinstance(log, DatabaseEventLog)
        log.append("user.message", {"text": "hi"})
    assert not (tmp_path / "sessions" / f"{SID}.jsonl").exists()
    assert [e["type"] for e in session_logs(shared).page(SID).events] == ["user.message"]
    event_engine(pg_url).dispose()  # the process's engine for that URL: its schema goes after this test


def test_events_are_redacted_carry_the_instance_and_continue_a_session(engine: Engine) -> None:
    with DatabaseEventLog(engine, SID, known_secrets=("s3cr3t-value-123",)) as log:
        log.append("tool.started", {"tool": "mcp.t.x", "toolCallId": log.next_tool_call_id(), "token": "abc"})
        log.append("tool.completed", {"tool": "mcp.t.x", "text": "got s3cr3t-value-123"})
    with DatabaseEventLog(engine, SID) as log:  # a second run of the same session continues it
        assert log.seq == 2 and log.next_tool_call_id() == "tc_2"
        log.append("turn.completed", {})
    events = DatabaseSessionLogs(engine).page(SID).events
    assert [e["seq"] for e in events] == [1, 2, 3]
    assert {e["instance"] for e in events} == {instance_id()}
    assert events[0]["payload"]["token"] != "abc"
    assert "s3cr3t-value-123" not in str(events[1]["payload"])


async def test_the_background_writer_commits_off_the_event_loop(engine: Engine) -> None:
    log = DatabaseEventLog(engine, SID)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.run_writer)
            await anyio.lowlevel.checkpoint()  # the writer task starts
            for index in range(50):
                log.append_jsons([("tool.started", f'{{"i":{index}}}'), ("tool.completed", "{}")])
                await anyio.lowlevel.checkpoint()
            log.stop_writer()
        assert log.sync()
        page = DatabaseSessionLogs(engine).page(SID, after_seq=90, limit=5)
        assert [e["seq"] for e in page.events] == list(range(91, 96)) and page.has_more
    finally:
        log.close()
    assert log.closed


def test_an_open_log_of_this_process_is_committed_before_it_is_read(engine: Engine) -> None:
    with DatabaseEventLog(engine, SID, metadata={"workspace": "/work/repo", "projectId": "prj_1"}) as log:
        log.append("user.message", {"text": "one"}, defer=True)
        log.append("user.message", {"text": "two"})
        assert len(DatabaseSessionLogs(engine).page(SID).events) == 2
        summary = DatabaseSessionLogs(engine).summary(SID)
        assert (summary.events, summary.calls, summary.workspace, summary.project_id) == (2, 0, "/work/repo", "prj_1")
        assert [s.session_id for s in DatabaseSessionLogs(engine).recent()] == [SID]


def test_unknown_and_malformed_sessions_are_not_found(engine: Engine) -> None:
    logs = DatabaseSessionLogs(engine)
    for sid in ("ses_nothing", "../etc"):
        with pytest.raises(NotFoundError):
            logs.page(sid)


def test_a_gap_in_a_jsonl_log_breaks_its_chain(tmp_path: Path) -> None:
    path = session_log_path(tmp_path, SID)
    with EventLog(path, SID) as log:
        for _ in range(3):
            log.append("user.message", {})
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + lines[2])
    with pytest.raises(PatchbayError) as caught:
        SessionLogs(tmp_path).page(SID)
    assert caught.value.code is ErrorCode.EVENT_CHAIN_BROKEN


async def test_appends_on_the_event_loop_never_wait_for_a_locked_table(engine: Engine) -> None:
    from sqlalchemy import text

    log = DatabaseEventLog(engine, SID)
    try:
        with engine.connect() as holder:
            holder.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:s, 7))"), {"s": SID})
            with anyio.fail_after(2):  # the writer thread is stuck on the lock; the loop is not
                for _ in range(100):
                    log.append("user.message", {"text": "queued"})
                    await anyio.lowlevel.checkpoint()
            assert not log.sync(timeout=0.2)
            holder.rollback()  # releases the lock
        assert log.sync()
        assert DatabaseSessionLogs(engine).summary(SID).events == 100
    finally:
        log.close()


async def test_two_logs_of_one_session_on_two_engines_interleave_without_gaps(engine: Engine, pg_url: str) -> None:
    other = create_engine_for(pg_url)
    logs = [DatabaseEventLog(engine, SID), DatabaseEventLog(other, SID)]  # two instances, one session

    async def write(log: DatabaseEventLog, tag: int) -> None:
        for index in range(40):
            log.append("user.message", {"writer": tag, "index": index})
            await anyio.lowlevel.checkpoint()

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for tag, log in enumerate(logs):
                    tg.start_soon(write, log, tag)
        for log in logs:
            log.close()
        events = DatabaseSessionLogs(engine).page(SID, limit=100).events  # verifies the chain
        assert [e["seq"] for e in events] == list(range(1, 81))
        for tag in (0, 1):  # each writer's events in its own order
            assert [e["payload"]["index"] for e in events if e["payload"]["writer"] == tag] == list(range(40))
    finally:
        for log in logs:
            log.close()
        other.dispose()
