"""The OAuth provider opens the egress guard only for the origins it trusts, written the way the
guard writes them (an authorization server at a default port is the usual production layout)."""

from __future__ import annotations

from pathlib import Path

import httpx2

from patchbay.adapters.credentials import CredentialStore
from patchbay.adapters.oauth.provider import PatchbayOAuthProvider
from patchbay.adapters.oauth.storage import BundleStorage
from patchbay.adapters.transports.egress import EgressGuard, EgressPolicy
from patchbay.core.oauth import OAuthConfig


def provider(tmp_path: Path, url: str) -> PatchbayOAuthProvider:
    storage = BundleStorage(
        CredentialStore(tmp_path), connector_id="con_x", resource_url=url, grant="authorization_code"
    )
    return PatchbayOAuthProvider(url, config=OAuthConfig(), storage=storage, connector="x")


def test_an_authorization_server_on_another_origin_at_the_default_port_is_permitted(tmp_path: Path) -> None:
    oauth = provider(tmp_path, "https://mcp.example.com/mcp")
    guard = EgressGuard(EgressPolicy(), origins=["https://mcp.example.com/mcp"])
    oauth.bind_guard(guard)
    oauth.context.auth_server_url = "https://auth.example.com"  # named by protected-resource metadata
    request = httpx2.Request("GET", "https://auth.example.com/.well-known/oauth-authorization-server")
    oauth._prepare(request)
    assert "https://auth.example.com:443" in guard.origins
    assert request.extensions["patchbay.egress_note"] == "mcp_oauth_discovery"


def test_an_origin_nothing_named_stays_refused(tmp_path: Path) -> None:
    oauth = provider(tmp_path, "https://mcp.example.com/mcp")
    guard = EgressGuard(EgressPolicy(), origins=["https://mcp.example.com/mcp"])
    oauth.bind_guard(guard)
    oauth.context.auth_server_url = "https://auth.example.com"
    oauth._prepare(httpx2.Request("POST", "https://evil.example.net/token"))
    assert guard.origins == {"https://mcp.example.com:443"}
