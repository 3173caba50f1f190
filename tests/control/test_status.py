"""patchbay.control.status: the one badge of a connector, by the fixed priority
invalid > disabled > needs-auth > error > connecting/checking > connected/ready > unknown."""

from __future__ import annotations

import itertools

import pytest

from patchbay.control.status import STATUS_PRIORITY, display_status

CONFIG = ("valid", "invalid")
AUTH = ("not-required", "configured", "needs-auth", "expired", "error")
RUNTIME = ("unknown", "checking", "ready", "connecting", "connected", "error", "disabled")


def test_an_invalid_configuration_wins_over_everything() -> None:
    for auth, runtime in itertools.product(AUTH, RUNTIME):
        assert display_status("invalid", auth, runtime) == "invalid"


def test_disabled_wins_over_authentication_and_runtime_states() -> None:
    for auth in AUTH:
        assert display_status("valid", auth, "disabled") == "disabled"


@pytest.mark.parametrize("auth", ["needs-auth", "expired"])
@pytest.mark.parametrize("runtime", ["unknown", "checking", "ready", "connecting", "connected", "error"])
def test_needing_authentication_wins_over_runtime_errors_and_readiness(auth: str, runtime: str) -> None:
    assert display_status("valid", auth, runtime) == "needs-auth"


@pytest.mark.parametrize("runtime", ["unknown", "checking", "ready", "connecting", "connected", "error"])
def test_an_authentication_error_shows_as_error(runtime: str) -> None:
    assert display_status("valid", "error", runtime) == "error"


@pytest.mark.parametrize("auth", ["not-required", "configured"])
@pytest.mark.parametrize("runtime", ["unknown", "checking", "ready", "connecting", "connected", "error"])
def test_with_authentication_in_order_the_runtime_state_shows(auth: str, runtime: str) -> None:
    assert display_status("valid", auth, runtime) == runtime


def test_a_runtime_state_it_does_not_know_shows_as_unknown() -> None:
    assert display_status("valid", "configured", "rebooting") == "unknown"


def test_every_combination_gets_the_highest_ranked_status_that_applies() -> None:
    rank = {status: index for index, status in enumerate(STATUS_PRIORITY)}
    for config, auth, runtime in itertools.product(CONFIG, AUTH, RUNTIME):
        applies = {runtime if runtime in rank else "unknown"}
        if config == "invalid":
            applies.add("invalid")
        if auth in ("needs-auth", "expired"):
            applies.add("needs-auth")
        if auth == "error":
            applies.add("error")
        expected = min(applies, key=rank.__getitem__)
        assert display_status(config, auth, runtime) == expected, (config, auth, runtime)
    assert STATUS_PRIORITY[0] == "invalid" and STATUS_PRIORITY[-1] == "unknown" and len(set(STATUS_PRIORITY)) == 9
