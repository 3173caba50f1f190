"""patchbay.runtime.live_status: the in-process registry (TTL on an injected clock)."""

from __future__ import annotations

from patchbay.core.live_status import LIVE_TTL, ConnectorLive
from patchbay.runtime.live_status import InProcessStatusRegistry


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_publish_read_and_the_ttl() -> None:
    clock = Clock()
    registry = InProcessStatusRegistry(clock=clock)
    assert registry.read("con_a") is None and registry.read_all() == {}
    registry.publish("rt1", [ConnectorLive("con_a", "connected", tool_count=2, updated_at=5.0)])
    status = registry.read("con_a")
    assert status is not None and status.state == "connected" and status.updated_at == clock.now
    clock.now += LIVE_TTL + 1
    status = registry.read("con_a")
    assert status is not None and status.state == "unknown"  # stale, not removed
    assert registry.read_all()["con_a"].state == "unknown"


def test_a_heartbeat_keeps_a_quiet_session_fresh() -> None:
    clock = Clock()
    registry = InProcessStatusRegistry(clock=clock)
    registry.publish("rt1", [ConnectorLive("con_a", "cached")])
    for _ in range(5):
        clock.now += LIVE_TTL / 2
        registry.touch("rt1")
    assert registry.read("con_a").state == "cached"  # type: ignore[union-attr]
    registry.touch("nobody")  # an unknown source: nothing happens
    assert set(registry.read_all()) == {"con_a"}


def test_sessions_aggregate_and_a_withdrawn_one_leaves() -> None:
    registry = InProcessStatusRegistry(clock=Clock())
    registry.publish("rt1", [ConnectorLive("con_a", "connected", in_flight=1), ConnectorLive("con_b", "failed")])
    registry.publish("rt2", [ConnectorLive("con_a", "cached", in_flight=2)])
    status = registry.read("con_a")
    assert status is not None and (status.state, status.sessions, status.in_flight) == ("connected", 2, 3)
    registry.withdraw("rt1")
    status = registry.read("con_a")
    assert status is not None and (status.state, status.sessions, status.in_flight) == ("cached", 1, 2)
    assert registry.read("con_b") is None
    registry.withdraw("rt2")
    assert registry.read_all() == {}


def test_entries_long_past_the_ttl_are_forgotten() -> None:
    clock = Clock()
    registry = InProcessStatusRegistry(clock=clock)
    registry.publish("gone", [ConnectorLive("con_a", "connected")])
    clock.now += LIVE_TTL * 11
    registry.publish("live", [ConnectorLive("con_b", "connected")])
    assert set(registry.read_all()) == {"con_b"}
