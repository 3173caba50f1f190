"""``patchbay serve``: the REST API on uvicorn.

Binds ``127.0.0.1:8765`` by default (``PATCHBAY_API_HOST`` / ``PATCHBAY_API_PORT``, or
``--host``/``--port``; ``--port 0`` takes any free port). Any address that is not loopback is
refused unless ``--allow-remote`` is given, and then a warning is printed: the API registers
local commands, so whoever reaches it with the token can make this machine run programs. Every
request needs the data home's API token (:mod:`patchbay.interfaces.api.auth`); ``--no-auth``
serves without it, on loopback only, with a loud warning. At start it prints the URL, the data
home, the database, the coordination and this process's instance id
(:mod:`patchbay.core.instance`), and last the settings page URL: the login URL, which logs the
browser in and lands on ``/ui`` (the one line that shows the token; ``--json``: one JSON
object with ``token`` and ``login_url``), then serves until interrupted (Ctrl-C or SIGTERM).

``patchbay api-token`` prints the token and the header for the data home, whether or not a server
runs (the token is created on first use), and the login URL of the serve running on it (none when
no serve runs, unless ``--host``/``--port`` name one).

Stopping is bounded: calls in flight get ``shutdown_grace`` seconds
(``PATCHBAY_SHUTDOWN_GRACE``, default 5), then are cancelled and answered ``cancelled``, and every
session's servers are stopped with their process groups.

The MCP gateway is served at ``/mcp`` on the same port, behind the same Host/Origin guard
(:mod:`patchbay.interfaces.api.gateway_endpoint`); its runtimes stop with the server. ``/mcp``
takes the gateway token (:mod:`patchbay.control.gateway_token`), which opens ``/mcp`` and nothing
else, and from loopback clients the API token too; clients that are not on this machine must send
the gateway token. With ``--allow-remote`` the gateway token is made on first need and shown this
once: a ``Gateway token (for /mcp only, ...): pbgw_...`` line on stderr (``--json``:
``gateway_token`` in the JSON object, null when it existed already, beside ``gateway_url`` and
``gateway_token_created_at``, Unix milliseconds or null); a later start says on stderr that it
exists and when it was made, and ``patchbay gateway token --rotate`` makes a new one (the old
one stops working at once, in a running serve too). Without ``--allow-remote`` nothing is made
and ``/mcp`` behaves as before (the API token, or an existing gateway token).

While it starts, each step is a ``patchbay serve: [<s>] ...`` line on stderr with the seconds
since the command began: loading the API, opening the store (and migrating it), the session host.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import typer
from rich.text import Text

from patchbay.core.errors import CanonicalStateUnavailable, ConfigError
from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    err_console,
    handle_errors,
    out_console,
    redact_output,
    state,
)

__all__ = ["api_token_command", "is_loopback", "serve"]


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
        help=(
            "Allow binding an address other than loopback (anyone who reaches it with the API token can run "
            "commands); /mcp then needs the gateway token from remote clients (made and shown once on first need)."
        ),
    ),
    no_auth: bool = typer.Option(
        False,
        "--no-auth",
        help="Serve without the API token (loopback only): every local user and process can then run commands as you.",
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
    if no_auth and (allow_remote or not loopback):
        raise ConfigError("no-auth", "--no-auth is for loopback only; it cannot be combined with --allow-remote")
    progress.step("loading the API")
    import uvicorn

    from patchbay.adapters.api_token import api_token
    from patchbay.adapters.store._errors import database_label
    from patchbay.interfaces.api import LOOPBACK_HOSTS, create_app
    from patchbay.interfaces.api.auth import login_url

    token = None
    token_problem = None
    if not no_auth:
        try:
            token = api_token(settings.home)
        except CanonicalStateUnavailable as exc:
            # still never unauthenticated: this run's own token, shown in the login URL
            token, token_problem = secrets.token_urlsafe(32), exc.message
    from patchbay.adapters.credentials import CredentialStore
    from patchbay.control.gateway_token import GatewayTokens

    gateway_tokens = GatewayTokens(CredentialStore(settings.home))
    gateway_issued, gateway_made, gateway_problem = None, None, None
    try:
        gateway_issued = gateway_tokens.ensure() if allow_remote else None
        gateway_made = gateway_issued.created_at if gateway_issued is not None else gateway_tokens.status()
    except CanonicalStateUnavailable as exc:
        gateway_problem = exc.message  # remote hosts get 401 on /mcp until it can be stored
    app = create_app(
        settings,
        allowed_hosts=LOOPBACK_HOSTS if not allow_remote else None,
        token=token,
        require_token=not no_auth,
        gateway_token=gateway_tokens.accepts,
    )
    context = app.state.context
    from patchbay.core.instance import instance_id

    instance = instance_id()  # made once per process, now: in /api/health and (shared store) every event
    store_problem = None
    database = database_label(settings.resolved_database_url)
    progress.step(f"opening the store ({database}; migrations run if it is not at the latest schema)")
    try:
        context.connector_service()
    except CanonicalStateUnavailable as exc:
        store_problem = exc.message  # routes answer 503 and try again; say so now
    sock = _bind(host, port)
    url = _url(sock)
    context.page_url = url  # the approval links the gateway's hosts are given
    # lifespan "on": the app's lifespan runs the session host (sessions, runtime reload)
    grace = settings.shutdown_grace
    # The backstop after the grace: uvicorn cancels request tasks whose answer still has not gone out.
    config = uvicorn.Config(
        app,
        log_config=None,
        lifespan="on",
        server_header=False,
        # uvicorn waits with asyncio.wait_for, which takes fractional seconds; its annotation says int.
        timeout_graceful_shutdown=grace + _ANSWER_GRACE,  # type: ignore[arg-type]
    )
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal to the handler
    # that was there before: make SIGTERM's one end the command like Ctrl-C, with exit status 0.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if not loopback:
            err_console.print(
                Text(
                    f"warning: serving on {host}, beyond this machine: anyone who can reach it and holds the API "
                    "token can register and start local commands, and plain HTTP shows the token to the network",
                    style="yellow",
                )
            )
        if no_auth:
            err_console.print(
                Text(
                    "WARNING: serving WITHOUT AUTHENTICATION (--no-auth): every user and process on this machine "
                    "can register and start commands as you",
                    style="bold red",
                )
            )
        if token_problem:
            err_console.print(
                Text(f"warning: {token_problem}; this run uses a one-time token (see the login URL)", style="yellow")
            )
        if store_problem:
            err_console.print(
                Text(f"warning: {store_problem}; API routes answer 503 until it can be used", style="yellow")
            )
        if allow_remote:
            _announce_gateway_token(gateway_issued, gateway_made, gateway_problem, as_json=as_json)
        login = login_url(url, token) if token is not None else None
        # where probe leases (and later the other coordination) go; the password is never shown
        coordination = settings.redis_url_display or "in process (no PATCHBAY_REDIS_URL)"
        if as_json:
            document = redact_output(
                {
                    "url": url,
                    "openapi": f"{url}/openapi.json",
                    "home": str(settings.home),
                    "database": database,
                    "coordination": coordination,
                    "instance": instance,
                }
            )
            document["gateway_url"] = f"{url}/mcp"
            # the one place the token is shown: written past the redacting output on purpose
            document.update(token=token, login_url=login)
            # the gateway token only when this start made it (shown once); when it was made
            document.update(
                gateway_token=gateway_issued.token if gateway_issued is not None else None,
                gateway_token_created_at=gateway_made,
            )
            _write_raw(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        else:
            out_console.print(Text(f"Patchbay API: {url}  (OpenAPI: {url}/openapi.json, docs: {url}/docs)"))
            out_console.print(Text(f"Data home: {settings.home}"))
            out_console.print(Text(f"Database: {database}"))
            out_console.print(Text(f"Coordination: {coordination}"))
            out_console.print(Text(f"Instance: {instance}"))
            out_console.print(Text("Press Ctrl-C to stop. Open this URL in your browser to manage your connectors:"))
            # last, so it is what a person sees: the login URL, which lands on the settings page
            # (the one line that shows the token: written past the redacting output on purpose)
            _write_raw(f"Settings page: {login if login is not None else url + '/ui'}\n")
        progress.step("starting the session host; requests are answered once it runs")
        _record_serving(settings.home, url)
        _bounded_server(config, context, grace).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        _forget_serving(settings.home)
        sock.close()
        context.close()


def _utc(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _announce_gateway_token(issued: Any, made: int | None, problem: str | None, *, as_json: bool) -> None:
    """Say on stderr what ``serve --allow-remote`` did about the gateway token: the token itself
    when this start made it (text output; ``--json`` carries it in the JSON object instead),
    else that it exists and how to rotate it, or why there is none."""
    if problem is not None:
        err_console.print(
            Text(
                f"warning: {problem}; no gateway token could be made, so /mcp refuses clients that are not "
                "on this machine until `patchbay gateway token --rotate` can store one",
                style="yellow",
            )
        )
        return
    if issued is not None and not as_json:
        # the one line that shows it: written past the redacting console on purpose
        err_console.file.flush()
        sys.stderr.write(
            f"Gateway token (for /mcp only, shown this once; MCP hosts send it as Authorization: Bearer): "
            f"{issued.token}\n"
        )
        sys.stderr.flush()
        return
    if issued is not None:
        err_console.print(Text("patchbay serve: made the gateway token for /mcp: gateway_token below, shown this once"))
        return
    when = f" (made {_utc(made)})" if made is not None else ""
    err_console.print(
        Text(
            f"The gateway token for /mcp exists{when}, shown once when it was made; "
            "`patchbay gateway token --rotate` makes a new one (the old one stops working at once)"
        )
    )


SERVING_FILE = "serving.json"
"""``{"serves": [{"url", "pid", "started"}, ...]}``, oldest first: the ``serve`` processes running
on this data home (0600), so ``api-token`` can name the port one really listens on (``--port 0``
included). Each serve adds itself at start and takes itself out when it stops, under a lock of
the data home; the file goes with the last one."""

_SERVING_LOCK_SECONDS = 5.0


def _started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None when it is gone or not
    this user's: a pid alone may have been reused, or be another user's process."""
    import psutil

    try:
        process = psutil.Process(pid)
        with process.oneshot():
            if process.uids().real != os.getuid():
                return None
            return process.create_time()
    except (psutil.Error, OSError):
        return None


def _alive(record: dict[str, Any]) -> bool:
    """Whether the serve ``record`` names still runs: its pid is a live process of this user
    that started when the record says (within the second, as the clock ticks coarsely)."""
    pid, started = record.get("pid"), record.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    actual = _started(pid)
    if actual is None:
        return False
    return not isinstance(started, (int, float)) or abs(actual - started) < 1.0


def _serving_records(home: Path) -> list[dict[str, Any]]:
    try:
        document = json.loads((home / SERVING_FILE).read_bytes())
    except (OSError, ValueError):
        return []
    if isinstance(document, dict) and "serves" not in document:
        document = {"serves": [document]}  # the single record of earlier versions
    serves = document.get("serves") if isinstance(document, dict) else None
    if not isinstance(serves, list):
        return []
    return [
        record
        for record in serves
        if isinstance(record, dict) and isinstance(record.get("url"), str) and record["url"].startswith("http://")
    ]


def _update_serving(home: Path, *, add: str | None = None) -> None:
    """Under the data home's lock: drop the records of serves that are gone and this process's
    own, then add this process at ``add`` (a URL) when given; remove the file when none is left."""
    from patchbay.adapters.atomic import lock_exclusive, replace_file

    try:
        dir_fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # a hint for api-token only: serving goes on without it
    try:
        if not lock_exclusive(dir_fd, _SERVING_LOCK_SECONDS):
            return
        serves = [r for r in _serving_records(home) if r.get("pid") != os.getpid() and _alive(r)]
        if add is not None:
            serves.append({"url": add, "pid": os.getpid(), "started": _started(os.getpid())})
        if serves:
            data = json.dumps({"serves": serves}).encode()
            replace_file(dir_fd, SERVING_FILE, data, 0o600, strict_dir_sync=False)
        else:
            os.unlink(SERVING_FILE, dir_fd=dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)  # releases the lock


def _record_serving(home: Path, url: str) -> None:
    _update_serving(home, add=url)


def _forget_serving(home: Path) -> None:
    # only this process's record goes: another serve on the same home stays named
    _update_serving(home)


def running_url(home: Path) -> str | None:
    """The URL of the newest ``serve`` running on ``home`` as this user, else None.

    Args:
        home: the data home (``Settings.home``).
    """
    for record in reversed(_serving_records(home)):
        if _alive(record):
            return str(record["url"])
    return None


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _write_raw(text: str) -> None:
    """Write ``text`` to stdout as it is: the redacting console would mask the token a user needs."""
    out_console.file.flush()
    sys.stdout.write(text)
    sys.stdout.flush()


@handle_errors
def api_token_command(
    host: str | None = typer.Option(None, "--host", help="Address in the login URL (default PATCHBAY_API_HOST)."),
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="Port in the login URL (default 8765, PATCHBAY_API_PORT)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print the REST API's token for this data home (created on first use), its login URL and header.

    The login URL names the running ``serve`` of this data home (its real port). With
    ``--host``/``--port`` it names that address instead; without them and no serve running
    there is no login URL (whatever listens on the default port then would get the token)."""
    from patchbay.adapters.api_token import API_TOKEN_FILE, api_token
    from patchbay.interfaces.api.auth import login_url

    settings = state.settings
    token = api_token(settings.home)
    base: str | None
    if host is None and port is None:
        base = running_url(settings.home)
    else:
        host = host if host is not None else settings.api_host
        port = port if port is not None else (settings.api_port or 8765)
        base = f"http://[{host.strip('[]')}]:{port}" if ":" in host else f"http://{host}:{port}"
    document = {
        "token": token,
        "login_url": login_url(base, token) if base is not None else None,
        "header": f"Authorization: Bearer {token}",
        "file": str(settings.home / API_TOKEN_FILE),
    }
    if as_json:
        _write_raw(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return
    login = document["login_url"] or (
        "none (no serve is running on this data home; start one with `patchbay serve`, which prints "
        "its login URL, or name one with --port)"
    )
    _write_raw(f"Token: {token}\nLogin URL: {login}\nHeader: {document['header']}\nFile: {document['file']}\n")


_ANSWER_GRACE = 5.0
"""Seconds after the shutdown grace for cancelled calls to send their ``cancelled`` answers."""


def _bounded_server(config: Any, context: Any, grace: float) -> Any:
    """A uvicorn server whose shutdown gives calls in flight ``grace`` seconds, then cancels them
    (answered ``cancelled``) rather than waiting out their own timeouts; uvicorn is imported
    here, as in :func:`serve`, to keep the other commands' start-up short."""
    import uvicorn

    class BoundedServer(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            host = context.host
            context.close_streams()  # a status stream never ends by itself: it would hold this up
            async with anyio.create_task_group() as group:
                if host is not None:
                    group.start_soon(host.drain, grace)
                # Waits for the open requests (the drain ends the hung ones), then the lifespan
                # closes the sessions: every server and its process group is stopped.
                await super().shutdown(sockets)
                group.cancel_scope.cancel()

    return BoundedServer(config)
