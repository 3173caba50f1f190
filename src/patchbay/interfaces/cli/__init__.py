"""The ``patchbay`` command line (Typer + Rich). Every command takes ``--json``.

``--home DIR`` (or ``PATCHBAY_HOME``) picks the data home; the default is the platform user-data
directory.
"""

from __future__ import annotations

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


def main() -> None:
    """Console-script entry point."""
    app()
