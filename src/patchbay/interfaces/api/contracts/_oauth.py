"""OAuth settings, grant status and the page's login: requests and answers (never a token or a
secret value)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from patchbay.interfaces.api.contracts._base import RuntimeReload, _Request, _Response

__all__ = ["OAuthConfigRequest", "OAuthConfigured", "OAuthLoggedOut", "OAuthLoginStart", "OAuthStatusView"]

_Text = Field(default=None, min_length=1, max_length=2048)
_Secret = Field(default=None, json_schema_extra={"writeOnly": True})


class OAuthConfigRequest(_Request):
    """A connector's OAuth settings (replacing any earlier ones). Secrets are write-only: a value
    is stored as a credential the connector owns (``@env:VAR`` and ``@credential:ID`` are
    references); no answer ever shows one. Changing the grant, client or issuer voids the grant."""

    grant: Literal["authorization_code", "client_credentials", "private_key_jwt", "cross_app_access"] = (
        "authorization_code"
    )
    client_id: str | None = _Text
    """Pre-registered client; none: dynamic client registration."""
    scope: str | None = _Text
    issuer: str | None = _Text
    """Pin the authorization server (its issuer URL)."""
    client_metadata_url: str | None = _Text
    token_endpoint_auth: str | None = Field(default=None, min_length=1, max_length=64)
    signing_algorithm: str | None = Field(default=None, min_length=1, max_length=16)
    idp_token_endpoint: str | None = _Text
    idp_client_id: str | None = _Text
    client_secret: SecretStr | None = _Secret
    private_key: SecretStr | None = _Secret
    idp_client_secret: SecretStr | None = _Secret
    id_token: SecretStr | None = _Secret
    revision: int | None = Field(default=None, ge=1)
    """The connector revision the client read; a stale one is 409 and changes nothing."""


class OAuthStatusView(_Response):
    """What a connector's grant looks like (``OAuthService.status``); times are Unix seconds."""

    connector: str
    grant: str | None
    configured: bool
    state: Literal["not_configured", "not_authorized", "authorized", "expired", "needs_auth"]
    reason: str | None
    issuer: str | None
    scope: str | None
    expires_at: float | None
    has_refresh_token: bool
    obtained_at: float | None
    refreshed_at: float | None
    client_registered: bool


class OAuthConfigured(_Response):
    """The stored settings' effect: the connector's new revision, its grant's status and how the
    open sessions took the change."""

    revision: int
    status: OAuthStatusView
    runtime_reload: RuntimeReload


class OAuthLoggedOut(_Response):
    """What logging out did (never a token)."""

    revoked: list[str]
    """Token kinds the server accepted to revoke (``refresh_token``, ``access_token``)."""
    revocation: Literal["done", "unsupported", "failed", "nothing_to_revoke"]
    deleted: bool
    """Whether stored tokens were deleted."""
    runtime_reload: RuntimeReload


class OAuthLoginStart(_Response):
    """A login started from the page. ``pending``: open ``authorize_url`` (the authorization
    server sends the browser back to ``/api/mcp/oauth/callback``); ``authorized``: the stored grant
    already works; ``failed``: ``code`` (``auth_required``, ``network_blocked``, ``timeout``, ...)
    and ``message`` say why."""

    state: Literal["pending", "authorized", "failed"]
    authorize_url: str | None = None
    code: str | None = None
    message: str | None = None
