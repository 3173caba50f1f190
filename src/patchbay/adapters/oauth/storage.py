"""OAuth tokens in the CredentialStore, nowhere else.

:class:`BundleStorage` is the SDK's ``TokenStorage`` for one connector: the tokens and the client
registration live in the connector's single ``oauth_token_bundle`` credential
(:class:`~patchbay.core.oauth.TokenBundle`), pinned to the resource origin and authorization
server they were granted for. File I/O runs off the event loop; every token and client secret
read or written is registered for redaction first.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from patchbay.adapters.credentials import CredentialStore, StoredCredential
from patchbay.core.oauth import OAuthGrant, TokenBundle, url_origin
from patchbay.core.redaction import register_secret

__all__ = ["BundleStorage", "bundle_of", "find_bundle"]

BUNDLE_KIND = "oauth_token_bundle"


def find_bundle(records: dict[str, StoredCredential], connector_id: str) -> StoredCredential | None:
    """The connector's own token bundle record among ``records``, if any."""
    for record in records.values():
        if record.owner_id == connector_id and record.kind == BUNDLE_KIND:
            return record
    return None


def bundle_of(record: StoredCredential | None) -> TokenBundle | None:
    """The parsed bundle of ``record`` (None when absent or unreadable: treated as no grant)."""
    if record is None or not isinstance(record.value, dict):
        return None
    try:
        return TokenBundle.model_validate(record.value)
    except ValueError:
        return None


def _remember(*values: str | None) -> None:
    for value in values:
        if value:
            register_secret(value, transient=True)  # tokens rotate: may be forgotten


class BundleStorage:
    """``mcp.client.auth.TokenStorage`` over one connector's token bundle.

    Args:
        store: the data home's credential store.
        connector_id: the owner of the bundle.
        resource_url: the connector's current URL; a bundle granted for another origin is void.
        grant: the connector's grant (recorded in a new bundle).

    A void bundle (other origin, ``needs_auth``) reads as no tokens; its client registration is
    still offered when the origin matches (re-authorizing needs no new registration).
    """

    def __init__(self, store: CredentialStore, *, connector_id: str, resource_url: str, grant: OAuthGrant):
        self.store = store
        self.connector_id = connector_id
        self.resource_url = resource_url
        self.origin = url_origin(resource_url)
        self.grant = grant
        self.expires_at: float | None = None
        """Unix seconds the last token read or written expires at (None: unknown)."""

    # -- reading ----------------------------------------------------------------------------

    def read(self) -> TokenBundle | None:
        """The bundle as stored, whatever its state (blocking; call off the event loop)."""
        return bundle_of(find_bundle(self.store.load(), self.connector_id))

    def _usable(self) -> TokenBundle | None:
        bundle = self.read()
        if bundle is None or bundle.resource_origin != self.origin:
            return None
        return bundle

    async def get_tokens(self) -> OAuthToken | None:
        bundle = await anyio.to_thread.run_sync(self._usable)
        if bundle is None or bundle.status != "active" or not bundle.tokens:
            self.expires_at = None
            return None
        token = OAuthToken.model_validate(bundle.tokens)
        _remember(token.access_token, token.refresh_token)
        self.expires_at = bundle.expires_at
        return token

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        bundle = await anyio.to_thread.run_sync(self._usable)
        if bundle is None or not bundle.client_info:
            return None
        info = OAuthClientInformationFull.model_validate(bundle.client_info)
        _remember(info.client_secret)
        return info

    async def pinned_issuer(self) -> str | None:
        """The authorization server the stored grant belongs to (None: none pinned yet)."""
        bundle = await anyio.to_thread.run_sync(self._usable)
        return bundle.issuer if bundle is not None else None

    # -- writing ----------------------------------------------------------------------------

    def _update(self, **changes: Any) -> None:
        """Apply ``changes`` to the bundle under the store lock (creating it when missing)."""

        def change(records: dict[str, StoredCredential]) -> None:
            record = find_bundle(records, self.connector_id)
            bundle = bundle_of(record)
            if bundle is None or bundle.resource_origin != self.origin:
                # A new origin starts a new grant: nothing of the old one carries over.
                bundle = TokenBundle(resource_origin=self.origin, resource=self.resource_url, grant=self.grant)
            bundle = bundle.model_copy(update=changes)
            value = bundle.model_dump(mode="json")
            if record is None:
                record = self.store.new_record(owner_id=self.connector_id, kind=BUNDLE_KIND, value=value)
            else:
                record = record.model_copy(update={"value": value, "updated_at": self.store.now()})
            records[record.credential_id] = record

        self.store.mutate(change)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _remember(tokens.access_token, tokens.refresh_token)
        now = time.time()
        self.expires_at = now + tokens.expires_in if tokens.expires_in else None
        current = await anyio.to_thread.run_sync(self._usable)
        stamp = {"refreshed_at": now} if current is not None and current.tokens else {"obtained_at": now}
        await anyio.to_thread.run_sync(
            lambda: self._update(
                tokens=tokens.model_dump(mode="json", exclude_none=True),
                expires_at=self.expires_at,
                status="active",
                reason=None,
                grant=self.grant,
                **stamp,
            )
        )

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        _remember(client_info.client_secret)
        info = client_info.model_dump(mode="json", exclude_none=True)
        await anyio.to_thread.run_sync(lambda: self._update(client_info=info))

    async def pinned_metadata(self) -> dict[str, Any] | None:
        """The pinned authorization server's metadata as recorded at login (None: not recorded)."""
        bundle = await anyio.to_thread.run_sync(self._usable)
        return bundle.as_metadata if bundle is not None else None

    async def pin(self, issuer: str | None, metadata: dict[str, Any] | None = None) -> None:
        """Record the authorization server this grant belongs to (and its metadata)."""
        await anyio.to_thread.run_sync(lambda: self._update(issuer=issuer, as_metadata=metadata))

    async def void_unless_rotated(self, reason: str, refresh_token: str | None) -> OAuthToken | None:
        """Void the grant (as :meth:`void`) if its stored refresh token is still ``refresh_token``,
        in one store transaction; otherwise another process rotated it meanwhile and its active
        tokens are returned (nothing is voided)."""

        def change(records: dict[str, StoredCredential]) -> dict[str, Any] | None:
            record = find_bundle(records, self.connector_id)
            bundle = bundle_of(record)
            if record is None or bundle is None or bundle.resource_origin != self.origin:
                return None
            tokens = bundle.tokens or {}
            if bundle.status == "active" and tokens.get("refresh_token") and tokens["refresh_token"] != refresh_token:
                return {"tokens": tokens, "expires_at": bundle.expires_at}
            void = bundle.model_copy(
                update={"tokens": None, "expires_at": None, "status": "needs_auth", "reason": reason}
            )
            records[record.credential_id] = record.model_copy(
                update={"value": void.model_dump(mode="json"), "updated_at": self.store.now()}
            )
            return None

        rotated = await anyio.to_thread.run_sync(self.store.mutate, change)
        if rotated is None:
            self.expires_at = None
            return None
        token = OAuthToken.model_validate(rotated["tokens"])
        _remember(token.access_token, token.refresh_token)
        self.expires_at = rotated["expires_at"]
        return token

    async def void(self, reason: str, *, keep_client: bool = True) -> None:
        """Mark the grant ``needs_auth``: tokens dropped (refresh token included), registration kept
        unless ``keep_client`` is False (``invalid_grant`` → needs-auth)."""
        changes: dict[str, Any] = {"tokens": None, "expires_at": None, "status": "needs_auth", "reason": reason}
        if not keep_client:
            changes["client_info"] = None
            changes["issuer"] = None
            changes["as_metadata"] = None
        self.expires_at = None
        await anyio.to_thread.run_sync(lambda: self._update(**changes))
