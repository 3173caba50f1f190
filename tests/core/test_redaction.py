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


def test_key_value_secrets_with_affixed_key_names_are_redacted() -> None:
    out = redact_text('MY_API_KEY=abcd1234efgh client_secret: "zzzz9999" "access_token":"tok-12345"')
    assert "abcd1234efgh" not in out and "zzzz9999" not in out and "tok-12345" not in out
    assert out.count(REDACTED) == 3


def test_redaction_of_long_unbroken_text_finishes(tmp_path) -> None:
    # A quadratic pattern took ~1 s at 5,000 chars and hours at 200,000: run it in a child so a
    # regression shows up as a failure, not a hung suite. The bound is a hang guard, not a benchmark.
    import subprocess
    import sys

    code = "from patchbay.core.redaction import redact_text; redact_text('a' * 200_000 + ' token=' + 'b' * 200_000)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
