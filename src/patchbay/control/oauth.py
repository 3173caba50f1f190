"""The control plane's OAuth 2.1 service: configure, log in, show, log out.

:class:`OAuthService` writes a connector's :class:`~patchbay.core.oauth.OAuthConfig` (secrets go
into the CredentialStore as credentials the connector owns; the config keeps their ids), runs a
login (a probe whose OAuth provider may reach a person through an authorizer), reports a grant's
state without ever showing a token, and logs out (RFC 7009 revocation, best effort, then the
tokens are deleted).

Secret inputs take the command-line forms of :mod:`patchbay.control.bindings`: ``VALUE`` (stored
as a managed credential), ``@env:VAR`` (an environment reference) or ``@credential:ID``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pydantic

from patchbay.adapters.credentials import CredentialStore, StoredCredential
from patchbay.adapters.egress_audit import EgressAudit, audit_path
from patchbay.adapters.oauth.provider import AUDIT_NOTE, Authorizer
from patchbay.adapters.oauth.storage import bundle_of, find_bundle
from patchbay.adapters.transports.egress import EgressGuard, EgressPolicy, guarded_client
from patchbay.control.bindings import parse_env
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import AuthorizationFailed, ConfigError, CredentialUnavailable, ProbeError
from patchbay.core.models import Connector, HttpTarget, ProbeResult
from patchbay.core.oauth import OAuthConfig, oauth_from_config, url_origin
from patchbay.core.redaction import register_secret

__all__ = ["REVOCATION_DEADLINE", "OAuthService"]

REVOCATION_DEADLINE = 20.0
"""Seconds ``logout`` gives the revocation requests in all; the tokens are deleted either way."""

_SECRET_FIELDS = {
    "client_secret": "client_secret_ref",
    "private_key": "private_key_ref",
    "idp_client_secret": "idp_client_secret_ref",
    "id_token": "id_token_ref",
}
_PLAIN_FIELDS = (
    "client_id",
    "scope",
    "issuer",
    "client_metadata_url",
    "token_endpoint_auth",
    "signing_algorithm",
    "idp_token_endpoint",
    "idp_client_id",
)


class OAuthService:
    """OAuth settings and grants of remote connectors.

    Args:
        connectors: the connector service (its repository, settings, credential store, prober
            and re-projection).
    """

    def __init__(self, connectors: ConnectorService):
        self.connectors = connectors
        self.store: CredentialStore = connectors.credentials.store

    # -- configure --------------------------------------------------------------------------

    def configure(self, name: str, *, grant: str = "authorization_code", **fields: str | None) -> Connector:
        """Set connector ``name``'s OAuth settings (replacing any earlier ones).

        Args:
            grant: ``authorization_code`` | ``client_credentials`` | ``private_key_jwt`` |
                ``cross_app_access``.
            fields: ``client_id``, ``scope``, ``issuer``, ``client_metadata_url``,
                ``token_endpoint_auth``, ``signing_algorithm``, ``idp_token_endpoint``,
                ``idp_client_id`` (plain), and the secrets ``client_secret``, ``private_key``,
                ``idp_client_secret``, ``id_token`` (``VALUE``, ``@env:VAR`` or ``@credential:ID``).

        Changing the grant, client or issuer voids an existing grant (the tokens were issued to
        the old client by the old server).

        Raises:
            NotFoundError: ``not_found``.
            ConfigError: ``invalid_config`` naming the field (not an HTTP/SSE connector, a
                missing field for the grant, a malformed URL); nothing is stored.
        """
        connector = self.connectors.get(name)
        if not isinstance(connector.target, HttpTarget):
            raise ConfigError("oauth", "OAuth is for remote (Streamable HTTP or SSE) connectors")
        unknown = set(fields) - set(_SECRET_FIELDS) - set(_PLAIN_FIELDS)
        if unknown:
            raise ConfigError("oauth", f"unknown OAuth setting(s): {', '.join(sorted(unknown))}")
        raw: dict[str, Any] = {"grant": grant}
        raw.update({k: v for k, v in fields.items() if k in _PLAIN_FIELDS and v is not None})
        created: list[StoredCredential] = []
        for field, ref_field in _SECRET_FIELDS.items():
            text = fields.get(field)
            if text is None:
                continue
            # VALUE | @env:VAR | @credential:ID (never quoted in errors); a PEM key spans lines.
            spec = parse_env(f"PATCHBAY_OAUTH={text}")
            if spec.ref is not None:
                raw[ref_field] = spec.ref
                continue
            record = self.store.new_record(
                owner_id=connector.connector_id,
                kind="env_reference" if spec.variable is not None else "api_key",
                value=spec.value,
                variable=spec.variable,
                metadata={"label": f"oauth {field}"},
            )
            created.append(record)
            raw[ref_field] = record.credential_id
        try:
            config = OAuthConfig.model_validate(raw)
        except pydantic.ValidationError as exc:
            message = exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
            for ref_field, field in ((v, k) for k, v in _SECRET_FIELDS.items()):
                message = message.replace(ref_field, field)  # name the setting the user gave
            raise ConfigError("oauth", message) from None
        for ref in config.refs():
            if ref not in {r.credential_id for r in created}:
                self._check_usable(connector, ref)
        previous = oauth_from_config(connector.runtime_config)
        runtime_config = {**connector.runtime_config, "oauth": config.model_dump(mode="json", exclude_none=True)}
        bound = {binding.ref for binding in connector.bindings}
        stale = [ref for ref in (previous.refs() if previous else ()) if ref not in config.refs() and ref not in bound]
        owned_stale = [ref for ref in stale if self._owned(connector, ref)]
        undo = self.store.apply(upserts=created)
        try:
            updated = self.connectors._reprojected(
                self.connectors._write_config(connector, connector.revision, runtime_config)
            )
        except BaseException:
            self.store.restore(undo)
            raise
        if owned_stale:
            self.store.apply(deletes=owned_stale)
        if previous is not None and _identity(previous) != _identity(config):
            self._void(updated, "client_changed")
        return updated

    def _owned(self, connector: Connector, ref: str) -> bool:
        record = self.store.load().get(ref)
        return record is not None and record.owner_id == connector.connector_id

    def _check_usable(self, connector: Connector, ref: str) -> None:
        record = self.store.load().get(ref)
        if record is None or not record.usable_by(connector.connector_id):
            raise ConfigError("oauth", f"credential {ref} does not exist or is not shared with {connector.name!r}")

    def _void(self, connector: Connector, reason: str) -> None:
        def change(records: dict[str, StoredCredential]) -> None:
            record = find_bundle(records, connector.connector_id)
            bundle = bundle_of(record)
            if record is not None and bundle is not None:
                void = bundle.model_copy(
                    update={
                        "tokens": None,
                        "expires_at": None,
                        "status": "needs_auth",
                        "reason": reason,
                        "client_info": None,
                        "issuer": None,
                        "as_metadata": None,
                    }
                )
                records[record.credential_id] = record.model_copy(
                    update={"value": void.model_dump(mode="json"), "updated_at": self.store.now()}
                )

        self.store.mutate(change)

    # -- status -----------------------------------------------------------------------------

    def status(self, name: str) -> dict[str, Any]:
        """What the connector's grant looks like, without any token or secret.

        Returns ``{"connector", "grant", "configured", "state", "reason", "issuer", "scope",
        "expires_at", "has_refresh_token", "obtained_at", "refreshed_at", "client_registered"}``;
        ``state``: ``not_configured`` | ``not_authorized`` | ``authorized`` | ``expired`` (the
        access token expired; a refresh token may renew it) | ``needs_auth`` (``reason``:
        ``invalid_grant``, ``origin_changed``, ``client_changed``, ...). Times are Unix seconds.

        Raises:
            NotFoundError: ``not_found``.
        """
        connector = self.connectors.get(name)
        config = oauth_from_config(connector.runtime_config)
        view: dict[str, Any] = {
            "connector": connector.name,
            "grant": config.grant if config else None,
            "configured": config is not None,
            "state": "not_configured" if config is None else "not_authorized",
            "reason": None,
            "issuer": None,
            "scope": None,
            "expires_at": None,
            "has_refresh_token": False,
            "obtained_at": None,
            "refreshed_at": None,
            "client_registered": False,
        }
        bundle = bundle_of(find_bundle(self.store.load(), connector.connector_id))
        if bundle is None:
            return view
        url = connector.target.url if isinstance(connector.target, HttpTarget) else ""
        tokens = bundle.tokens or {}
        view.update(
            issuer=bundle.issuer,
            scope=tokens.get("scope"),
            expires_at=bundle.expires_at,
            has_refresh_token=bool(tokens.get("refresh_token")),
            obtained_at=bundle.obtained_at,
            refreshed_at=bundle.refreshed_at,
            client_registered=bundle.client_info is not None,
        )
        if url and bundle.resource_origin != url_origin(url):
            view.update(state="needs_auth", reason="origin_changed")
        elif bundle.status == "needs_auth":
            view.update(state="needs_auth", reason=bundle.reason)
        elif tokens.get("access_token"):
            expired = bundle.expires_at is not None and time.time() > bundle.expires_at
            view["state"] = "expired" if expired else "authorized"
        return view

    # -- login ------------------------------------------------------------------------------

    async def login(
        self,
        name: str,
        *,
        authorizer: Authorizer | None,
        workspace: Path,
        login_timeout: float = 300.0,
    ) -> tuple[ProbeResult, dict[str, Any]]:
        """Obtain a grant for connector ``name``: connect, authorize, list tools.

        For ``authorization_code`` the authorization URL goes to ``authorizer`` (print it, open a
        browser) and the loopback callback waits up to ``login_timeout`` seconds; a callback that
        arrives after the connector's URL origin or OAuth settings changed is refused. The
        machine grants need no authorizer. The probe's catalog is cached like ``patchbay probe``.

        Returns:
            ``(probe result, status view)``; a failed login is a probe result with
            ``state="error"`` and its code (``auth_required``, ``network_blocked``, ...).

        Raises:
            NotFoundError: ``not_found``.
            ConfigError: ``invalid_config``: the connector has no OAuth settings.
        """
        connector = self.connectors.get(name)
        config = oauth_from_config(connector.runtime_config)
        if config is None:
            raise ConfigError("oauth", f"connector {name!r} has no OAuth settings (patchbay auth configure {name})")
        pinned = (connector.connector_id, connector.target, connector.runtime_config.get("oauth"))

        async def verify() -> None:
            now = await anyio.to_thread.run_sync(self.connectors.get, name)
            if (now.connector_id, now.target, now.runtime_config.get("oauth")) != pinned:
                raise AuthorizationFailed(
                    f"connector {name!r} changed while its login was under way; the callback was refused",
                    details={"error": "connector_changed"},
                )

        try:
            result = await self.connectors.probe(
                name,
                workspace=workspace,
                authorizer=authorizer if config.interactive else None,
                verify=verify,
                login_timeout=login_timeout,
            )
        finally:
            # Removed while its login was under way: tokens that arrived meanwhile must not outlive it.
            if not await anyio.to_thread.run_sync(self._exists, connector.connector_id):
                await anyio.to_thread.run_sync(self.store.delete_owned_by, connector.connector_id)
        return result, await anyio.to_thread.run_sync(self.status, name)

    def _exists(self, connector_id: str) -> bool:
        return any(c.connector_id == connector_id for c in self.connectors.list_connectors())

    # -- logout -----------------------------------------------------------------------------

    async def logout(self, name: str) -> dict[str, Any]:
        """Revoke the grant (RFC 7009, best effort) and delete the tokens.

        Revocation requests go only to the pinned server's ``revocation_endpoint`` (through the
        egress guard, audited as ``mcp_oauth_token``) and get :data:`REVOCATION_DEADLINE` seconds
        in all; whatever they answer (or if they never finish), the bundle is deleted. Returns ``{"connector", "revoked": [token kinds the server accepted],
        "revocation": "done"|"unsupported"|"failed"|"nothing_to_revoke", "deleted": bool}``.

        Raises:
            NotFoundError: ``not_found``.
        """
        connector = self.connectors.get(name)
        record = find_bundle(self.store.load(), connector.connector_id)
        bundle = bundle_of(record)
        outcome: dict[str, Any] = {
            "connector": connector.name,
            "revoked": [],
            "revocation": "nothing_to_revoke",
            "deleted": False,
        }
        if record is None:
            return outcome
        tokens = (bundle.tokens or {}) if bundle is not None else {}
        endpoint = (bundle.as_metadata or {}).get("revocation_endpoint") if bundle is not None else None
        try:
            if tokens and not endpoint:
                outcome["revocation"] = "unsupported"
            elif tokens and endpoint:
                outcome["revocation"] = "failed"
                with anyio.move_on_after(REVOCATION_DEADLINE):  # a trickling server cannot hold the tokens
                    outcome["revoked"], outcome["revocation"] = await self._revoke(connector, bundle, endpoint, tokens)
        finally:
            await anyio.to_thread.run_sync(lambda: self.store.apply(deletes=[record.credential_id]))
            outcome["deleted"] = True
        return outcome

    async def _revoke(
        self, connector: Connector, bundle: Any, endpoint: str, tokens: dict[str, Any]
    ) -> tuple[list[str], str]:
        audit = EgressAudit(audit_path(self.connectors.settings.home))

        def observe(decision: Any) -> None:
            if decision.request.extensions.get(AUDIT_NOTE):
                audit.record(
                    "mcp_oauth_token",
                    connector_id=connector.connector_id,
                    origin=decision.origin,
                    project_id=None,
                    approved=decision.approved,
                )

        policy = EgressPolicy(allow_private=connector.runtime_config.get("allow_private") is True, observer=observe)
        client_info = bundle.client_info or {}
        config = oauth_from_config(connector.runtime_config)
        client_id = (config.client_id if config else None) or client_info.get("client_id")
        secret = client_info.get("client_secret")
        if config is not None and config.client_secret_ref:
            try:
                secret = self.store.resolve_values(
                    [config.client_secret_ref], connector_id=connector.connector_id, connector=connector.name
                )[config.client_secret_ref]
            except CredentialUnavailable:
                secret = None
        if secret:
            register_secret(secret)
        revoked: list[str] = []
        try:
            async with guarded_client(EgressGuard(policy, origins=[endpoint]), timeout=httpx2.Timeout(15.0)) as http:
                for kind in ("refresh_token", "access_token"):
                    token = tokens.get(kind)
                    if not token:
                        continue
                    data = {"token": token, "token_type_hint": kind}
                    auth = httpx2.BasicAuth(client_id, secret) if client_id and secret else None
                    if auth is None and client_id:
                        data["client_id"] = client_id
                    request = http.build_request("POST", endpoint, data=data)
                    request.extensions[AUDIT_NOTE] = "mcp_oauth_token"
                    response = await (http.send(request, auth=auth) if auth else http.send(request))
                    if response.status_code == 200:
                        revoked.append(kind)
        except (httpx2.HTTPError, ProbeError, OSError):
            return revoked, "failed"
        return revoked, "done" if revoked else "failed"


def _identity(config: OAuthConfig) -> tuple[Any, ...]:
    """What a grant was issued to: changing any of it voids the grant."""
    return (config.grant, config.client_id, config.issuer, config.client_metadata_url)
