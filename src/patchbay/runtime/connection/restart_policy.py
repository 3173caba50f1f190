"""The restart policy as a pure function of a connection's crash count.

:func:`decide_restart` says what follows crash ``n`` of a connection under a
:class:`~patchbay.core.models.RestartPolicy`: while ``n <= max_restarts`` (and restarts are
enabled) the connection restarts after ``policy.delay(n)`` seconds, else it has failed for good;
the calls in flight at the crash learn their reason (``mcp_server_restarted`` at crash 1,
``mcp_server_unstable`` later, ``mcp_server_unavailable`` when the first crash is already final).
:func:`may_retry_connect` applies the same policy to a first connect that failed. The connection
(:mod:`patchbay.runtime.connection.server_connection`) counts, emits the events and sleeps; nothing here has state.
"""

from __future__ import annotations

from dataclasses import dataclass

from patchbay.core.errors import FailureReason
from patchbay.core.models import RestartPolicy

__all__ = ["RestartDecision", "decide_restart", "may_retry_connect"]


@dataclass(frozen=True)
class RestartDecision:
    """What follows one crash.

    Attributes:
        crash: the crash's number in the runtime session (1, 2, ...).
        restart: True: reconnect after :attr:`delay`; False: the connection failed permanently.
        delay: seconds to wait before reconnecting (0.0 when not restarting).
        reason: what the calls in flight at the crash fail with.
    """

    crash: int
    restart: bool
    delay: float
    reason: FailureReason


def decide_restart(crash: int, policy: RestartPolicy) -> RestartDecision:
    """The decision for crash number ``crash`` (1 for the first) under ``policy``.

    Raises:
        ValueError: ``crash`` is below 1.
    """
    if crash < 1:
        raise ValueError(f"crash numbers start at 1, not {crash}")
    restart = policy.enabled and crash <= policy.max_restarts
    if crash > 1:
        reason = FailureReason.MCP_SERVER_UNSTABLE
    elif restart:
        reason = FailureReason.MCP_SERVER_RESTARTED
    else:
        reason = FailureReason.MCP_SERVER_UNAVAILABLE
    return RestartDecision(crash=crash, restart=restart, delay=policy.delay(crash) if restart else 0.0, reason=reason)


def may_retry_connect(failures: int, policy: RestartPolicy) -> bool:
    """Whether a first connect that failed ``failures`` times may be tried again (once its delay,
    ``policy.delay(failures)``, has passed): at most ``max_restarts`` retries, none when disabled."""
    return policy.enabled and failures <= policy.max_restarts
