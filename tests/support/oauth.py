"""Helpers for the OAuth tests: the OAuth fixture server (tests/fixtures/oauth_server.py), a headless
browser, and a control-plane set-up on a throw-away data home. 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx2

from patchbay.adapters.credentials import CredentialStore
from patchbay.adapters.oauth import bundle_of, find_bundle
from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.control.oauth import OAuthService
from patchbay.core.oauth import TokenBundle
from patchbay.core.settings import Settings
from tests.support.paths import FIXTURES

OAUTH_SERVER = FIXTURES / "oauth_server.py"


@dataclass
class OAuthFixture:
    """A running oauth_server.py: its ports and a synchronous control client."""

    rs_port: int
    main_port: int
    alt_port: int

    @property
    def url(self) -> str:
        """The MCP endpoint (the protected resource)."""
        return f"http://127.0.0.1:{self.rs_port}/mcp"

    def issuer(self, which: str = "main") -> str:
        return f"http://127.0.0.1:{self.main_port if which == 'main' else self.alt_port}"

    def control(self, **changes: Any) -> dict[str, Any]:
        """POST ``changes`` to ``/_control`` (GET without); returns ``{"settings", "counts"}``."""
        url = f"http://127.0.0.1:{self.rs_port}/_control"
        with httpx2.Client(trust_env=False, timeout=10.0) as http:
            response = http.post(url, json=changes) if changes else http.get(url)
        response.raise_for_status()
        return response.json()

    def counts(self, where: str = "main") -> dict[str, int]:
        """Request counters of ``main``, ``alt`` or ``rs`` (missing kinds are 0)."""
        return self.control()["counts"][where]


@contextlib.contextmanager
def oauth_server(*, separate_as: bool = False, m2m_secret: str = "m2m-secret") -> Iterator[OAuthFixture]:
    """Run the OAuth fixture server for the duration of the block (stopped on exit)."""
    argv = [sys.executable, str(OAUTH_SERVER), "--m2m-secret", m2m_secret]
    if separate_as:
        argv.append("--separate-as")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().split() if process.stdout else []
        assert line[:1] == ["ready"], f"the OAuth fixture server did not start: {line}"
        yield OAuthFixture(int(line[1]), int(line[2]), int(line[3]))
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


class HeadlessBrowser:
    """Plays the user's browser: GET the authorization URL without following redirects, then GET
    its ``Location`` (Patchbay's loopback callback). Keeps what it saw for assertions."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.pages: list[tuple[int, str]] = []

    async def __call__(self, authorization_url: str) -> None:
        self.urls.append(authorization_url)
        async with httpx2.AsyncClient(follow_redirects=False, trust_env=False, timeout=10.0) as http:
            response = await http.get(authorization_url)
            location = response.headers.get("location")
            assert response.is_redirect and location, f"no redirect from the authorization endpoint: {response}"
            page = await http.get(urljoin(authorization_url, location))
            self.pages.append((page.status_code, page.text))


@dataclass
class ControlPlane:
    """A data home with a connector service and its OAuth service."""

    home: Path
    settings: Settings
    service: ConnectorService
    oauth: OAuthService
    workspace: Path

    @property
    def store(self) -> CredentialStore:
        return self.service.credentials.store

    def bundle(self, name: str) -> TokenBundle | None:
        connector = self.service.get(name)
        return bundle_of(find_bundle(self.store.load(), connector.connector_id))

    def expire_access_token(self, name: str) -> None:
        """Move the stored access token's expiry into the past (time passing, without waiting)."""
        connector_id = self.service.get(name).connector_id

        def change(records: dict[str, Any]) -> None:
            record = find_bundle(records, connector_id)
            assert record is not None, "no token bundle to expire"
            value = {**record.value, "expires_at": time.time() - 60}
            records[record.credential_id] = record.model_copy(update={"value": value})

        self.store.mutate(change)


def control_plane(home: Path) -> ControlPlane:
    """A fresh control plane on data home ``home`` and the run's store (SQLite inside it, or the
    test's PostgreSQL database with ``--store=postgres``), the one a CLI on ``home`` opens too."""
    settings = Settings(home=home)
    service = ConnectorService(open_store(settings), settings)
    workspace = home.parent / f"{home.name}-workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    return ControlPlane(home, settings, service, OAuthService(service), workspace)


def add_oauth_connector(plane: ControlPlane, name: str, url: str, *, allow_private: bool = True, **oauth: Any) -> None:
    """Register ``url`` as a Streamable HTTP connector and give it OAuth settings (``oauth``)."""
    options = {"allow_private": True} if allow_private else {}
    plane.service.add(name, plane.service.remote_target(url, "streamable_http"), runtime_options=options)
    plane.oauth.configure(name, **oauth)


async def allow_every_call(request: Any) -> str:
    """An approver that allows every call (the fixture's only tool is harmless)."""
    return "allow_once"


async def whoami(plane: ControlPlane, name: str, **runtime_kwargs: Any) -> dict[str, Any]:
    """Call ``mcp.<name>.whoami`` through a fresh :class:`Runtime` of the plane's workspace.

    Raises:
        ToolCallError: as the runtime raises it (e.g. ``mcp_server_unavailable``).
    """
    import json

    from patchbay.runtime import Runtime

    config = plane.service.queries.runtime_config(plane.workspace)
    async with Runtime(config, settings=plane.settings, approver=allow_every_call, **runtime_kwargs) as runtime:
        result = await runtime.call(f"mcp.{name}.whoami", {})
    return json.loads(result.text)
