from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from patchbay.core.errors import PatchbayError
from patchbay.core.redaction import REDACTED, redact_value
from patchbay.runtime.events.log import (
    EVENT_TYPES,
    EventLog,
    flush_open_log,
    new_session_id,
    read_events,
    session_log_path,
)
from patchbay.runtime.events.reading import SessionLogs

pytestmark = pytest.mark.anyio

DESIGN_EVENT_TYPES = {
    "user.message",
    "model.tool_call_requested",
    "tool.ambiguous_call",
    "permission.requested",
    "permission.resolved",
    "mcp.call.started",
    "mcp.call.completed",
    "mcp.call.failed",
    "tool.started",
    "tool.completed",
    "tool.failed",
    "mcp.server.connected",
    "mcp.server.crashed",
    "mcp.server.restarting",
    "mcp.server.permanently_failed",
    "mcp.server.shutdown",
    "mcp.server.tools_changed",
    "content.screened",
    "mcp.resource.requested",
    "mcp.resource.fetched",
    "mcp.prompt.invoked",
    "mcp.prompt.expanded",
    "context.built",
    "turn.completed",
}


def _log(tmp_path: Path, session_id: str = "ses_test") -> EventLog:
    return EventLog(session_log_path(tmp_path / "sessions", session_id), session_id)


def test_event_types_are_exactly_the_design_names() -> None:
    assert EVENT_TYPES == DESIGN_EVENT_TYPES


def test_seq_is_strictly_increasing_from_one_with_the_documented_shape(tmp_path: Path) -> None:
    with _log(tmp_path) as log:
        seqs = [log.append("user.message", {"content": f"hello {i}"}) for i in range(5)]
    events = read_events(log.path)
    assert seqs == [1, 2, 3, 4, 5]
    assert [event["seq"] for event in events] == [1, 2, 3, 4, 5]
    for event in events:
        assert set(event) == {"seq", "type", "ts", "sessionId", "payload"}
        assert event["sessionId"] == "ses_test"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["ts"])
    assert events[2]["payload"] == {"content": "hello 2"}
    assert log.path.stat().st_mode & 0o777 == 0o600


def test_a_reopened_session_log_continues_after_the_last_seq(tmp_path: Path) -> None:
    with _log(tmp_path) as log:
        log.append("user.message", {"content": "first run"})
        log.append("turn.completed", {"stopReason": "final"})
    with _log(tmp_path) as log:
        assert log.seq == 2
        assert log.append("user.message", {"content": "second run"}) == 3
    assert [event["seq"] for event in read_events(log.path)] == [1, 2, 3]


def test_a_torn_last_line_is_skipped_and_cut_off_when_the_session_reopens(tmp_path: Path) -> None:
    with _log(tmp_path) as log:
        log.append("user.message", {"content": "complete"})
    with log.path.open("a") as handle:
        handle.write('{"seq": 2, "type": "user.mes')  # a crash mid-write
    assert [event["seq"] for event in read_events(log.path)] == [1]
    with _log(tmp_path) as log:
        assert log.append("user.message", {"content": "after crash"}) == 2
    assert [(event["seq"], event["payload"]["content"]) for event in read_events(log.path)] == [
        (1, "complete"),
        (2, "after crash"),
    ]


def test_a_secret_named_argument_is_redacted_before_it_is_written(tmp_path: Path) -> None:
    secret = "hunter2-very-secret"
    with _log(tmp_path) as log:
        log.append("model.tool_call_requested", {"tool": "mcp.x.login", "args": {"user": "ann", "password": secret}})
        log.append("tool.completed", {"tool": "mcp.x.login", "resultPreview": "Authorization: Bearer abcdefghijklmnop"})
    assert secret not in log.path.read_text()
    assert "abcdefghijklmnop" not in log.path.read_text()
    first, second = read_events(log.path)
    assert first["payload"]["args"] == {"user": "ann", "password": REDACTED}
    assert REDACTED in second["payload"]["resultPreview"]


@pytest.mark.parametrize(
    "payload",
    [
        {"args": {"api_key": "k-123456", "token": "", "nested": [{"secret": None, "x": "password=abcdef1"}]}},
        {"text": "ghp_" + "a" * 30, "list": ("sk-" + "b" * 20, 3, None, True), "n": 1.5},
        {"authorization": {"inner": 1}, "cookie": [], "url": "https://user:pw@example.com/x"},
        {1: "non-string key", "ok": "plain text"},
    ],
)
def test_the_memoised_redaction_equals_redact_value(tmp_path: Path, payload: dict) -> None:
    with _log(tmp_path) as log:
        assert log.redact(payload) == redact_value(payload)
        assert log.redact(payload) == redact_value(payload)  # served from the cache


@pytest.mark.parametrize("session_id", ["", "../etc", "a/b", "a.b", "x" * 65, "ses id", "ses\n"])
def test_an_invalid_session_id_is_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(PatchbayError) as info:
        session_log_path(tmp_path, session_id)
    assert info.value.code == "validation_error"


def test_new_session_ids_are_valid_and_distinct(tmp_path: Path) -> None:
    ids = {new_session_id() for _ in range(50)}
    assert len(ids) == 50
    for session_id in ids:
        assert re.fullmatch(r"ses_[0-9a-f]{16}", session_id)
        assert session_log_path(tmp_path, session_id).name == f"{session_id}.jsonl"


def test_an_unknown_event_type_is_refused(tmp_path: Path) -> None:
    with _log(tmp_path) as log, pytest.raises(ValueError):
        log.append("tool.exploded", {})


def test_a_second_concurrent_writer_of_the_same_session_is_refused(tmp_path: Path) -> None:
    with _log(tmp_path):
        with pytest.raises(PatchbayError) as info:
            _log(tmp_path)
        assert info.value.code == "validation_error"
    with _log(tmp_path) as log:  # released on close
        log.append("user.message", {})


def test_appends_from_many_threads_keep_seq_order_in_the_file(tmp_path: Path) -> None:
    with _log(tmp_path) as log:

        def writer(name: str) -> None:
            for i in range(200):
                log.append("user.message", {"writer": name, "i": i}, defer=i % 3 == 0)

        threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [event["seq"] for event in read_events(log.path)] == list(range(1, 801))


def test_deferred_events_are_written_by_the_next_append_or_flush_in_seq_order(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.append("tool.started", {"toolCallId": "tc_1"}, defer=True)
    log.append("tool.completed", {"toolCallId": "tc_1"}, defer=True)
    assert read_events(log.path) == []
    log.append("tool.failed", {"toolCallId": "tc_2"})
    assert [event["seq"] for event in read_events(log.path)] == [1, 2, 3]
    log.append("user.message", {}, defer=True)
    log.flush()
    assert len(read_events(log.path)) == 4
    log.append("turn.completed", {}, defer=True)
    log.close()
    assert [json.loads(line)["seq"] for line in log.path.read_text().splitlines()] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError):
        log.append("user.message", {})


def test_a_run_of_events_appended_in_one_operation_is_written_like_one_by_one(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.append("user.message", {}, defer=True)
    assert (
        log.append_jsons([("tool.started", '{"toolCallId":"tc_1"}'), ("tool.completed", '{"toolCallId":"tc_1"}')]) == 3
    )
    events = read_events(log.path)
    assert [(e["seq"], e["type"], e["payload"]) for e in events] == [
        (1, "user.message", {}),
        (2, "tool.started", {"toolCallId": "tc_1"}),
        (3, "tool.completed", {"toolCallId": "tc_1"}),
    ]
    with pytest.raises(ValueError):  # an unknown type: nothing of the run is appended
        log.append_jsons([("tool.started", "{}"), ("no.such.event", "{}")])
    assert log.seq == 3
    log.close()
    assert len(read_events(log.path)) == 3


def test_connector_names_in_events_are_never_masked_by_a_registered_value(tmp_path: Path) -> None:
    from patchbay.core.redaction import register_secret

    secret = "crashmode-ev-5521"
    register_secret(secret)
    name = f"f-{secret}"
    path = tmp_path / "s.jsonl"
    with EventLog(path, "s1", keep=(name,)) as log:
        log.append("mcp.server.crashed", {"server": name, "stderrTail": f"mode={secret}"})
        log.append("tool.started", {"tool": f"mcp.{name}.echo", "note": f"value {secret}"})
    crashed, started = read_events(path)
    assert crashed["payload"] == {"server": name, "stderrTail": f"mode={REDACTED}"}
    assert started["payload"] == {"tool": f"mcp.{name}.echo", "note": f"value {REDACTED}"}


def test_tool_call_ids_are_consecutive_per_session_and_continue_when_it_is_reopened(tmp_path: Path) -> None:
    from patchbay.runtime.calls.result import CallEvents

    with _log(tmp_path) as log:
        ids = []
        for n in range(3):
            call = CallEvents(log, f"mcp.t.tool{n}", {"n": n})
            log.append("tool.failed", {"tool": call.tool, "toolCallId": call.id, "reason": "unknown_tool"})
            log.append("mcp.server.connected", {"server": "t", "toolCount": 1})  # other events in between
            ids.append(call.id)
    assert ids == ["tc_1", "tc_2", "tc_3"]
    with _log(tmp_path) as log:
        assert CallEvents(log, "mcp.t.again", {}).id == "tc_4"
    requested = [e for e in read_events(log.path) if e["type"] == "model.tool_call_requested"]
    assert [e["payload"]["toolCallId"] for e in requested] == ["tc_1", "tc_2", "tc_3", "tc_4"]


def test_the_sessions_directory_is_created_0700(tmp_path: Path) -> None:
    import stat

    path = session_log_path(tmp_path / "home" / "sessions", "ses_test")
    with EventLog(path, "ses_test"):
        pass
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_the_background_writer_writes_queued_lines_in_seq_order_and_readers_see_them_first(
    tmp_path: Path,
) -> None:
    path = session_log_path(tmp_path, "ses_writer")
    with EventLog(path, "ses_writer") as log:
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.run_writer)
            await anyio.lowlevel.checkpoint()  # the writer is waiting
            for n in range(3):
                log.append_json("tool.started", f'{{"tool":"t{n}","toolCallId":"tc_{n}"}}')
            assert path.read_bytes() == b""  # queued: the caller wrote nothing
            # A reader of the file in this process sees every event, written or still queued.
            flush_open_log(path)
            assert [e["payload"]["tool"] for e in read_events(path)] == ["t0", "t1", "t2"]
            log.append_json("tool.started", '{"tool":"t3","toolCallId":"tc_3"}')
            log.append("user.message", {"text": "written at once"})  # after what is queued
            assert [e["seq"] for e in read_events(path)] == [1, 2, 3, 4, 5]
            assert SessionLogs(tmp_path).summary("ses_writer").events == 5
            log.append_json("tool.started", '{"tool":"t4","toolCallId":"tc_4"}')
            log.stop_writer()
        log.append_json("tool.started", '{"tool":"t5","toolCallId":"tc_5"}')
    events = read_events(path)
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5, 6, 7]
    assert [e["type"] for e in events][3:5] == ["tool.started", "user.message"]


async def test_lines_queued_for_the_background_writer_are_written_by_it_or_by_close(tmp_path: Path) -> None:
    path = session_log_path(tmp_path, "ses_close")
    log = EventLog(path, "ses_close")
    async with anyio.create_task_group() as tg:
        tg.start_soon(log.run_writer)
        await anyio.lowlevel.checkpoint()
        log.append_json("tool.started", '{"tool":"a","toolCallId":"tc_1"}')
        with anyio.fail_after(5):
            while b'"tool":"a"' not in path.read_bytes():  # the writer runs once the caller yields
                await anyio.lowlevel.checkpoint()
        log.append_json("tool.started", '{"tool":"b","toolCallId":"tc_2"}')
        log.close()  # ends the writer too
    assert [e["payload"]["tool"] for e in read_events(path)] == ["a", "b"]
