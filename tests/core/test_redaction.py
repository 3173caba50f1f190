"""Redaction keeps secrets out of stderr tails, events, messages and logs (seed 003 §14.3)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from patchbay.core import redaction
from patchbay.core.redaction import (
    REDACTED,
    RedactingFilter,
    is_maskable,
    is_secret_key,
    redact_known,
    redact_text,
    redact_value,
    register_secret,
    registered_secrets,
    registry_version,
)


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


# --- headers: the value goes, the name (and an Authorization scheme) stays -------------------------

HEADER_CASES = [
    ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer [REDACTED]"),
    ("authorization: raw-token-value", "authorization: [REDACTED]"),
    ("Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==", "Proxy-Authorization: Basic [REDACTED]"),
    ("Cookie: sid=abc123; theme=dark", "Cookie: [REDACTED]"),
    (
        "Set-Cookie: id=a3fWa; Expires=Thu, 21 Oct 2021 07:28:00 GMT; Secure\nVary: Accept",
        "Set-Cookie: [REDACTED]\nVary: Accept",
    ),
    (
        '{"Authorization": "Bearer abc.def", "Cookie": "sid=1; theme=dark", "Accept": "*/*"}',
        '{"Authorization": "Bearer [REDACTED]", "Cookie": "[REDACTED]", "Accept": "*/*"}',
    ),
    ("{'cookie': 'sid=1', 'x': 1}", "{'cookie': '[REDACTED]', 'x': 1}"),
    ('{\\"Cookie\\": \\"sid=abc\\"}', '{\\"Cookie\\": \\"[REDACTED]\\"}'),
    ("curl -H 'Authorization: token ghx_notashape_1234'", "curl -H 'Authorization: token [REDACTED]'"),
]


@pytest.mark.parametrize(("text", "expected"), HEADER_CASES)
def test_header_values_are_masked_and_header_names_stay(text: str, expected: str) -> None:
    assert redact_text(text) == expected


# --- key shapes ------------------------------------------------------------------------------------

SHAPES = [
    "sk-proj-0123456789abcdefghijKLMN",
    "sk-ant-api03-0123456789abcdefghij",
    "sk_live_0123456789abcdefABCD",
    "ghp_0123456789abcdefghijABCDEFGHIJ",
    "gho_0123456789abcdefghijABCDEFGHIJ",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "glpat-0123456789abcdefghij",
    "xoxb-1234567890-abcdefghij",
    "xoxp-1234567890-1234567890-abcdef",
    "xapp-1-A0123456789-abcdefghij",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAIOSFODNN7EXAMPLE",
    "AIzaSyA0123456789abcdefghijklmnopqrstuv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pbgw_0123456789abcdefghijABCDEFGHIJ_-0123456",  # Patchbay's own gateway token
]


@pytest.mark.parametrize("key", SHAPES)
def test_well_known_key_shapes_are_masked_wherever_they_stand(key: str) -> None:
    for text in (key, f"using {key} now", f"({key})", f"[{key}]", f"'{key}',"):
        out = redact_text(text)
        assert key not in out and REDACTED in out, (text, out)


# --- secret-named keys, query values, OAuth callbacks, URL userinfo --------------------------------

KEY_CASES = [
    ("token=abc", "token=[REDACTED]"),
    ('password: "two words here" then', 'password: "[REDACTED]" then'),
    ("{'db_pass': 'x1'}", "{'db_pass': '[REDACTED]'}"),
    ('{\\"client_secret\\":\\"abc def\\"}', '{\\"client_secret\\":\\"[REDACTED]\\"}'),
    ("GET /cb?access_token=abc123&api_key=zzz&page=2", "GET /cb?access_token=[REDACTED]&api_key=[REDACTED]&page=2"),
    (
        "https://app.example/callback?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj&x=1",
        "https://app.example/callback?code=[REDACTED]&state=[REDACTED]&x=1",
    ),
    ("https://app.example/cb#state=abc&code=def", "https://app.example/cb#state=[REDACTED]&code=[REDACTED]"),
    ("https://store.example/blob?sv=1&sig=abc%2Bdef", "https://store.example/blob?sv=1&sig=[REDACTED]"),
    ("postgres://bob:s3cr3t@db.internal/x", "postgres://[REDACTED]@db.internal/x"),
    ("İstanbul TOKEN=abc", "İstanbul TOKEN=[REDACTED]"),
]


@pytest.mark.parametrize(("text", "expected"), KEY_CASES)
def test_values_of_secret_named_keys_and_one_time_url_parameters_are_masked(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "mcp.time.get_current_time",
        "The author: Jane; bypass=1; passage: 2; compass: N",
        "Authorization failed: invalid token",
        "ssh://git@github.com/org/repo.git",
        "https://example.com/search?q=code&page=2",
        "Basic usage",
        "token=''",
        "The current time in Asia/Tokyo is 2026-09-04T10:00:00+09:00.",
        "sk-short",
    ],
)
def test_text_without_secrets_is_returned_unchanged(text: str) -> None:
    assert redact_text(text) == text


def test_redaction_is_idempotent() -> None:
    texts = [text for text, _ in HEADER_CASES + KEY_CASES] + [f"a {key} b" for key in SHAPES]
    for text in texts:
        once = redact_text(text)
        assert redact_text(once) == once, text


def test_a_cut_pydantic_input_value_is_masked_whole() -> None:
    # pydantic quotes a long input cut in the middle: the name a rule needs may be gone.
    line = "Invalid JSON [type=json_invalid, input_value='https://api.example.com/...y=abc123secret&page=2', input_type=str]"
    assert redact_text(line) == "Invalid JSON [type=json_invalid, input_value=[REDACTED], input_type=str]"
    whole = "[type=json_invalid, input_value='progress: 50%', input_type=str]"
    assert redact_text(whole) == whole


def test_secret_key_names() -> None:
    for key in (
        "token",
        "api_key",
        "X-Api-Key",
        "password",
        "db_pass",
        "Authorization",
        "Set-Cookie",
        "client_secret",
        "aws_access_key_id",
    ):
        assert is_secret_key(key), key
    for key in ("author", "authority", "bypass", "passage", "city", "code", "state", "description"):
        assert not is_secret_key(key), key


# --- exact values: passed, registered, encoded ------------------------------------------------------


def test_known_secrets_are_masked_in_their_url_and_json_forms_too() -> None:
    secret = 'p@ss/w"rd 9'
    text = f"raw {secret} url https://x/?k=p%40ss%2Fw%22rd%209 json {json.dumps(secret)}"
    out = redact_text(text, (secret,))
    assert "p@ss" not in out and "p%40ss" not in out and 'w\\"rd' not in out
    assert out.count(REDACTED) == 3


def test_registered_secrets_are_masked_everywhere_without_being_passed() -> None:
    value = "reg-cnry-7c1e0f"
    assert redact_text(f"got {value}") == f"got {value}"
    before = registry_version()
    register_secret(value)
    assert registry_version() == before + 1
    register_secret("abc")  # too short to mask text safely: ignored
    assert value in registered_secrets() and "abc" not in registered_secrets()
    assert redact_text(f"got {value}") == f"got {REDACTED}"
    assert redact_value({"note": [f"x{value}x"]}) == {"note": [f"x{REDACTED}x"]}
    assert redact_text("abc") == "abc"


def test_configured_secrets_survive_any_number_of_transient_registrations(monkeypatch) -> None:
    monkeypatch.setattr(redaction, "MAX_TRANSIENT", 16)
    static = "zqStaticApiKey-1234567"
    register_secret(static)
    first, kept = "rotated-token-first-0001", "rotated-token-kept-0002"
    register_secret(first, transient=True)
    register_secret(kept, transient=True)
    for i in range(40):
        register_secret(f"rotated-token-{i:04d}-filler", transient=True)
        register_secret(kept, transient=True)  # in use again: the most recent, never the oldest
    assert redact_text(f"key={static} here").count(REDACTED) == 1
    assert static not in redact_text(f"before: {static} after")
    assert kept not in redact_text(f"using {kept}")
    assert redact_text(f"old {first}") == f"old {first}"  # forgotten: least recently registered
    assert registered_secrets().index(kept) > registered_secrets().index(static)


def test_a_transient_value_registered_again_as_configured_is_never_forgotten(monkeypatch) -> None:
    monkeypatch.setattr(redaction, "MAX_TRANSIENT", 4)
    value = "becomes-configured-77a1"
    register_secret(value, transient=True)
    register_secret(value)
    for i in range(10):
        register_secret(f"transient-churn-{i:03d}-x", transient=True)
    assert redact_text(value) == REDACTED


@pytest.mark.parametrize("value", ["production", "info", "crash", "Production", "localhost", "1234567", "disabled"])
def test_short_or_common_values_are_never_masked_by_value(value: str) -> None:
    assert not is_maskable(value)
    assert register_secret(value) is False
    assert value not in registered_secrets()
    text = f"deploying to {value}; see the {value} page"
    assert redact_text(text, (value,)) == text


def test_a_kept_name_is_not_masked_by_a_registered_value_but_the_value_elsewhere_is() -> None:
    secret = "crashmode-91zq"
    register_secret(secret)
    name, longer = f"f-{secret}", f"x{secret}-{secret}y"
    register_secret(longer)  # a secret that contains a kept name's part is masked whole
    text = f"server {name} crashed; value {secret}; other {longer}"
    out = redact_text(text, keep=(name,))
    assert out == f"server {name} crashed; value {REDACTED}; other {REDACTED}"
    assert redact_value({"server": name, "m": [secret]}, keep=(name,)) == {"server": name, "m": [REDACTED]}
    assert redact_text(name) == f"f-{REDACTED}"  # without keep, as before


def test_redact_known_masks_only_exact_values_and_keeps_the_object_when_nothing_matched() -> None:
    catalog = {
        "name": "t",
        "description": "Acts as exact-cnry-42; token: stays",
        "schema": {"default": ["exact-cnry-42"]},
    }
    masked = redact_known(catalog, ("exact-cnry-42",))
    assert masked == {
        "name": "t",
        "description": f"Acts as {REDACTED}; token: stays",
        "schema": {"default": [REDACTED]},
    }
    clean = {"name": "t", "description": "token: stays"}
    assert redact_known(clean, ("exact-cnry-42",)) is clean


# --- the logging filter ----------------------------------------------------------------------------


def test_the_logging_filter_redacts_message_arguments_and_traceback() -> None:
    record = logging.LogRecord(
        "mcp.client.stdio", logging.ERROR, __file__, 1, "sent %s to %r", ("token=abc123", {"password": "pw"}), None
    )
    try:
        raise ValueError("line was Authorization: Bearer abcdefghijklmnop")
    except ValueError:
        record.exc_info = sys.exc_info()
    record.stack_info = "Stack (most recent call last):\n  cookie: sid=zzz"
    assert RedactingFilter().filter(record) is True
    assert record.args is None and record.exc_info is None
    rendered = logging.Formatter().format(record)
    for secret in ("abc123", "'pw'", "abcdefghijklmnop", "sid=zzz"):
        assert secret not in rendered, rendered
    assert "token=[REDACTED]" in rendered and "Authorization: Bearer [REDACTED]" in rendered
    assert "Traceback" in rendered and "ValueError" in rendered


def test_the_logging_filter_masks_its_known_secrets_and_survives_a_bad_format_string() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "value %s %s", ("filter-cnry-99",), None)
    assert RedactingFilter(known_secrets=("filter-cnry-99",)).filter(record) is True
    assert "filter-cnry-99" not in record.getMessage() and REDACTED in record.getMessage()


# --- linear time -----------------------------------------------------------------------------------


def test_redaction_of_long_hostile_text_finishes(tmp_path) -> None:
    # Quadratic patterns took ~1 s at 5,000 chars and minutes at 100,000 (``"a." * 50_000`` took
    # 94 s before the scheme of a URL was bounded): run them in a child so a regression shows up
    # as a failure, not a hung suite. The bound is a hang guard, not a benchmark.
    inputs = [
        "'a' * 200_000 + ' token=' + 'b' * 200_000",
        "'a.' * 100_000",
        "'eyJa-' * 40_000",
        "'sk-' * 60_000",
        "'xoxb-' * 40_000",
        "'cookie:' * 30_000",
        "('x' * 31 + 'authorization') * 5_000",
        "'token=\"' * 30_000",
        "'pass' * 50_000",
        "'a://b:' * 30_000",
        "'?code=' * 30_000",
        "'bearer ' * 30_000",
        "'input_value=' * 20_000",
        "('input_value=' + '...' * 30) * 5_000",
        "'\\\\' * 200_000",
    ]
    code = "from patchbay.core.redaction import redact_text\n" + "\n".join(f"redact_text({expr})" for expr in inputs)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_redact_url_masks_the_password_of_a_url_and_keeps_the_rest() -> None:
    from patchbay.core.redaction import redact_url

    assert redact_url("redis://:hunter2-redis@127.0.0.1:6379/0") == f"redis://:{REDACTED}@127.0.0.1:6379/0"
    assert redact_url("rediss://app:pw@cache.example:6380/1") == f"rediss://app:{REDACTED}@cache.example:6380/1"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert redact_url("rediss://[::1") == "rediss://[::1"  # does not parse: returned, never raises
