"""The REST API served as ``patchbay serve`` serves it, plus one empty route: the server process of
``benchmarks/rest_overhead.py``.

The app is :func:`~patchbay.interfaces.api.create_app` for ``--home`` (its API token required),
its store opened before the first request, served by uvicorn with ``patchbay serve``'s
configuration (lifespan on, so the session host runs; logging left unconfigured, so no access log reaches a
handler; ``loop`` and ``http``
``auto`` unless given: uvloop and httptools when they are installed) on a socket bound as
``serve`` binds it (``IPPROTO_TCP``, so every accepted connection gets ``TCP_NODELAY``).

The extra route, ``POST /api/sessions/{session_id}/empty``, sits behind the same middleware (Host
and Origin check, body cap, token), is matched before any other route, reads the body and
answers ``{"client_port": <port>}``: the HTTP round trip through the app and nothing else; the
port tells the benchmark which connection the request came over (a keep-alive client uses one).

Prints ``ready <port> <loop> <http>`` (what ``auto`` resolved to) once it accepts requests; SIGTERM or SIGINT stops it (the lifespan closes
every session and its servers).

Usage::

    .venv/bin/python benchmarks/rest_server.py --home DIR --workspace DIR [--http auto|h11|httptools]
        [--loop auto|asyncio|uvloop]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
from pathlib import Path

import uvicorn
from fastapi import Request, Response

from patchbay.core.settings import Settings
from patchbay.interfaces.api import create_app


async def _empty(request: Request) -> Response:
    await request.body()
    client = request.client
    return Response(json.dumps({"client_port": client.port if client else None}), media_type="application/json")


def _resolved(choice: str, fast: str, fallback: str) -> str:
    """What uvicorn's ``auto`` picks: ``fast`` when that package is installed."""
    if choice != "auto":
        return choice
    return fast if importlib.util.find_spec(fast) is not None else fallback


class _ReadyServer(uvicorn.Server):
    """Prints its ready line once started (uvicorn offers no started event)."""

    def __init__(self, config: uvicorn.Config, line: str) -> None:
        super().__init__(config)
        self._line = line

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self._line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="the REST API as `patchbay serve` serves it, plus an empty route")
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--http", choices=("auto", "h11", "httptools"), default="auto")
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    options = parser.parse_args()
    settings = Settings(home=options.home)
    app = create_app(settings, workspace=options.workspace)
    app.add_api_route("/api/sessions/{session_id}/empty", _empty, methods=["POST"], include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())  # matched first: the floor pays no route matching
    app.state.context.connector_service()  # open (and migrate) the store now, as serve does
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    loop, http = _resolved(options.loop, "uvloop", "asyncio"), _resolved(options.http, "httptools", "h11")
    config = uvicorn.Config(app, log_config=None, lifespan="on", server_header=False, http=http, loop=loop)
    try:
        _ReadyServer(config, f"ready {sock.getsockname()[1]} {loop} {http}").run(sockets=[sock])
    finally:
        sock.close()
        app.state.context.close()


if __name__ == "__main__":
    main()
