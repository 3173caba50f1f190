"""What to say when a stdio server went away before the MCP handshake completed.

The SDK only reports ``Connection closed`` (JSON-RPC -32000) when a server's stdout ends; a person
needs to know that the process exited, with which status or signal, and what it printed on
stderr. :func:`exit_failure` turns that into one ``server_closed`` error with those facts (the
code stays the seed's; only the message says more).
"""

from __future__ import annotations

import signal

import anyio

from patchbay.adapters.transports.stdio import StdioLink
from patchbay.core.errors import ErrorCode, ProbeError

__all__ = ["describe_exit", "exit_failure"]

EXIT_WAIT = 2.0
"""Seconds to wait for the process to be reaped (and its stderr to end) after stdout closed."""
_POLL = 0.02
_TAIL_IN_MESSAGE = 600  # characters of the stderr tail quoted in the message


def describe_exit(returncode: int | None) -> str:
    """``exited with status 3``, ``was killed by signal SIGKILL`` or (None) ``closed its stdout``."""
    if returncode is None:
        return "closed its stdout but is still running"
    if returncode >= 0:
        return f"exited with status {returncode}"
    return f"was killed by signal {_signal_name(-returncode)}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


async def exit_failure(link: StdioLink, known_secrets: tuple[str, ...] = ()) -> ProbeError:
    """A ``server_closed`` error saying how the server of ``link`` ended, with its stderr tail.

    Waits up to :data:`EXIT_WAIT` seconds for the process to be reaped and for stderr to reach
    EOF, so the status and the last lines are there (stdout can close a moment before either).
    The tail is redacted (:meth:`StderrTail.text`, with ``known_secrets`` masked).

    Returns:
        ``ProbeError(code="server_closed")`` with a message like ``the server exited with status 3
        before the MCP handshake completed; stderr: fatal: no config``; ``details`` carry
        ``exitStatus`` (int or None) and ``signal`` (e.g. ``"SIGKILL"`` or None).
    """
    process = link.process
    with anyio.move_on_after(EXIT_WAIT):
        while process is not None and process.returncode is None:
            await anyio.sleep(_POLL)
        if link.stderr_closed is not None:
            await link.stderr_closed.wait()
    returncode = process.returncode if process is not None else None
    message = f"the server {describe_exit(returncode)} before the MCP handshake completed"
    tail = link.stderr.text(known_secrets).strip()
    if tail:
        shown = tail if len(tail) <= _TAIL_IN_MESSAGE else "…" + tail[-_TAIL_IN_MESSAGE:]
        message += f"; stderr: {' | '.join(line.strip() for line in shown.splitlines() if line.strip())}"
    else:
        message += " (it wrote nothing to stderr)"
    killed_by = _signal_name(-returncode) if returncode is not None and returncode < 0 else None
    return ProbeError(
        message,
        code=ErrorCode.SERVER_CLOSED,
        details={"exitStatus": returncode if returncode is not None and returncode >= 0 else None, "signal": killed_by},
    )
