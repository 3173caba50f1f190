"""The credential service: bindings of connectors to credentials, and the credentials themselves.

The control plane is the only writer of the credential store; values enter here and leave only
through :meth:`patchbay.adapters.credentials.CredentialStore.resolve` at connect time. A binding
request (:class:`BindingSpec`) is parsed from ``--env``, ``--header`` and ``--bearer`` values by
:func:`parse_env`, :func:`parse_header` and :func:`parse_bearer` (``VALUE``, ``@env:VAR``,
``@credential:ID``; ``@@`` escapes a leading ``@``). :class:`CredentialService` applies bindings,
deletes credentials nothing binds any more, and :meth:`CredentialService.repair` cleans up after a
crash.

Design: docs/credentials.md (the binding syntax and rules, compensation and crash consistency)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from patchbay.adapters.api_token import read_api_token
from patchbay.adapters.credentials import CredentialStore, StoredCredential
from patchbay.adapters.faults import crash_point
from patchbay.adapters.store import Repository
from patchbay.control.bindings import BindingSpec, parse_bearer, parse_env, parse_header, parse_unset
from patchbay.core.credentials import (
    BINDINGS_KEY,
    Credential,
    CredentialBinding,
    apply_default,
    check_bindings,
    looks_secret,
    validate_env_name,
    validate_secret_value,
)
from patchbay.core.errors import CanonicalStateUnavailable, ConfigError, NotFoundError
from patchbay.core.models import Connector
from patchbay.core.oauth import oauth_from_config
from patchbay.core.redaction import register_secret

__all__ = [
    "BindingSpec",
    "CredentialService",
    "RepairReport",
    "parse_bearer",
    "parse_env",
    "parse_header",
    "parse_unset",
]


_log = logging.getLogger(__name__)


@dataclass
class RepairReport:
    """What :meth:`CredentialService.repair` found and did (ids and names only, never values)."""

    deleted: list[str] = field(default_factory=list)
    """Credentials deleted because the connector owning them does not exist (a create that
    crashed before its database commit, or a remove that crashed after it)."""
    unshared: list[str] = field(default_factory=list)
    """Credentials whose ``shared_with`` lost connectors that do not exist."""
    missing: list[dict[str, str]] = field(default_factory=list)
    """Bindings to credentials that do not exist: ``{"connector", "ref", "binding"}``. Kept as they
    are (the connector stops with ``auth_required``, problem ``missing``, until it is rebound)."""
    unbound: list[str] = field(default_factory=list)
    """Credentials an existing connector owns that nothing binds or refers to (an update that
    crashed before its database commit); kept, they go with their connector."""
    foreign: list[str] = field(default_factory=list)
    """Credentials whose owner is not in this database but that were written for another one
    (the home opened with another ``PATCHBAY_DATABASE_URL``) or before the database was
    recorded; kept untouched: this database cannot tell whether their owner exists."""

    @property
    def changed(self) -> bool:
        """Whether the store was written."""
        return bool(self.deleted or self.unshared)


@dataclass
class _Plan:
    upserts: list[StoredCredential]
    bindings: list[CredentialBinding]
    changed: bool
    """Whether the connector's bindings differ from what is stored."""


class CredentialService:
    """Bindings and credentials; used by :class:`~patchbay.control.connectors.ConnectorService`.

    Args:
        store: the credential store of the data home.
        repository: the canonical store (connectors, for owners and references).
    """

    def __init__(self, store: CredentialStore, repository: Repository) -> None:
        self.store = store
        self.repository = repository

    # -- opening --------------------------------------------------------------------------------

    def open(self) -> RepairReport | None:
        """What a service does when it opens the store: :meth:`repair`, then register every
        resolvable value for redaction (:meth:`CredentialStore.register_values`) and the data
        home's API token, so no process stores it as a connector's command or argument and every
        one masks it. Never raises: an
        unavailable store or database is reported where it is used; returns None then."""
        try:
            report = self.repair()
        except CanonicalStateUnavailable as exc:
            _log.warning("credential store not checked: %s", exc.message)
            report = None
        self.store.register_values()
        try:  # the API token is a secret in every process of this home, not only in serve's
            token = read_api_token(self.store.home)
        except CanonicalStateUnavailable:
            token = None
        if token:
            register_secret(token)
        return report

    def repair(self) -> RepairReport:
        """Make the store agree with the database after a crash (under the store's lock, so no
        create, update or remove is half done while it looks).

        Deletes credentials whose owner is no connector, drops connectors that do not exist from
        ``shared_with`` (both only for credentials written for this database:
        ``StoredCredential.database``; others are kept and reported as ``foreign``), and reports bindings to missing credentials and owned credentials nothing
        refers to (both kept: deleting a connector, or a value the user typed, is not a repair).
        Every change and finding is logged (warning) by id and connector name.

        Raises:
            CanonicalStateUnavailable: the store or the database cannot be read or written.
        """
        report = RepairReport()
        with self.store.transaction():
            records = self.store.load()
            connectors = self.repository.connectors.list_all()
            if not records and not any(_safe_bindings(c) for c in connectors):
                return report
            ids = {c.connector_id for c in connectors}
            used = {ref for c in connectors for ref in _refs(c) | {r for _, r in _oauth_refs(c)}}
            ours = {cid for cid, r in records.items() if r.database is not None and r.database == self.store.database}
            orphans = sorted(cid for cid, r in records.items() if r.owner_id not in ids)
            report.deleted = [cid for cid in orphans if cid in ours]
            report.foreign = [cid for cid in orphans if cid not in ours]
            report.unshared = sorted(
                cid
                for cid, r in records.items()
                if cid in ours and cid not in report.deleted and any(c not in ids for c in r.shared_with)
            )
            report.missing = [
                {"connector": c.name, "ref": b.ref, "binding": b.describe()}
                for c in connectors
                for b in _safe_bindings(c)
                if b.ref is not None and b.ref not in records
            ]
            report.unbound = sorted(
                cid
                for cid, r in records.items()
                if r.owner_id in ids and cid not in used and r.kind != "oauth_token_bundle"
            )
            if report.changed:

                def change(current: dict[str, StoredCredential]) -> None:
                    for cid in report.deleted:
                        current.pop(cid, None)
                    for cid in report.unshared:
                        if cid in current:
                            shared = tuple(c for c in current[cid].shared_with if c in ids)
                            current[cid] = current[cid].model_copy(update={"shared_with": shared})

                self.store.mutate(change)
        for cid in report.deleted:
            _log.warning("credential store repaired: deleted %s, owned by a connector that does not exist", cid)
        for cid in report.unshared:
            _log.warning("credential store repaired: %s is no longer shared with connectors that do not exist", cid)
        if report.foreign:
            _log.info(
                "credential store: %d credential(s) of connectors not in this database kept (written for another "
                "database, or before the database was recorded)",
                len(report.foreign),
            )
        for item in report.missing:
            _log.warning(
                "connector %r: the credential %s bound as %s is missing; bind a new one with: patchbay connector set",
                item["connector"],
                item["ref"],
                item["binding"],
            )
        return report

    def create_with(
        self,
        create: Callable[[Callable[[list[Connector]], None]], list[Connector]],
        records: Sequence[Sequence[StoredCredential]],
    ) -> list[Connector]:
        """Create connectors and the credentials they own, crash-consistently.

        ``create(before_commit)`` inserts the connectors in one database transaction and calls
        ``before_commit(connectors)`` just before committing it
        (:meth:`~patchbay.adapters.store.connectors.ConnectorStore.create_many`); ``records[i]`` are the
        credentials of the ``i``-th connector (from :meth:`prepare_new`), written there with their
        owner filled in. All of it runs under the store's lock: a crash after the store write and
        before the commit leaves credentials of a connector that does not exist, which the next
        :meth:`repair` deletes; a failed commit puts the store back at once.

        Raises:
            whatever ``create`` raises (after the store was put back).
        """
        written: dict[str, StoredCredential | None] = {}

        def before_commit(connectors: list[Connector]) -> None:
            upserts = [
                record.model_copy(update={"owner_id": connector.connector_id})
                for connector, owned in zip(connectors, records, strict=True)
                for record in owned
            ]
            if upserts:
                written.update(self.store.apply(upserts=upserts))
            crash_point("create.credentials_written")

        with self.store.transaction():
            try:
                connectors = create(before_commit)
            except BaseException:
                if written:  # the credentials were saved, then the database commit failed
                    self.store.restore(written)
                raise
            crash_point("create.committed")
        return connectors

    def remove_connector(self, connector: Connector, delete_row: Callable[[], object]) -> list[str]:
        """Delete a connector (``delete_row``) and then every credential it owns, under the store's
        lock; a crash in between leaves credentials the next :meth:`repair` deletes. Returns the
        deleted credential ids."""
        with self.store.transaction():
            delete_row()
            crash_point("remove.row_deleted")
            deleted = self.delete_owned(connector.connector_id)
            crash_point("remove.credentials_deleted")
        return deleted

    # -- planning -----------------------------------------------------------------------------

    def _plan(
        self,
        connector_id: str,
        transport: str,
        current: Sequence[CredentialBinding],
        specs: Sequence[BindingSpec],
        unset: Sequence[str | tuple[str, str]],
    ) -> _Plan:
        records = self.store.load() if specs or current else {}
        keys = [s.target_key for s in specs]
        if len(set(keys)) != len(keys):
            raise ConfigError(BINDINGS_KEY, "two bindings fill the same variable or header")
        freed = [parse_unset(u) if isinstance(u, str) else u for u in unset]
        placed = {b.target_key: b for b in current}
        for key in freed:
            if key in keys:
                raise ConfigError("unset", f"{key[1]} is both set and unset")
            if placed.pop(key, None) is None:
                raise ConfigError("unset", f"no binding fills {key[0]} {key[1]}")
        upserts: list[StoredCredential] = []
        now = self.store.now()
        for spec in specs:
            existing = placed.get(spec.target_key)
            if spec.plain is not None:  # no credential: the value stays in the connector's config
                placed[spec.target_key] = CredentialBinding(delivery=spec.delivery, name=spec.name, value=spec.plain)
                continue
            if spec.ref is not None:
                record = records.get(spec.ref)
                if record is None:
                    raise ConfigError(spec.delivery, f"no credential {spec.ref}")
                if not record.usable_by(connector_id):
                    raise ConfigError(
                        spec.delivery,
                        f"{spec.ref} belongs to another connector and is not shared with this one "
                        f"(share it with: patchbay credential set {spec.ref} --share NAME)",
                    )
                ref = spec.ref
            elif (
                existing is not None
                and existing.ref is not None
                and getattr(records.get(existing.ref), "owner_id", None) == connector_id
            ):
                old = records[existing.ref]
                if old.kind == "oauth_token_bundle":
                    raise ConfigError(spec.delivery, f"{existing.describe()} holds OAuth tokens; unset it first")
                upserts.append(
                    old.model_copy(
                        update={
                            "kind": spec.kind,
                            "source": "managed" if spec.value is not None else "environment",
                            "value": spec.value,
                            "variable": spec.variable,
                            "updated_at": now,
                            **_default_fields(spec),
                        }
                    )
                )
                ref = existing.ref
            else:
                record = self.store.new_record(
                    owner_id=connector_id,
                    kind=spec.kind,
                    value=spec.value,
                    variable=spec.variable,
                    default=spec.default,
                    default_mode=spec.default_mode,
                )
                upserts.append(record)
                ref = record.credential_id
            placed[spec.target_key] = CredentialBinding(ref=ref, delivery=spec.delivery, name=spec.name)
        bindings = list(check_bindings(placed.values(), transport))
        return _Plan(upserts=upserts, bindings=bindings, changed=bindings != list(current))

    # -- connectors ---------------------------------------------------------------------------

    def prepare_new(
        self, transport: str, specs: Sequence[BindingSpec]
    ) -> tuple[list[StoredCredential], list[dict[str, Any]]]:
        """Records and stored bindings for a connector about to be created (owner filled in later).

        Raises:
            ConfigError: ``invalid_config`` for a bad spec, or ``@credential:`` (a connector that
                does not exist yet cannot have been shared anything).
        """
        if any(s.ref is not None for s in specs):
            raise ConfigError(
                BINDINGS_KEY, "@credential: binds a shared credential; add the connector first, then set it"
            )
        plan = self._plan("", transport, [], specs, [])
        return plan.upserts, [b.model_dump(exclude_none=True) for b in plan.bindings]

    def same_bindings(self, connector: Connector, specs: Sequence[BindingSpec]) -> bool:
        """Whether ``specs`` ask for exactly what ``connector`` has (values compared, never shown)."""
        current = {b.target_key: b for b in connector.bindings}
        if set(current) != {s.target_key for s in specs}:
            return False
        records = self.store.load() if specs else {}
        for spec in specs:
            binding = current[spec.target_key]
            if spec.plain is not None or binding.ref is None:
                if (binding.delivery, binding.value) != (spec.delivery, spec.plain):
                    return False
                continue
            record = records.get(binding.ref)
            if binding.delivery != spec.delivery or record is None:
                return False
            if spec.variable is not None and (record.default, record.default_mode) != _default_key(spec):
                return False
            if spec.ref is not None and spec.ref != binding.ref:
                return False
            if spec.variable is not None and (record.source, record.variable) != ("environment", spec.variable):
                return False
            if spec.value is not None and (record.source, record.value) != ("managed", spec.value):
                return False
        return True

    def rebind(
        self,
        connector: Connector,
        specs: Sequence[BindingSpec] = (),
        unset: Iterable[str | tuple[str, str]] = (),
        *,
        write: Callable[[dict[str, Any]], Connector],
        dry_run: bool = False,
    ) -> Connector:
        """Add, replace or remove bindings of an existing connector.

        Args:
            specs: bindings to add or replace.
            unset: places to free (``env:KEY``, ``header:Name``, ``bearer``).
            write: stores a new ``runtime_config`` under the connector's revision lock and returns
                the updated connector (the connector service's job); called only when the bindings
                change.
            dry_run: check everything and return the connector unchanged, writing nothing.

        Raises:
            ConfigError: ``invalid_config`` (nothing changed); whatever ``write`` raises
                (``revision_conflict`` ...) after the store was put back.
        """
        plan = self._plan(connector.connector_id, connector.transport, connector.bindings, specs, list(unset))
        if dry_run:
            return connector
        with self.store.transaction():  # store write and database commit are seen together or not at all
            previous = self.store.apply(upserts=plan.upserts) if plan.upserts else {}
            crash_point("update.credentials_written")
            updated = connector
            if plan.changed:
                config = dict(connector.runtime_config)
                if plan.bindings:
                    config[BINDINGS_KEY] = [b.model_dump(exclude_none=True) for b in plan.bindings]
                else:
                    config.pop(BINDINGS_KEY, None)
                try:
                    updated = write(config)
                except BaseException:
                    if previous:
                        self.store.restore(previous)
                    raise
            crash_point("update.committed")
            self._collect(_refs_of(connector.bindings) - _refs_of(plan.bindings), connector.connector_id)
        return updated

    def _collect(self, refs: set[str], owner_id: str) -> None:
        """Delete the credentials in ``refs`` that ``owner_id`` owns and no connector binds any more."""
        if not refs:
            return
        bound = {ref for c in self.repository.connectors.list_all() for ref in _refs(c)}
        records = self.store.load()
        doomed = [r for r in refs - bound if r in records and records[r].owner_id == owner_id]
        if doomed:
            self.store.apply(deletes=doomed)

    def delete_owned(self, connector_id: str) -> list[str]:
        """Delete every credential the (removed) connector owned; returns their ids."""
        if not any(r.owner_id == connector_id or connector_id in r.shared_with for r in self.store.load().values()):
            return []
        return self.store.delete_owned_by(connector_id)

    def binding_views(
        self, connector: Connector, *, records: Mapping[str, StoredCredential] | None = None
    ) -> list[dict[str, Any]]:
        """Each binding of ``connector`` as interfaces show it: no value, plus what is known without
        resolving (``problem``: None, ``missing``, ``not_shared``, ``variable_unset``, ``no_value``).

        Args:
            records: the credential store's records (``CredentialStore.load()``) when the caller
                has read them already, as a list of many connectors does; default: read them now.
        """
        bindings = connector.bindings
        if records is None:
            records = self.store.load() if bindings else {}
        views = []
        for binding in bindings:
            if binding.ref is None:
                views.append(
                    {
                        "ref": None,
                        "delivery": binding.delivery,
                        "name": binding.name,
                        "kind": None,
                        "source": "plain",
                        "variable": None,
                        "owned": False,
                        "problem": None,
                        "plain": binding.value,
                    }
                )
                continue
            record = records.get(binding.ref)
            public = record.public() if record is not None else None
            view: dict[str, Any] = {
                "ref": binding.ref,
                "delivery": binding.delivery,
                "name": binding.name,
                "kind": public.kind if public else None,
                "source": public.source if public else None,
                "variable": public.variable if public else None,
                "owned": bool(public and public.owner_id == connector.connector_id),
                "problem": _problem(public, connector.connector_id),
            }
            if public is not None and public.default_mode is not None:
                view |= {
                    "default": public.default,
                    "default_mode": public.default_mode,
                    "default_secret": public.default_secret,
                }
            views.append(view)
        return views

    # -- credentials --------------------------------------------------------------------------

    def _names(self) -> dict[str, str]:
        return {c.connector_id: c.name for c in self.repository.connectors.list_all()}

    def _bound_as(self) -> dict[str, list[dict[str, str]]]:
        """Where each credential is used: bindings, and OAuth settings (``delivery: "oauth"``,
        ``name``: the setting, e.g. ``client_secret``)."""
        out: dict[str, list[dict[str, str]]] = {}
        for connector in self.repository.connectors.list_all():
            for binding in _safe_bindings(connector):
                if binding.ref is None:
                    continue
                out.setdefault(binding.ref, []).append(
                    {"connector": connector.name, "delivery": binding.delivery, "name": binding.name}
                )
            for setting, ref in _oauth_refs(connector):
                out.setdefault(ref, []).append({"connector": connector.name, "delivery": "oauth", "name": setting})
        return out

    def view(
        self, credential: Credential, names: Mapping[str, str], bound: Mapping[str, list[dict[str, str]]]
    ) -> dict[str, Any]:
        """The public shape of one credential: never its value."""
        return {
            "id": credential.credential_id,
            "kind": credential.kind,
            "source": credential.source,
            "owner_kind": credential.owner_kind,
            "owner_id": credential.owner_id,
            "owner": names.get(credential.owner_id),
            "variable": credential.variable,
            "default": credential.default,
            "default_mode": credential.default_mode,
            "default_secret": credential.default_secret,
            "configured": credential.configured,
            "available": _problem(credential, credential.owner_id) is None,
            "shared_with": [names.get(cid, cid) for cid in credential.shared_with],
            "bound_as": bound.get(credential.credential_id, []),
            "metadata": credential.metadata,
            "created_at": credential.created_at,
            "updated_at": credential.updated_at,
            "last_used_at": credential.last_used_at,
        }

    def list_views(self, connector: str | None = None) -> list[dict[str, Any]]:
        """Every credential (or those ``connector`` owns or was shared), as :meth:`view` shapes.

        Raises:
            NotFoundError: ``not_found`` for an unknown connector name.
        """
        owner = self.repository.connectors.get_by_name(connector).connector_id if connector else None
        names, bound = self._names(), self._bound_as()
        return [
            self.view(c, names, bound)
            for c in self.store.list_public()
            if owner is None or c.owner_id == owner or owner in c.shared_with
        ]

    def show_view(self, credential_id: str) -> dict[str, Any]:
        """One credential as :meth:`view`. Raises ``NotFoundError`` (``not_found``)."""
        return self.view(self.store.get(credential_id), self._names(), self._bound_as())

    def update(
        self,
        credential_id: str,
        *,
        value: str | None = None,
        variable: str | None = None,
        share: Sequence[str] = (),
        unshare: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Replace a credential's value (managed) or variable name (environment), and share or
        unshare it with connectors by name. The value is checked against every place it is bound
        (an HTTP header value has stricter rules than an environment value).

        Raises:
            NotFoundError: ``not_found`` (credential or connector).
            ConfigError: ``invalid_config``: both or a bad value/variable; an OAuth bundle (managed
                by ``patchbay auth``); unsharing from a connector that still binds it.
        """
        if value is not None and variable is not None:
            raise ConfigError("value", "give a value or a variable, not both")
        if variable is not None:
            validate_env_name("variable", variable)
        deliveries = {b["delivery"] for b in self._bound_as().get(credential_id, [])}
        for delivery in deliveries or {"env"}:
            if value is not None:
                validate_secret_value("value", value, delivery)  # type: ignore[arg-type]
        share_ids = [self.repository.connectors.get_by_name(n).connector_id for n in share]
        unshare_ids = {self.repository.connectors.get_by_name(n).connector_id: n for n in unshare}
        binders = {c.connector_id for c in self.repository.connectors.list_all() if credential_id in _refs(c)}
        for cid, name in unshare_ids.items():
            if cid in binders:
                raise ConfigError(
                    "unshare", f"connector {name!r} still binds {credential_id}; change its binding first"
                )

        def change(records: dict[str, StoredCredential]) -> None:
            record = records.get(credential_id)
            if record is None:
                raise NotFoundError(f"no credential {credential_id!r}", details={"id": credential_id})
            update: dict[str, Any] = {"updated_at": self.store.now()}
            if value is not None or variable is not None:
                if record.kind == "oauth_token_bundle":
                    raise ConfigError("value", "OAuth tokens are managed by the OAuth flow, not set by hand")
                managed_kind = "bearer_token" if deliveries == {"bearer"} else "api_key"
                update |= {
                    "source": "managed" if value is not None else "environment",
                    "kind": managed_kind if value is not None else "env_reference",
                    "value": value,
                    "variable": variable,
                }
                if value is not None:  # a managed value has no default
                    update |= {"default": None, "default_mode": None, "default_secret": False}
            shared = [c for c in record.shared_with if c not in unshare_ids]
            shared += [c for c in share_ids if c not in shared and c != record.owner_id]
            update["shared_with"] = tuple(shared)
            records[credential_id] = record.model_copy(update=update)

        self.store.mutate(change)
        return self.show_view(credential_id)

    def remove(self, credential_id: str, *, force: bool = False) -> dict[str, Any]:
        """Delete a credential. One still bound is deleted only with ``force``: its connectors keep
        the binding and stop with ``auth_required`` until given another.

        Raises:
            NotFoundError: ``not_found``.
            ConfigError: ``invalid_config`` (field ``force``) when it is bound and ``force`` is False.
        """
        shown = self.show_view(credential_id)
        if shown["bound_as"] and not force:
            places = ", ".join(f"{b['connector']} ({describe_use(credential_id, b)})" for b in shown["bound_as"])
            raise ConfigError("force", f"{credential_id} is bound by {places}; remove it anyway with --force")
        self.store.apply(deletes=[credential_id])
        return shown


def describe_use(credential_id: str, use: Mapping[str, str]) -> str:
    """One ``bound_as`` entry as text: ``env KEY``, ``header Name``, ``oauth client_secret``."""
    if use["delivery"] == "oauth":
        return f"oauth {use['name']}"
    return CredentialBinding(ref=credential_id, delivery=use["delivery"], name=use["name"]).describe()  # type: ignore[arg-type]


def _oauth_refs(connector: Connector) -> list[tuple[str, str]]:
    """``(setting, credential id)`` of the connector's OAuth settings (none when unreadable)."""
    try:
        config = oauth_from_config(connector.runtime_config)
    except ConfigError:
        return []
    if config is None:
        return []
    names = ("client_secret_ref", "private_key_ref", "idp_client_secret_ref", "id_token_ref")
    return [(name.removesuffix("_ref"), getattr(config, name)) for name in names if getattr(config, name)]


def _safe_bindings(connector: Connector) -> tuple[CredentialBinding, ...]:
    try:
        return connector.bindings
    except ConfigError:
        return ()


def _refs_of(bindings: Iterable[CredentialBinding]) -> set[str]:
    """The credential ids ``bindings`` refer to (plain bindings refer to none)."""
    return {b.ref for b in bindings if b.ref is not None}


def _refs(connector: Connector) -> set[str]:
    return _refs_of(_safe_bindings(connector))


def _default_key(spec: BindingSpec) -> tuple[str | None, str | None]:
    return (spec.default, spec.default_mode if spec.default is not None else None)


def _default_fields(spec: BindingSpec) -> dict[str, Any]:
    """The default fields of an environment record for ``spec`` (cleared for a managed value)."""
    default, mode = _default_key(spec)
    secret = default is not None and looks_secret(spec.variable or "", default)
    return {"default": default, "default_mode": mode, "default_secret": secret}


def _problem(credential: Credential | None, connector_id: str) -> str | None:
    """Why a binding to ``credential`` would not resolve for ``connector_id`` now (None: it would)."""
    if credential is None:
        return "missing"
    if not credential.usable_by(connector_id):
        return "not_shared"
    if credential.source == "environment":
        value = apply_default(os.environ.get(credential.variable or ""), credential.default, credential.default_mode)
        return None if value or (value == "" and credential.default_mode == "unset") else "variable_unset"
    return None if credential.configured else "no_value"
