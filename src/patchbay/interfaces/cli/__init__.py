"""The ``patchbay`` command line (Typer + Rich). Every command takes ``--json``.

``--home DIR`` (or ``PATCHBAY_HOME``) picks the data home; the default is the platform user-data
directory. Everything the CLI writes is redacted: its console output and JSON (see ``_context``) and
Python log records (:func:`configure_logging`), with ``PATCHBAY_DEBUG=1`` as well.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sys
from pathlib import Path
from typing import TextIO

import typer

from patchbay.core.redaction import RedactingFilter
from patchbay.interfaces.cli import (
    auth,
    connectors,
    credentials,
    gateway_install,
    gateway_token,
    governed,
    imports,
    prompts,
    resources,
    serve,
)
from patchbay.interfaces.cli._context import state
from patchbay.interfaces.cli._help import PlainHelpGroup
from patchbay.interfaces.cli.gateway import gateway as gateway_command
from patchbay.interfaces.cli.sessions import sessions as sessions_command

__all__ = ["app", "configure_logging", "main"]

app = typer.Typer(
    cls=PlainHelpGroup,
    name="patchbay",
    help="Patchbay: one registry, real probes and a governed call path for MCP connectors.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(connectors.app, name="connector")
app.add_typer(credentials.app, name="credential")
app.add_typer(auth.app, name="auth")
app.add_typer(imports.app, name="import")
app.add_typer(resources.app, name="resource")
app.add_typer(prompts.app, name="prompt")
app.command("probe")(governed.probe)
app.command("tools")(governed.tools)
app.command("grant")(governed.grant)
app.command("call")(governed.call)
app.command("events")(governed.events)
app.command("sessions")(sessions_command)
app.command("serve")(serve.serve)
app.command("api-token")(serve.api_token_command)
gateway_app = typer.Typer(
    cls=PlainHelpGroup,
    invoke_without_command=True,
    help="The Patchbay gateway: one governed MCP server for any MCP host, and its host config entries.",
)
gateway_app.callback()(gateway_command)
gateway_app.command("install")(gateway_install.install)
gateway_app.command("uninstall")(gateway_install.uninstall)
gateway_app.command("restore")(gateway_install.restore)
gateway_app.command("token")(gateway_token.token)
app.add_typer(gateway_app, name="gateway")


def _print_version(value: bool) -> None:
    if value:
        from patchbay.core.version import __version__

        typer.echo(f"patchbay {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    home: Path | None = typer.Option(None, "--home", envvar="PATCHBAY_HOME", help="Data home directory."),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    state.home = home
    state._service = None
    configure_logging(debug=bool(os.environ.get("PATCHBAY_DEBUG")))


_SDK_LOGGERS = ("mcp", "httpx2", "httpcore2")
_DEBUG_LOGGERS = ("patchbay", "mcp")


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the time of the record (as ``logging.lastResort``
    does), so a replaced stderr (a test runner's, a redirected one) is honoured."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:  # type: ignore[override]  # a read-only property over the base's attribute, on purpose
        return sys.stderr


def configure_logging(*, debug: bool) -> None:
    """Route Python log records to stderr through :class:`~patchbay.core.redaction.RedactingFilter`.

    One handler on the root logger (added once per process, whatever the number of commands run in
    it) writes every record that reaches it to stderr, redacted: the message with its arguments,
    tracebacks and stack info. Without ``debug`` the handler passes warnings and above, and the
    SDK's own loggers (``mcp``, ``httpx2``, ``httpcore2``) are kept off the terminal entirely: the
    SDK logs e.g. every non-JSON stdout line of a server with a traceback that quotes the line, and
    what matters reaches the user through probe results and events. With ``debug``
    (``PATCHBAY_DEBUG=1``) those records come through, ``patchbay`` and ``mcp`` down to DEBUG, still
    redacted.

    Args:
        debug: whether ``PATCHBAY_DEBUG`` is set.
    """
    root = logging.getLogger()
    handler = next((h for h in root.handlers if isinstance(h, _StderrHandler)), None)
    if handler is None:
        handler = _StderrHandler()
        handler.addFilter(RedactingFilter())
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    handler.setLevel(logging.DEBUG if debug else logging.WARNING)
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        quiet = [h for h in logger.handlers if isinstance(h, logging.NullHandler)]
        if debug:
            logger.propagate = True
            for null in quiet:
                logger.removeHandler(null)
        else:
            logger.propagate = False
            if not quiet:
                logger.addHandler(logging.NullHandler())
    for name in _DEBUG_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.NOTSET)


def main() -> None:
    """Console-script entry point."""
    # A command ends right after its work; the interpreter's last garbage collection of a large
    # heap (the SDK, pydantic models, SQLAlchemy) would add up to a second to every exit, e.g. a
    # host waiting for its gateway to stop. Freezing the heap at exit skips it.
    atexit.register(gc.freeze)
    app()
