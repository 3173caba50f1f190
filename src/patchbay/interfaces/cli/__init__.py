"""The ``patchbay`` command line (Typer + Rich). Every command takes ``--json``.

``--home DIR`` (or ``PATCHBAY_HOME``) picks the data home; the default is the platform user-data
directory.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import typer

from patchbay.interfaces.cli import connectors, governed
from patchbay.interfaces.cli._context import state

__all__ = ["app", "main"]

app = typer.Typer(
    name="patchbay",
    help="Patchbay: one registry, real probes and a governed call path for MCP connectors.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(connectors.app, name="connector")
app.command("probe")(governed.probe)
app.command("tools")(governed.tools)
app.command("grant")(governed.grant)
app.command("call")(governed.call)
app.command("events")(governed.events)


@app.callback()
def _global(
    home: Path | None = typer.Option(None, "--home", envvar="PATCHBAY_HOME", help="Data home directory."),
) -> None:
    state.home = home
    state._service = None
    _quiet_sdk_logs()


def _quiet_sdk_logs() -> None:
    """Keep the SDK's own log records (tracebacks quoting raw server output) off the terminal.

    The SDK logs e.g. every non-JSON stdout line of a server with a traceback that quotes the line,
    which can hold secrets. What matters reaches the user through probe results and events,
    redacted; ``PATCHBAY_DEBUG=1`` lets the records through.
    """
    if os.environ.get("PATCHBAY_DEBUG"):
        return
    for name in ("mcp", "httpx2", "httpcore2"):
        logger = logging.getLogger(name)
        logger.propagate = False
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())


def main() -> None:
    """Console-script entry point."""
    app()
