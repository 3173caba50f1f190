"""A connector's ``runtime_state`` and badge with the live status of the hosted runtimes.

:func:`patchbay.control.decisions.runtime_state` is what canonical state and the tool cache say
(no connection opened); when a hosted runtime has a fresh entry for the connector in the live
status registry (:mod:`patchbay.core.live_status`), :func:`live_runtime_state` lets it speak
instead, and :func:`live_display_status` keeps the badge's fixed priority
(:func:`patchbay.control.status.display_status`). Pure.
"""

from __future__ import annotations

from patchbay.control.status import ConnectorStatus, display_status
from patchbay.core.live_status import LiveStatus
from patchbay.core.models import RuntimeState

__all__ = ["live_display_status", "live_runtime_state"]

_FROM_LIVE: dict[str, RuntimeState] = {
    "connected": "connected",
    "connecting": "connecting",
    "failed": "error",
    "needs-auth": "error",
    "disabled": "disabled",
}


def live_runtime_state(cached: RuntimeState, live: LiveStatus | None) -> RuntimeState:
    """The ``runtime_state`` shown for a connector.

    Args:
        cached: its cache-based state (``runtime_state`` of :mod:`patchbay.control.decisions`).
        live: its live status, None when no runtime reported it.

    Returns:
        ``cached`` when it is ``disabled`` (the stored setting wins), when ``live`` is None or
        stale (``unknown``), or when the runtimes are not connected and add nothing to the cache
        (``cached``, ``not-connected``); else the live state: ``connected``, ``connecting``,
        ``error`` for ``failed`` and ``needs-auth``.
    """
    if cached == "disabled" or live is None or not live.fresh:
        return cached
    return _FROM_LIVE.get(live.state, cached)


def live_display_status(
    config_state: str, auth_state: str, runtime_state: str, live: LiveStatus | None
) -> ConnectorStatus:
    """The badge, by :func:`~patchbay.control.status.display_status`, with a fresh live
    ``needs-auth`` counted as the authentication state it is (so it shows as ``needs-auth``,
    above ``error``).

    Args:
        config_state: ``valid`` or ``invalid``.
        auth_state: the stored authentication state.
        runtime_state: :func:`live_runtime_state`'s answer.
        live: the live status, None when no runtime reported it.
    """
    if live is not None and live.fresh and live.state == "needs-auth":
        auth_state = "needs-auth"
    return display_status(config_state, auth_state, runtime_state)
