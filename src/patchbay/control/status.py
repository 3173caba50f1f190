"""The one status a front end shows for a connector, from its three separate states.

A connector's configuration, authentication and runtime are modelled apart (``config_state``,
``auth_state``, ``runtime_state``); a list row or a badge needs one word. :func:`display_status`
picks it by a fixed priority, so the settings page, the REST API and the CLI always agree:

    invalid > disabled > needs-auth > error > connecting/checking > connected/ready > unknown

Pure: plain values in, a plain value out; no I/O.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["STATUS_PRIORITY", "ConnectorStatus", "display_status"]

ConnectorStatus = Literal[
    "invalid", "disabled", "needs-auth", "error", "connecting", "checking", "connected", "ready", "unknown"
]
"""What a connector's badge says (see :func:`display_status`)."""

STATUS_PRIORITY: tuple[ConnectorStatus, ...] = (
    "invalid",
    "disabled",
    "needs-auth",
    "error",
    "connecting",
    "checking",
    "connected",
    "ready",
    "unknown",
)
"""Every status, the one that wins first (``connecting``/``checking`` and ``connected``/``ready``
are pairs of equal rank: a connector has only one runtime state at a time)."""

_RUNTIME: dict[str, ConnectorStatus] = {
    "disabled": "disabled",
    "error": "error",
    "connecting": "connecting",
    "checking": "checking",
    "connected": "connected",
    "ready": "ready",
}


def display_status(config_state: str, auth_state: str, runtime_state: str) -> ConnectorStatus:
    """The badge of a connector.

    Args:
        config_state: ``valid`` or ``invalid`` (a stored configuration that could not run).
        auth_state: ``not-required``, ``configured``, ``needs-auth``, ``expired`` (a refused or
            lapsed grant: the person must authorize again, so it shows as ``needs-auth``) or
            ``error`` (shows as ``error``).
        runtime_state: ``unknown``, ``checking``, ``ready``, ``connecting``, ``connected``,
            ``error`` or ``disabled``; anything else counts as ``unknown``.

    Returns:
        The first of :data:`STATUS_PRIORITY` that applies: ``invalid`` for an invalid
        configuration, whatever else is true; then ``disabled``; then ``needs-auth``; then an
        error of the runtime or of authentication; then the runtime state itself.
    """
    if config_state == "invalid":
        return "invalid"
    if runtime_state == "disabled":
        return "disabled"
    if auth_state in ("needs-auth", "expired"):
        return "needs-auth"
    if auth_state == "error":
        return "error"
    return _RUNTIME.get(runtime_state, "unknown")
