"""Redaction keeps secrets out of stderr tails, events and messages (seed 003 §14.3)."""

from __future__ import annotations

from patchbay.core.redaction import REDACTED, redact_text, redact_value


def test_secret_shapes_in_text_are_redacted() -> None:
    text = (
        "Authorization: Bearer abcdefghijklmnop\n"
        "api_key=sk-live-0123456789abcdefghij password: hunter2hunter2 "
        "https://bob:s3cr3tpw@example.com/x ghp_0123456789abcdefghijABCDEFGHIJ"
    )
    out = redact_text(text)
    for secret in ("abcdefghijklmnop", "sk-live-0123456789abcdefghij", "hunter2hunter2", "s3cr3tpw", "ghp_0123456789"):
        assert secret not in out
    assert REDACTED in out


def test_known_secret_values_are_redacted_wherever_they_appear() -> None:
    assert redact_text("value is canary-xyz-123 here", ("canary-xyz-123",)) == f"value is {REDACTED} here"


def test_secret_named_keys_lose_their_values_and_other_data_survives() -> None:
    payload = {"args": {"token": "abc", "city": "Paris", "nested": [{"password": "p"}]}, "count": 3}
    assert redact_value(payload) == {
        "args": {"token": REDACTED, "city": "Paris", "nested": [{"password": REDACTED}]},
        "count": 3,
    }
    assert payload["args"]["token"] == "abc"
