"""Reading session logs: pages by seq (bisected, parsing only what is returned), and summaries
from the metadata record and the log's ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchbay.core.errors import NotFoundError, PatchbayError, ValidationError
from patchbay.runtime.events.log import EventLog, read_events, session_log_path, session_meta_path
from patchbay.runtime.events.reading import SessionLogs


def _log(sessions: Path, sid: str, calls: int, *, workspace: str = "/work/repo", close: bool = True) -> EventLog:
    log = EventLog(session_log_path(sessions, sid), sid, metadata={"workspace": workspace, "projectId": "prj_1"})
    for index in range(calls):
        log.append("model.tool_call_requested", {"tool": "mcp.t.x", "toolCallId": f"tc_{index}"})
        # a payload that looks like a call event must not count as one
        log.append("tool.completed", {"tool": "mcp.t.x", "args": {"type": "model.tool_call_requested"}})
    if close:
        log.close()
    return log


def test_pages_walk_the_log_in_seq_order_from_any_point(tmp_path: Path) -> None:
    _log(tmp_path, "ses_a", 300)
    logs = SessionLogs(tmp_path)
    everything = read_events(session_log_path(tmp_path, "ses_a"))
    assert len(everything) == 600
    for after in (0, 1, 2, 299, 300, 597, 599):
        page = logs.page("ses_a", after_seq=after, limit=3)
        assert page.events == everything[after : after + 3]
        assert page.has_more is (after + 3 < 600)
        assert page.next_after_seq == (everything[after + len(page.events) - 1]["seq"] if page.events else after)
    end = logs.page("ses_a", after_seq=600)
    assert (end.events, end.next_after_seq, end.has_more) == ([], 600, False)
    assert logs.page("ses_a", after_seq=10_000).events == []
    walked, after = [], 0
    while True:
        page = logs.page("ses_a", after_seq=after, limit=1000 if after else 7)
        walked += page.events
        after = page.next_after_seq
        if not page.has_more:
            break
    assert walked == everything


def test_a_line_still_being_written_is_no_event_yet(tmp_path: Path) -> None:
    _log(tmp_path, "ses_a", 2)
    with session_log_path(tmp_path, "ses_a").open("ab") as handle:
        handle.write(b'{"seq":5,"type":"tool.started"')
    page = SessionLogs(tmp_path).page("ses_a", after_seq=2)
    assert [e["seq"] for e in page.events] == [3, 4] and page.has_more is False
    assert SessionLogs(tmp_path).summary("ses_a").events == 4


def test_a_corrupt_complete_line_is_an_error_not_a_silent_gap(tmp_path: Path) -> None:
    _log(tmp_path, "ses_a", 1)
    with session_log_path(tmp_path, "ses_a").open("ab") as handle:
        handle.write(b"not json\n")
    with pytest.raises(PatchbayError) as exc:
        SessionLogs(tmp_path).page("ses_a")
    assert exc.value.code == "validation_error"


def test_unknown_sessions_and_bad_paging_are_refused(tmp_path: Path) -> None:
    logs = SessionLogs(tmp_path)
    for sid in ("ses_none", "../etc/passwd", ""):
        with pytest.raises(NotFoundError):
            logs.page(sid)
    _log(tmp_path, "ses_a", 1)
    for kwargs in ({"limit": 0}, {"limit": 1001}, {"after_seq": -1}):
        with pytest.raises(ValidationError):
            logs.page("ses_a", **kwargs)  # type: ignore[arg-type]


def test_a_summary_has_the_workspace_start_calls_and_last_event(tmp_path: Path) -> None:
    _log(tmp_path, "ses_a", 3)
    summary = SessionLogs(tmp_path).summary("ses_a")
    events = read_events(session_log_path(tmp_path, "ses_a"))
    meta = json.loads(session_meta_path(session_log_path(tmp_path, "ses_a")).read_text())
    assert (summary.workspace, summary.project_id, summary.calls, summary.events) == ("/work/repo", "prj_1", 3, 6)
    assert summary.started_at == meta["startedAt"] and summary.last_event_at == events[-1]["ts"]
    assert meta["counted"] == {"bytes": session_log_path(tmp_path, "ses_a").stat().st_size, "calls": 3}
    assert session_meta_path(session_log_path(tmp_path, "ses_a")).stat().st_mode & 0o777 == 0o600


def test_calls_of_an_open_session_and_of_a_continued_one_are_counted(tmp_path: Path) -> None:
    open_log = _log(tmp_path, "ses_a", 2, close=False)
    assert SessionLogs(tmp_path).summary("ses_a").calls == 2  # counted from the log: no close yet
    open_log.close()
    _log(tmp_path, "ses_a", 1, workspace="/elsewhere")  # a second run of the same session
    summary = SessionLogs(tmp_path).summary("ses_a")
    assert (summary.calls, summary.events, summary.workspace) == (3, 6, "/work/repo")  # the first record stays


def test_a_log_without_metadata_is_summarised_from_the_log(tmp_path: Path) -> None:
    _log(tmp_path, "ses_a", 2)
    session_meta_path(session_log_path(tmp_path, "ses_a")).unlink()
    summary = SessionLogs(tmp_path).summary("ses_a")
    first = read_events(session_log_path(tmp_path, "ses_a"))[0]
    assert (summary.workspace, summary.calls, summary.events, summary.started_at) == (None, 2, 4, first["ts"])


def test_a_summary_reads_no_more_than_the_ends_of_a_closed_log(tmp_path: Path, monkeypatch) -> None:
    _log(tmp_path, "ses_a", 2000)
    size = session_log_path(tmp_path, "ses_a").stat().st_size
    read = 0

    class Counting:
        def __init__(self, handle):
            self._handle = handle

        def read(self, n: int = -1) -> bytes:
            nonlocal read
            data = self._handle.read(n)
            read += len(data)
            return data

        def __getattr__(self, name):
            return getattr(self._handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._handle.close()

    real_open = Path.open

    def counting_open(self, *args, **kwargs):
        handle = real_open(self, *args, **kwargs)
        return Counting(handle) if self.suffix == ".jsonl" else handle

    monkeypatch.setattr(Path, "open", counting_open)
    assert SessionLogs(tmp_path).summary("ses_a").calls == 2000
    assert read < 200_000 < size


def test_recent_lists_the_newest_first_up_to_the_limit(tmp_path: Path) -> None:
    for index, sid in enumerate(("ses_old", "ses_mid", "ses_new")):
        _log(tmp_path, sid, index)
        stamp = 1_700_000_000 + index * 60
        os.utime(session_log_path(tmp_path, sid), (stamp, stamp))
    (tmp_path / "not-a-log.txt").write_text("x")
    logs = SessionLogs(tmp_path)
    assert [s.session_id for s in logs.recent()] == ["ses_new", "ses_mid", "ses_old"]
    assert [(s.session_id, s.calls) for s in logs.recent(limit=2)] == [("ses_new", 2), ("ses_mid", 1)]
    assert SessionLogs(tmp_path / "missing").recent() == []
    with pytest.raises(ValidationError):
        logs.recent(limit=0)
