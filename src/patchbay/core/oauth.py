"""OAuth 2.1 settings of a remote connector, and the errors of its authorization.

A connector's ``runtime_config["oauth"]`` holds an :class:`OAuthConfig`: which grant it uses and the
*references* of its client secrets (credential ids) -- never a secret value. The tokens themselves
live in one ``oauth_token_bundle`` credential the connector owns, in the CredentialStore only; a
bundle is pinned to the resource origin and the authorization server it was granted for
(:class:`TokenBundle`), and is void for any other.

Grants:

* ``authorization_code``: authorization code + PKCE S256 through the user's browser and a loopback
  callback (``patchbay auth login``); the client is registered dynamically when the
  authorization server offers it, else ``client_id`` (and ``client_secret_ref``) must be set, or
  ``client_metadata_url`` names a client-ID metadata document (CIMD) the server may accept.
* ``client_credentials``: machine to machine, ``client_id`` + ``client_secret_ref``
  (``client_secret_basic`` or ``client_secret_post``).
* ``private_key_jwt``: machine to machine, ``client_id`` + ``private_key_ref`` (a PEM key, RFC 7523).
* ``cross_app_access``: SEP-990 enterprise-managed authorization: an ID token from the user's
  identity provider (``id_token_ref``) is exchanged there (RFC 8693) for an ID-JAG, which the
  authorization server accepts as a JWT bearer grant (``client_id`` + ``client_secret_ref``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from patchbay.core.credentials import is_credential_id
from patchbay.core.errors import ConfigError

__all__ = [
    "OAuthConfig",
    "OAuthGrant",
    "TokenBundle",
    "TokenEndpointAuth",
    "oauth_from_config",
    "url_origin",
]

OAuthGrant = Literal["authorization_code", "client_credentials", "private_key_jwt", "cross_app_access"]
TokenEndpointAuth = Literal["client_secret_basic", "client_secret_post", "none"]

MACHINE_GRANTS: frozenset[str] = frozenset({"client_credentials", "private_key_jwt", "cross_app_access"})
"""Grants that need no person: a runtime can obtain (and re-obtain) their tokens by itself."""


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL, lower-cased, default ports dropped."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def _check_oauth_url(name: str, value: str) -> None:
    """An authorization-server URL: absolute, with a host, no userinfo, no fragment (and no query
    for an issuer, RFC 8414 section 2); https unless the host is loopback (OAuth 2.1 section
    1.5)."""
    if len(value) > 2048:
        raise ValueError(f"{name} is longer than 2048 characters")
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise ValueError(f"{name} has an invalid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name} must be an absolute http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{name} must not carry a user name or password")
    if parts.fragment or (name == "issuer" and parts.query):
        raise ValueError(f"{name} must not have a {'fragment' if parts.fragment else 'query'}")
    if parts.scheme != "https" and parts.hostname.lower() not in _LOOPBACK_HOSTS:
        raise ValueError(f"{name} must use https (plain http only for a loopback host)")


class OAuthConfig(BaseModel):
    """``runtime_config["oauth"]``: how a Streamable HTTP/SSE connector authorizes.

    Every ``*_ref`` is a credential id (``cred_…``) owned by or shared with the connector; values
    never appear here. Fields that a grant does not use must be left unset.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    grant: OAuthGrant = "authorization_code"
    client_id: str | None = Field(default=None, min_length=1, max_length=512)
    """A pre-registered client id; required for the machine grants and for servers without
    dynamic client registration."""
    client_secret_ref: str | None = None
    token_endpoint_auth: TokenEndpointAuth | None = None
    """How a pre-registered client authenticates at the token endpoint; default
    ``client_secret_basic`` with a secret, ``none`` without."""
    private_key_ref: str | None = None
    """``private_key_jwt``: the PEM private key credential."""
    signing_algorithm: str = Field(default="RS256", pattern=r"^(RS|PS|ES)(256|384|512)$")
    scope: str | None = Field(default=None, max_length=2048)
    """Scopes to ask for when the server does not say (space separated)."""
    client_metadata_url: str | None = None
    """CIMD: an https URL with a non-root path used as the client id where the server supports it."""
    issuer: str | None = None
    """The authorization server's issuer this connector's grant belongs to. Optional: the first
    successful authorization pins the one discovered."""
    idp_token_endpoint: str | None = None
    """``cross_app_access``: the identity provider's token endpoint (RFC 8693 token exchange)."""
    idp_client_id: str | None = None
    idp_client_secret_ref: str | None = None
    id_token_ref: str | None = None
    """``cross_app_access``: the user's ID token from the identity provider."""

    @model_validator(mode="after")
    def _check(self) -> OAuthConfig:
        for name in ("client_secret_ref", "private_key_ref", "idp_client_secret_ref", "id_token_ref"):
            value = getattr(self, name)
            if value is not None and not is_credential_id(value):
                raise ValueError(f"{name} must be a credential id (cred_…), not a value")
        for name in ("client_metadata_url", "issuer", "idp_token_endpoint"):
            value = getattr(self, name)
            if value is not None:
                _check_oauth_url(name, value)
        if self.client_metadata_url is not None and (
            urlsplit(self.client_metadata_url).scheme != "https" or urlsplit(self.client_metadata_url).path in ("", "/")
        ):
            raise ValueError("client_metadata_url must be an https URL with a non-root path")
        needs: dict[str, tuple[str, ...]] = {
            "authorization_code": (),
            "client_credentials": ("client_id", "client_secret_ref"),
            "private_key_jwt": ("client_id", "private_key_ref"),
            "cross_app_access": (
                "client_id",
                "client_secret_ref",
                "idp_token_endpoint",
                "idp_client_id",
                "id_token_ref",
            ),
        }
        missing = [name for name in needs[self.grant] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"grant {self.grant} needs {', '.join(missing)}")
        if self.client_secret_ref is not None and self.client_id is None:
            raise ValueError("client_secret_ref needs client_id")
        return self

    @property
    def interactive(self) -> bool:
        """True when obtaining a grant needs a person (authorization code)."""
        return self.grant not in MACHINE_GRANTS

    def refs(self) -> tuple[str, ...]:
        """Every credential id this config references."""
        names = ("client_secret_ref", "private_key_ref", "idp_client_secret_ref", "id_token_ref")
        return tuple(ref for ref in (getattr(self, n) for n in names) if ref is not None)


def oauth_from_config(runtime_config: Mapping[str, Any]) -> OAuthConfig | None:
    """The connector's :class:`OAuthConfig`, or None when it does not use OAuth.

    Raises:
        ConfigError: ``invalid_config`` (field ``oauth``) when the stored config is malformed.
    """
    raw = runtime_config.get("oauth")
    if raw is None:
        return None
    try:
        return OAuthConfig.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError("oauth", exc.errors(include_url=False)[0]["msg"]) from None


class TokenBundle(BaseModel):
    """The value of an ``oauth_token_bundle`` credential (CredentialStore only).

    ``resource_origin`` and ``issuer`` pin the grant: a bundle is used only for a connector whose
    URL still has that origin and whose authorization server is still that issuer.
    """

    model_config = ConfigDict(extra="ignore")

    resource_origin: str
    resource: str | None = None
    """The RFC 8707 resource the grant was obtained for (the connector URL at login)."""
    issuer: str | None = None
    as_metadata: dict[str, Any] | None = None
    """The pinned authorization server's RFC 8414 metadata (its token and revocation endpoints)."""
    grant: OAuthGrant = "authorization_code"
    tokens: dict[str, Any] | None = None
    """The token response (``access_token``, ``refresh_token``, ``scope``, ...); None once void."""
    expires_at: float | None = None
    """Unix seconds at which the access token expires; None: the server did not say."""
    client_info: dict[str, Any] | None = None
    """The registered (or pre-registered/CIMD) client record, incl. a DCR-issued secret."""
    status: Literal["active", "needs_auth"] = "active"
    reason: str | None = None
    """Why the grant needs authorization again (``invalid_grant``, ``origin_changed``, ...)."""
    obtained_at: float | None = None
    refreshed_at: float | None = None
