"""The per-connector runtime options of ``patchbay connector add|set|show``: their Typer options,
text → number parsing, and the rows ``show`` prints.

Values are parsed here only as far as text → number; every rule is the service's
(``invalid_config`` naming the field).
"""

from __future__ import annotations

import math
import re
from typing import Any

import typer
from rich.text import Text

from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, RuntimeOptions
from patchbay.interfaces.cli._context import out_console

PANEL = "Runtime options"
LIFECYCLE_OPTION = typer.Option(
    None,
    "--lifecycle",
    metavar="MODE",
    help="lazy (default: connect on first use), eager, keep_alive or lazy_keep_alive (first use, then never idle-closed).",
    rich_help_panel=PANEL,
)
IDLE_TIMEOUT_OPTION = typer.Option(
    None,
    "--idle-timeout",
    metavar="SECONDS",
    help="Close an unused lazy/eager connection after this.",
    rich_help_panel=PANEL,
)
REQUEST_TIMEOUT_OPTION = typer.Option(
    None,
    "--request-timeout",
    metavar="SECONDS",
    help="Fail a call silent this long (progress resets it).",
    rich_help_panel=PANEL,
)
MAX_CALL_OPTION = typer.Option(
    None, "--max-call-seconds", metavar="SECONDS", help="Hard cap on one call, progress or not.", rich_help_panel=PANEL
)
RESTART_OPTION = typer.Option(
    None,
    "--restart/--no-restart",
    help="Restart a crashed server (default) or give up at once.",
    rich_help_panel=PANEL,
)
RESTART_BASE_OPTION = typer.Option(
    None,
    "--restart-base",
    metavar="SECONDS",
    help="Delay before the first restart; doubles each time.",
    rich_help_panel=PANEL,
)
RESTART_CAP_OPTION = typer.Option(
    None, "--restart-cap", metavar="SECONDS", help="Longest delay between restarts.", rich_help_panel=PANEL
)
MAX_RESTARTS_OPTION = typer.Option(
    None, "--max-restarts", metavar="N", help="Restarts before a crash is permanent (0-100).", rich_help_panel=PANEL
)
UNRESPONSIVE_OPTION = typer.Option(
    None,
    "--unresponsive-timeouts",
    metavar="N",
    help="Restart the server after N request timeouts in a row (0: never; default 3).",
    rich_help_panel=PANEL,
)
LIMIT_MEMORY_OPTION = typer.Option(
    None,
    "--limit-memory",
    metavar="SIZE",
    help="Address-space limit (stdio): bytes or 512M, 2G (binary).",
    rich_help_panel=PANEL,
)
LIMIT_CPU_OPTION = typer.Option(
    None, "--limit-cpu", metavar="SECONDS", help="CPU-time limit of the server process (stdio).", rich_help_panel=PANEL
)
LIMIT_OPEN_FILES_OPTION = typer.Option(
    None,
    "--limit-open-files",
    metavar="N",
    help="Open-file limit of the server process (stdio).",
    rich_help_panel=PANEL,
)

ALLOW_PRIVATE_OPTION = typer.Option(
    None,
    "--allow-private/--no-allow-private",
    help="Remote only: let requests reach loopback/private/link-local addresses (refused by default).",
    rich_help_panel=PANEL,
)

_SIZE = re.compile(r"^\s*(\d+)\s*(?:([kmgt])(?:i?b)?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
#: ``--reset`` names: the option flag without ``--`` → (option key, key inside its section or None).
RESETS: dict[str, tuple[str, str | None]] = {
    "lifecycle": ("lifecycle", None),
    "idle-timeout": ("idle_timeout", None),
    "request-timeout": ("request_timeout", None),
    "max-call-seconds": ("max_call_seconds", None),
    "restart": ("restart", None),
    "restart-base": ("restart", "base_delay"),
    "restart-cap": ("restart", "max_delay"),
    "max-restarts": ("restart", "max_restarts"),
    "unresponsive-timeouts": ("unresponsive_timeouts", None),
    "limits": ("limits", None),
    "limit-memory": ("limits", "address_space_bytes"),
    "limit-cpu": ("limits", "cpu_seconds"),
    "limit-open-files": ("limits", "open_files"),
    "allow-private": ("allow_private", None),
}


def parse_size(field: str, text: str) -> int:
    """Bytes from ``"1048576"``, ``"512K"``, ``"512M"``, ``"2G"``, ``"1T"`` (binary units; ``KiB``/``KB`` too).

    Raises:
        ConfigError: ``invalid_config`` naming ``field`` for anything else.
    """
    match = _SIZE.match(text)
    if match is None:
        raise ConfigError(field, f"must be bytes or a whole number with K, M, G or T (binary, 1K = 1024); got {text!r}")
    return int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]


def _number(field: str, text: str | None, kind: type[int] | type[float]) -> int | float | None:
    if text is None:
        return None
    try:
        return kind(text.strip())
    except ValueError:
        noun = "a whole number" if kind is int else "a number of seconds"
        raise ConfigError(field, f"must be {noun}; got {text!r}") from None


def runtime_changes(
    *,
    lifecycle: str | None = None,
    idle_timeout: str | None = None,
    request_timeout: str | None = None,
    max_call_seconds: str | None = None,
    restart: bool | None = None,
    restart_base: str | None = None,
    restart_cap: str | None = None,
    max_restarts: str | None = None,
    unresponsive_timeouts: str | None = None,
    limit_memory: str | None = None,
    limit_cpu: str | None = None,
    limit_open_files: str | None = None,
    allow_private: bool | None = None,
    reset: list[str] | None = None,
) -> dict[str, Any]:
    """The ``update_runtime_options`` changes for the given flags (text as typed); ``{}`` if none.

    ``reset`` names options to put back to their default (``RESETS`` keys); a reset and a value
    for the same option are refused.

    Raises:
        ConfigError: ``invalid_config`` naming the field for text that is no number or size, or an
            unknown/conflicting ``--reset``.
    """
    top: dict[str, Any] = {
        "lifecycle": lifecycle,
        "idle_timeout": _number("idle_timeout", idle_timeout, float),
        "request_timeout": _number("request_timeout", request_timeout, float),
        "max_call_seconds": _number("max_call_seconds", max_call_seconds, float),
        "unresponsive_timeouts": _number("unresponsive_timeouts", unresponsive_timeouts, int),
        "allow_private": allow_private,
    }
    sections: dict[str, dict[str, Any]] = {
        "restart": {
            "enabled": restart,
            "base_delay": _number("restart.base_delay", restart_base, float),
            "max_delay": _number("restart.max_delay", restart_cap, float),
            "max_restarts": _number("restart.max_restarts", max_restarts, int),
        },
        "limits": {
            "address_space_bytes": None
            if limit_memory is None
            else parse_size("limits.address_space_bytes", limit_memory),
            "cpu_seconds": _number("limits.cpu_seconds", limit_cpu, int),
            "open_files": _number("limits.open_files", limit_open_files, int),
        },
    }
    changes: dict[str, Any] = {k: v for k, v in top.items() if v is not None}
    for key, section in sections.items():
        given = {k: v for k, v in section.items() if v is not None}
        if given:
            changes[key] = given
    values = {k: dict(v) if isinstance(v, dict) else v for k, v in changes.items()}
    for name in reset or []:
        if name not in RESETS:
            raise ConfigError("reset", f"unknown option {name!r}; one of: {', '.join(RESETS)}")
        key, sub = RESETS[name]
        if (sub is None and key in values) or (sub is not None and sub in values.get(key, {})):
            raise ConfigError(key if sub is None else f"{key}.{sub}", f"given both a value and --reset {name}")
        if sub is None:
            changes[key] = None
        elif changes.get(key, {}) is not None:
            changes.setdefault(key, {})[sub] = None
    return changes


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _size(value: int) -> str:
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value % factor == 0:
            return f"{value // factor} {unit}"
    return f"{value} bytes"


def runtime_rows(connector: Connector, options: RuntimeOptions) -> list[tuple[str, str]]:
    """``show`` rows of the effective options; values not set on the connector say ``(default)``."""
    stored = connector.runtime_config

    def mark(key: str, text: str) -> str:
        return text if key in stored else f"{text} (default)"

    idle = options.idle_timeout
    if options.lifecycle in ("keep_alive", "lazy_keep_alive"):
        idle_text = f"never ({options.lifecycle})"
    else:
        idle_text = mark("idle_timeout", "never" if not idle or not math.isfinite(idle) else _seconds(idle))
    r = options.restart
    restart = (
        f"on: {_seconds(r.base_delay)} doubling up to {_seconds(r.max_delay)}, at most {r.max_restarts} restarts"
        if r.enabled
        else "off: the first crash is permanent"
    )
    lim = options.limits
    parts = [
        f"memory {_size(lim.address_space_bytes)}" if lim.address_space_bytes else "",
        f"cpu {lim.cpu_seconds}s" if lim.cpu_seconds else "",
        f"open files {lim.open_files}" if lim.open_files else "",
    ]
    limits = ", ".join(p for p in parts if p) or ("-" if connector.transport == "stdio" else "- (stdio only)")
    return [
        ("lifecycle", mark("lifecycle", options.lifecycle)),
        ("idle timeout", idle_text),
        ("request timeout", mark("request_timeout", _seconds(options.request_timeout or 0))),
        ("max call", mark("max_call_seconds", _seconds(options.max_call_seconds or 0))),
        ("restart", mark("restart", restart)),
        ("unresponsive", mark("unresponsive_timeouts", _unresponsive(options.unresponsive_timeouts))),
        ("limits", limits),
        (
            "private addresses",
            mark("allow_private", "allowed" if options.allow_private else "refused")
            if connector.transport in ("streamable_http", "sse")
            else "- (remote only)",
        ),
    ]


def _unresponsive(timeouts: int | None) -> str:
    if not timeouts:
        return "never restarted for timeouts"
    return f"restarted after {timeouts} request timeouts in a row"


def print_rows(rows: list[tuple[str, str]]) -> None:
    for key, value in rows:
        out_console.print(Text(f"{key:>16}: {value}"))
