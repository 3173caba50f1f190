"""The restart policy decides from the crash count alone (plain values, no connection)."""

from __future__ import annotations

import pytest

from patchbay.core.errors import FailureReason
from patchbay.core.models import RestartPolicy
from patchbay.runtime.connection.restart_policy import RestartDecision, decide_restart, may_retry_connect


def test_crashes_up_to_max_restarts_restart_with_a_growing_delay() -> None:
    policy = RestartPolicy(max_restarts=3)
    decisions = [decide_restart(n, policy) for n in (1, 2, 3)]
    assert [d.restart for d in decisions] == [True, True, True]
    assert [d.delay for d in decisions] == [policy.delay(1), policy.delay(2), policy.delay(3)]
    assert decisions[0].delay < decisions[1].delay < decisions[2].delay


def test_the_first_crash_restarts_the_calls_in_flight_and_later_ones_call_it_unstable() -> None:
    policy = RestartPolicy(max_restarts=3)
    assert decide_restart(1, policy).reason is FailureReason.MCP_SERVER_RESTARTED
    assert decide_restart(2, policy).reason is FailureReason.MCP_SERVER_UNSTABLE


def test_the_crash_after_the_last_restart_is_permanent() -> None:
    policy = RestartPolicy(max_restarts=2)
    assert decide_restart(3, policy) == RestartDecision(
        crash=3, restart=False, delay=0.0, reason=FailureReason.MCP_SERVER_UNSTABLE
    )


def test_without_restarts_the_first_crash_is_permanent_and_calls_see_unavailable() -> None:
    assert decide_restart(1, RestartPolicy(enabled=False)) == RestartDecision(
        crash=1, restart=False, delay=0.0, reason=FailureReason.MCP_SERVER_UNAVAILABLE
    )


def test_crash_numbers_start_at_one() -> None:
    with pytest.raises(ValueError):
        decide_restart(0, RestartPolicy())


def test_a_failed_first_connect_is_retried_at_most_max_restarts_times() -> None:
    policy = RestartPolicy(max_restarts=2)
    assert [may_retry_connect(n, policy) for n in (1, 2, 3)] == [True, True, False]
    assert not may_retry_connect(1, RestartPolicy(enabled=False))
