"""``patchbay serve``: the REST API (seed 003 §8) on uvicorn.

Binds ``127.0.0.1:8765`` by default (``PATCHBAY_API_HOST`` / ``PATCHBAY_API_PORT``, or
``--host``/``--port``; ``--port 0`` takes any free port). Any address that is not loopback is
refused unless ``--allow-remote`` is given, and then a warning is printed: the API registers
local commands, so whoever reaches it can make this machine run programs. At start it prints the
URL, the data home and the database (``--json``: one JSON object), then serves until
interrupted (Ctrl-C or SIGTERM). While it starts, each step is a ``patchbay serve: [<s>] ...``
line on stderr with the seconds since the command began: loading the API, opening the store
(and migrating it), the session host.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import time

import typer
from rich.text import Text

from patchbay.core.errors import CanonicalStateUnavailable, ConfigError
from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, err_console, handle_errors, out_console, state

__all__ = ["is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback IP literal (127.0.0.0/8, ::1).

    Any other name counts as not loopback: what it resolves to may change.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port``.

    Raises:
        ConfigError: ``invalid_config`` (field ``host`` or ``port``) when it cannot be bound.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
    except socket.gaierror as exc:
        raise ConfigError("host", f"cannot resolve {host!r}: {exc.strerror}") from None
    # proto IPPROTO_TCP (not 0): asyncio then sets TCP_NODELAY on every accepted connection, so
    # a keep-alive client does not wait out delayed ACKs (~40 ms a request).
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError("port", f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class _Progress:
    """Start-up steps on stderr, timed from the command's start (a slow start says where it is)."""

    def __init__(self) -> None:
        self._started = time.monotonic()

    def step(self, what: str) -> None:
        err_console.print(Text(f"patchbay serve: [{time.monotonic() - self._started:5.1f}s] {what}"))


def _url(sock: socket.socket) -> str:
    address, port = sock.getsockname()[:2]
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"


@handle_errors
def serve(
    host: str | None = typer.Option(None, "--host", help="Address to bind (default 127.0.0.1, PATCHBAY_API_HOST)."),
    port: int | None = typer.Option(
        None, "--port", min=0, max=65535, help="Port (default 8765, PATCHBAY_API_PORT; 0: any free port)."
    ),
    allow_remote: bool = typer.Option(
        False,
        "--allow-remote",
        help="Allow binding an address other than loopback (anyone who reaches it can run commands).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Serve the REST API (connectors, settings, probe, tools, grants) until interrupted."""
    progress = _Progress()
    settings = state.settings
    host = host if host is not None else settings.api_host
    port = port if port is not None else settings.api_port
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise ConfigError(
            "host",
            f"{host} is not a loopback address; the API can make this machine run commands, "
            "so serving it beyond this machine needs --allow-remote",
        )
    progress.step("loading the API")
    import uvicorn

    from patchbay.adapters.store._errors import database_label
    from patchbay.interfaces.api import LOOPBACK_HOSTS, create_app

    app = create_app(settings, allowed_hosts=LOOPBACK_HOSTS if not allow_remote else None)
    context = app.state.context
    store_problem = None
    database = database_label(settings.resolved_database_url)
    progress.step(f"opening the store ({database}; migrations run if it is not at the latest schema)")
    try:
        context.connector_service()
    except CanonicalStateUnavailable as exc:
        store_problem = exc.message  # routes answer 503 and try again; say so now
    sock = _bind(host, port)
    url = _url(sock)
    # lifespan "on": the app's lifespan runs the session host (sessions, runtime reload; seed 003 §10.5)
    config = uvicorn.Config(app, log_config=None, lifespan="on", server_header=False)
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal to the handler
    # that was there before: make SIGTERM's one end the command like Ctrl-C, with exit status 0.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if not loopback:
            err_console.print(
                Text(
                    f"warning: serving on {host}, beyond this machine, without authentication: anyone who can "
                    "reach it can register and start local commands",
                    style="yellow",
                )
            )
        if store_problem:
            err_console.print(
                Text(f"warning: {store_problem}; API routes answer 503 until it can be used", style="yellow")
            )
        if as_json:
            emit_json({"url": url, "openapi": f"{url}/openapi.json", "home": str(settings.home), "database": database})
        else:
            out_console.print(Text(f"Patchbay API: {url}  (OpenAPI: {url}/openapi.json, docs: {url}/docs)"))
            out_console.print(Text(f"Data home: {settings.home}"))
            out_console.print(Text(f"Database: {database}"))
            out_console.print(Text("Press Ctrl-C to stop."))
        progress.step("starting the session host; requests are answered once it runs")
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
        context.close()


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt
