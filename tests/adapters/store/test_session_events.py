"""The session_events table: seqs assigned in the inserting transaction, the hash chain, paging."""

from __future__ import annotations

import json

import anyio
import pytest
from sqlalchemy import update

from patchbay.adapters.store import Repository, create_engine_for
from patchbay.adapters.store.session_events import (
    CHAIN_START,
    EventRow,
    SessionEventStore,
    chain_hash,
    event_line,
)
from patchbay.adapters.store.tables import session_events
from patchbay.core.errors import ErrorCode, NotFoundError, PatchbayError

pytestmark = pytest.mark.anyio

SID = "ses_00000000000000aa"
TS = "2026-12-03T08:00:00.000Z"


def _rows(n: int, type: str = "tool.started") -> list[EventRow]:
    return [EventRow(type, TS, json.dumps({"n": i}, separators=(",", ":"))) for i in range(n)]


def test_appends_get_seqs_from_one_and_read_back_as_jsonl_lines(any_repo: Repository) -> None:
    store = SessionEventStore(any_repo.engine)
    assert store.append(SID, _rows(3), instance="host-1-ab") == [1, 2, 3]
    assert store.append(SID, _rows(2), instance=None) == [4, 5]
    events, has_more = store.page(SID, after_seq=0, limit=10)
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5] and not has_more
    assert events[0] == {
        "seq": 1,
        "type": "tool.started",
        "ts": TS,
        "sessionId": SID,
        "instance": "host-1-ab",
        "payload": {"n": 0},
    }
    assert "instance" not in events[3]
    assert store.last_seq(SID) == 5 and store.last_seq("ses_other") == 0


def test_the_hash_chain_links_each_event_to_the_one_before(any_repo: Repository) -> None:
    store = SessionEventStore(any_repo.engine)
    store.append(SID, _rows(2), instance="i")
    with any_repo.engine.connect() as conn:
        hashes = conn.execute(session_events.select().order_by(session_events.c.seq)).all()
    first = chain_hash(CHAIN_START, event_line(1, "tool.started", TS, SID, "i", '{"n":0}'))
    assert hashes[0].hash == first
    assert hashes[1].hash == chain_hash(first, event_line(2, "tool.started", TS, SID, "i", '{"n":1}'))


def test_pages_after_a_seq_and_says_whether_more_follow(any_repo: Repository) -> None:
    store = SessionEventStore(any_repo.engine)
    store.append(SID, _rows(7), instance="i")
    events, has_more = store.page(SID, after_seq=2, limit=3)
    assert [e["seq"] for e in events] == [3, 4, 5] and has_more
    events, has_more = store.page(SID, after_seq=5, limit=3)
    assert [e["seq"] for e in events] == [6, 7] and not has_more
    assert store.page(SID, after_seq=7, limit=3) == ([], False)
    assert store.page(SID, after_seq=70, limit=3) == ([], False)
    # past the seq column's range (PostgreSQL BIGINT): past the end too, not a database error
    assert store.page(SID, after_seq=2**63 - 1, limit=3) == ([], False)
    assert store.page(SID, after_seq=9357294131262054534742016, limit=3) == ([], False)
    with pytest.raises(NotFoundError):
        store.page("ses_none", after_seq=0, limit=3)
    with pytest.raises(NotFoundError):
        store.page("ses_none", after_seq=2**70, limit=3)


def test_an_altered_payload_breaks_the_chain(any_repo: Repository) -> None:
    store = SessionEventStore(any_repo.engine)
    store.append(SID, _rows(4), instance="i")
    with any_repo.engine.begin() as conn:
        conn.execute(
            update(session_events)
            .where(session_events.c.session_id == SID, session_events.c.seq == 3)
            .values(payload='{"n":99}')
        )
    store.page(SID, after_seq=0, limit=2)  # before the altered row: verifies
    with pytest.raises(PatchbayError) as caught:
        store.page(SID, after_seq=0, limit=10)
    assert caught.value.code is ErrorCode.EVENT_CHAIN_BROKEN and caught.value.details["seq"] == 3


def test_a_removed_event_breaks_the_chain(any_repo: Repository) -> None:
    store = SessionEventStore(any_repo.engine)
    store.append(SID, _rows(4), instance="i")
    with any_repo.engine.begin() as conn:
        conn.execute(session_events.delete().where(session_events.c.seq == 2))
    with pytest.raises(PatchbayError) as caught:
        store.page(SID, after_seq=0, limit=10)
    assert caught.value.code is ErrorCode.EVENT_CHAIN_BROKEN
    with pytest.raises(PatchbayError):
        store.page(SID, after_seq=1, limit=10)


def test_summaries_count_events_and_calls(any_repo: Repository) -> None:
    store = SessionEventStore(any_repo.engine)
    store.append(SID, [*_rows(2), *_rows(1, "model.tool_call_requested")], instance="i")
    store.append("ses_00000000000000bb", [EventRow("user.message", "2026-12-03T09:00:00.000Z", "{}")], instance="i")
    summary = store.summary(SID)
    assert (summary.events, summary.calls, summary.started_at, summary.workspace) == (3, 1, TS, None)
    store.start(SID, workspace="/work/repo", project_id="prj_1", started_at="2026-12-03T07:00:00.000Z")
    store.start(SID, workspace="/elsewhere", project_id=None, started_at="2026-12-04T07:00:00.000Z")  # kept: first
    summary = store.summary(SID)
    assert (summary.workspace, summary.project_id, summary.started_at) == (
        "/work/repo",
        "prj_1",
        "2026-12-03T07:00:00.000Z",
    )
    assert [s.session_id for s in store.recent(limit=5)] == ["ses_00000000000000bb", SID]


async def test_two_writers_on_two_engines_keep_seqs_unique_and_gap_free(postgres_url: str) -> None:
    from patchbay.adapters.store import upgrade_to_head

    engines = [create_engine_for(postgres_url) for _ in range(2)]
    upgrade_to_head(engines[0])
    stores = [SessionEventStore(e) for e in engines]
    got: list[int] = []

    async def write(store: SessionEventStore, tag: int) -> None:
        for _ in range(15):
            got.extend(await anyio.to_thread.run_sync(lambda: store.append(SID, _rows(3), instance=f"w{tag}")))

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for index, store in enumerate(stores):
                    tg.start_soon(write, store, index)
        assert sorted(got) == list(range(1, 91))
        events, has_more = stores[1].page(SID, after_seq=0, limit=100)  # the chain verifies
        assert [e["seq"] for e in events] == list(range(1, 91)) and not has_more
        assert {e["instance"] for e in events} == {"w0", "w1"}
    finally:
        for engine in engines:
            engine.dispose()
