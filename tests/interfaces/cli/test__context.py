"""What the CLI prints of untrusted text: no terminal control sequences, one-line errors."""

from __future__ import annotations

from patchbay.interfaces.cli._context import one_line, safe_text


def test_terminal_escape_sequences_from_a_server_are_made_visible() -> None:
    text = "red \x1b[31malert\x1b[0m title \x1b]0;pwned\x07 done\nnext\tcol"
    shown = safe_text(text)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b[31malert" in shown
    assert "\nnext\tcol" in shown


def test_error_messages_become_one_bounded_line() -> None:
    message = "1 validation error\ntimezone\n  Field required " + "x" * 1000
    line = one_line(message)
    assert "\n" not in line and line.startswith("1 validation error timezone Field required")
    assert len(line) == 500 and line.endswith("…")
