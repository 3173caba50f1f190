"""patchbay.core.live_status: the value types and how several runtimes' entries add up."""

from __future__ import annotations

import dataclasses

from patchbay.core.live_status import LIVE_TTL, ConnectorLive, aggregate


def entry(state: str = "connected", *, at: float = 1000.0, **fields: object) -> ConnectorLive:
    return ConnectorLive("con_a", state, updated_at=at, **fields)  # type: ignore[arg-type]


def test_no_entries_is_no_status() -> None:
    assert aggregate([], now=1000.0) is None


def test_connected_if_any_session_is_connected_and_counts_add_up() -> None:
    status = aggregate(
        [
            entry("failed", failed_at=990.0, restarts=2, tool_count=3),
            entry("connected", in_flight=2, tool_count=3, resource_count=4),
            entry("cached", in_flight=1, tool_count=3),
        ],
        now=1000.0,
    )
    assert status is not None
    assert (status.state, status.fresh, status.sessions) == ("connected", True, 3)
    assert (status.in_flight, status.restarts) == (3, 2)
    # the same catalog in each session: counted once, not once per session
    assert (status.tool_count, status.resource_count) == (3, 4)
    assert status.failure_age is None  # it is connected: no failure is current


def test_failing_sessions_say_how_long_ago_the_latest_failure_was() -> None:
    status = aggregate([entry("failed", failed_at=940.0), entry("needs-auth", failed_at=970.0)], now=1000.0)
    assert status is not None
    assert status.state == "needs-auth"  # above failed: a person can fix it
    assert status.failure_age == 30.0


def test_entries_older_than_the_ttl_read_as_unknown_but_stay() -> None:
    stale = entry("connected", at=1000.0, in_flight=1)
    assert aggregate([stale], now=1000.0 + LIVE_TTL).state == "connected"  # type: ignore[union-attr]
    status = aggregate([stale], now=1000.0 + LIVE_TTL + 0.5)
    assert status is not None
    assert (status.state, status.fresh, status.sessions, status.in_flight) == ("unknown", False, 0, 0)
    assert status.updated_at == 1000.0
    # one stale session does not hide a fresh one
    fresh = entry("cached", at=1080.0)
    assert aggregate([stale, fresh], now=1095.0).state == "cached"  # type: ignore[union-attr]


def test_the_change_key_ignores_times() -> None:
    a = aggregate([entry("failed", failed_at=900.0, at=950.0)], now=1000.0)
    b = aggregate([entry("failed", failed_at=900.0, at=990.0)], now=1010.0)
    assert a is not None and b is not None
    assert a.key() == b.key() and a.updated_at != b.updated_at and a.failure_age != b.failure_age


SENSITIVE = ("url", "header", "command", "args", "env", "schema", "credential", "token", "secret", "message", "cwd")


def test_no_field_could_carry_a_url_header_schema_or_credential() -> None:
    from patchbay.core.live_status import LiveStatus

    for kind in (ConnectorLive, LiveStatus):
        for field in dataclasses.fields(kind):
            assert not any(word in field.name for word in SENSITIVE), (kind.__name__, field.name)
            assert field.type in ("str", "int", "float", "bool", "int | None", "float | None", "LiveState") or (
                "Literal" in str(field.type)
            ), (kind.__name__, field.name, field.type)
