"""A tool error's message quotes the result's text cut at a word boundary, never mid-URL."""

from __future__ import annotations

from pathlib import Path

from patchbay.runtime.calls.permissions import Resolution
from patchbay.runtime.calls.result import CallEvents, ToolCallResult, preview_text, tool_error
from patchbay.runtime.events.log import EventLog, read_events, session_log_path


def test_a_long_error_text_is_cut_at_a_word_boundary_with_an_ellipsis() -> None:
    text = (
        "1 validation error for get_current_time\ntimezone\n  Field required [type=missing, input_value={}, "
        "input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing"
    )
    cut = preview_text(text, 150)
    assert len(cut) <= 150 and cut.endswith("…")
    assert "http" not in cut  # the URL did not fit: it is left out whole, not cut to "http"
    assert text.startswith(cut[:-1].rstrip())
    assert preview_text("short text", 150) == "short text"
    assert preview_text("x" * 300, 100) == "x" * 99 + "…"  # one long word: cut where it must be


def test_tool_error_quotes_at_most_200_characters_of_the_result() -> None:
    words = " ".join(f"word{i}" for i in range(100))
    outcome = ToolCallResult("tc_1", "mcp.t.fail", [{"type": "text", "text": words}], None, words, len(words))
    message = tool_error("mcp.t.fail", outcome).message
    quoted = message.removeprefix("mcp.t.fail returned an error: ")
    assert len(quoted) <= 200 and quoted.endswith("…") and words.startswith(quoted[:-1])
    assert quoted[:-1].split()[-1] in words.split()  # ends with a whole word


def test_the_events_of_a_call_appended_in_runs_equal_those_appended_one_by_one(tmp_path: Path) -> None:
    resolution = Resolution("allow", "policy", "global_grant")
    outcome = ToolCallResult("tc_1", "mcp.t.echo", [{"type": "text", "text": "hi"}], None, "hi", 2)
    chains = []
    for name, in_runs in (("one_by_one", False), ("in_runs", True)):
        path = session_log_path(tmp_path, name)
        with EventLog(path, name) as log:
            events = CallEvents(log, "mcp.t.echo", {"text": "hi"})
            events.resolved("mcp.t.echo", "t")
            if in_runs:
                events.allowed_and_started("low", "global_grant", resolution, "echo")
                events.mcp_and_tool_completed(1.5, outcome, 100)
            else:
                events.permission_requested("low", "global_grant")
                events.permission_resolved(resolution)
                events.mcp_started("echo")
                events.tool_started()
                events.mcp_completed(1.5)
                events.tool_completed(outcome, 100)
        chains.append([(e["seq"], e["type"], e["payload"]) for e in read_events(path)])
    assert chains[0] == chains[1]
    assert [type for _, type, _ in chains[1]] == [
        "model.tool_call_requested",
        "permission.requested",
        "permission.resolved",
        "mcp.call.started",
        "tool.started",
        "mcp.call.completed",
        "tool.completed",
    ]
