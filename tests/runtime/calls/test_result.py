"""A tool error's message quotes the result's text cut at a word boundary, never mid-URL."""

from __future__ import annotations

from patchbay.runtime.calls.result import ToolCallResult, preview_text, tool_error


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
