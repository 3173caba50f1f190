"""The credential store: ``<data home>/credentials.json``, mode 0600 (DESIGN.md "Where things
live").

:class:`CredentialStore` reads and writes the JSON document of credential records (a managed
credential's value included; an ``environment`` credential only names its variable) under an
exclusive file lock, replacing the file atomically; :meth:`CredentialStore.transaction` holds the
lock across a store write and the database commit that references it.

Errors: an unreadable or corrupt store, or a lock held past :data:`LOCK_TIMEOUT`, raises
:class:`~patchbay.core.errors.CanonicalStateUnavailable` (``canonical_state_unavailable``) from
control-plane methods, and :class:`~patchbay.core.errors.CredentialUnavailable`
(``auth_required``, problem ``unreadable``) from :meth:`CredentialStore.resolve`; an unknown id is
``NotFoundError`` (``not_found``). No message ever quotes a value.

Beside the connectors' credentials the document keeps the tokens Patchbay itself issues and checks
(the gateway token, :mod:`patchbay.control.gateway_token`) as :class:`IssuedToken` records: only
their SHA-256 digest, never the token, so a token is shown once, when it is made, and this file
cannot give it back. :meth:`CredentialStore.issued_token` reads one (cached on the file's identity,
so a check per request costs a ``stat``), :meth:`CredentialStore.replace_issued_token` writes one.

Design: docs/credentials.md (the file contract)
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pydantic
from pydantic import Field

from patchbay.adapters.atomic import lock_exclusive, replace_file
from patchbay.core.credentials import (
    CREDENTIAL_ID_PREFIX,
    Credential,
    CredentialBinding,
    apply_default,
    deliver,
    looks_secret,
    validate_secret_value,
)
from patchbay.core.errors import CanonicalStateUnavailable, ConfigError, CredentialUnavailable, NotFoundError
from patchbay.core.redaction import register_secret

__all__ = [
    "CREDENTIALS_FILE",
    "LOCK_TIMEOUT",
    "CredentialResolver",
    "CredentialStore",
    "IssuedToken",
    "ResolvedCredentials",
    "StoredCredential",
]

CREDENTIALS_FILE = "credentials.json"
LOCK_TIMEOUT = 10.0
"""Seconds a writer waits for the store's lock before giving up (``canonical_state_unavailable``)."""
_USED_MARK_INTERVAL_MS = 60_000
_VERSION = 1
_T = TypeVar("_T")


class StoredCredential(Credential):
    """A credential as the store keeps it: the public shape plus the managed ``value``.

    Only this module and the control plane's credential service handle it; ``repr`` omits the value.
    """

    value: str | dict[str, Any] | None = Field(default=None, repr=False)
    """A managed value (a string), an OAuth token bundle (an object), or None (environment source)."""
    database: str | None = None
    """The registry database its owner lives in (``Settings.database_identity``) when it was
    written; None for a record written before this was recorded. Repair deletes an orphan only
    when this is the database it is checking against."""

    def public(self) -> Credential:
        """The shape every interface may show: no value, ``configured`` computed."""
        data = self.model_dump(exclude={"value", "database"})
        data["configured"] = bool(self.variable) if self.source == "environment" else bool(self.value)
        if self.default_secret:
            data["default"] = None
        return Credential.model_validate(data)


class IssuedToken(pydantic.BaseModel):
    """A token Patchbay issued and checks itself (not a connector's): what the store keeps of it.

    ``sha256`` is the 64 lower-case hex digits of the SHA-256 of the token's ASCII text: the
    token itself is never stored, so it cannot be shown again. ``created_at``: Unix milliseconds.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", repr=False)
    created_at: int = Field(ge=0)


_Signature = tuple[int, int, int, int, int]
"""What identifies one version of the file: device, inode, size, mtime and ctime (ns)."""


def _signature(info: os.stat_result) -> _Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@dataclass(frozen=True, repr=False)
class ResolvedCredentials:
    """Values resolved for one connector start; never stored, never printed (``repr`` shows names)."""

    env: dict[str, str]
    """Environment variables for a stdio child."""
    headers: dict[str, str]
    """HTTP request headers for a remote connector."""
    secrets: tuple[str, ...]
    """Every resolved value (each already given to ``register_secret``), for ``known_secrets``."""

    def __repr__(self) -> str:
        return f"ResolvedCredentials(env={sorted(self.env)}, headers={sorted(self.headers)})"


class CredentialResolver(Protocol):
    """What a runtime or a probe needs: resolve a connector's bindings (see :meth:`CredentialStore.resolve`)."""

    def resolve(
        self, bindings: Iterable[CredentialBinding], *, connector_id: str, connector: str | None = None
    ) -> ResolvedCredentials: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class CredentialStore:
    """The mode-0600 JSON credential store of one data home.

    Usage::

        store = CredentialStore(settings.home, database=settings.database_identity)
        record = store.new_record(owner_id=connector.connector_id, kind="bearer_token", value="...")
        store.apply(upserts=[record])
        resolved = store.resolve(connector.bindings, connector_id=connector.connector_id)

    Args:
        home: the data home (``Settings.home``); created (mode 0700) on the first write.
        clock: returns Unix milliseconds; tests pass a fake.
        environ: where ``environment`` credentials are read from; default ``os.environ`` at the
            time of each :meth:`resolve`.
        database: the registry database of this process (``Settings.database_identity``),
            recorded on every record :meth:`new_record` makes.
    """

    def __init__(
        self,
        home: Path,
        *,
        clock: Callable[[], int] | None = None,
        environ: Mapping[str, str] | None = None,
        database: str | None = None,
    ) -> None:
        self.home = Path(home)
        self.database = database
        self.path = self.home / CREDENTIALS_FILE
        self.lock_path = self.home / (CREDENTIALS_FILE + ".lock")
        self._clock = clock or _now_ms
        self._environ = environ
        self._held = threading.local()  # this thread's lock depth: transaction() and mutate() nest
        # the issued tokens of the file version last read (see issued_token)
        self._tokens_seen: tuple[_Signature, dict[str, IssuedToken]] | None = None

    # -- reading ------------------------------------------------------------------------------

    def now(self) -> int:
        """The store's clock: Unix milliseconds."""
        return self._clock()

    def load(self) -> dict[str, StoredCredential]:
        """Every record by id, values included (control plane only); ``{}`` when there is no file yet.

        Raises:
            CanonicalStateUnavailable: the file cannot be opened or parsed.
        """
        return self._read()[0]

    def _read_raw(self) -> tuple[bytes, _Signature] | None:
        """The file's bytes and the identity of the version read; None when there is no file."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._unavailable("cannot be opened", exc) from None
        try:
            info = os.fstat(fd)
            if info.st_mode & 0o077:
                with contextlib.suppress(OSError):
                    os.fchmod(fd, 0o600)  # someone widened it: put it back
                info = os.fstat(fd)
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = handle.read()
        except OSError as exc:
            raise self._unavailable("cannot be read", exc) from None
        finally:
            os.close(fd)
        return raw, _signature(info)

    def _document(self, raw: bytes) -> dict[str, Any]:
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            document = None
        if not isinstance(document, dict) or document.get("version") != _VERSION:
            # Never quote the document: it holds the values.
            raise CanonicalStateUnavailable(f"the credential store {self.path} is corrupt", details={})
        return document

    def _tokens_of(self, document: Mapping[str, Any]) -> dict[str, IssuedToken]:
        try:
            tokens = document.get("tokens", {})
            if not isinstance(tokens, dict):
                raise ValueError("tokens is not an object")
            return {str(name): IssuedToken.model_validate(item) for name, item in tokens.items()}
        except (ValueError, pydantic.ValidationError):
            raise CanonicalStateUnavailable(f"the credential store {self.path} is corrupt", details={}) from None

    def _read(self) -> tuple[dict[str, StoredCredential], dict[str, IssuedToken]]:
        """The records by id and the issued tokens by name (both empty when there is no file)."""
        read = self._read_raw()
        if read is None:
            return {}, {}
        document = self._document(read[0])
        try:
            records = [StoredCredential.model_validate(item) for item in document.get("credentials", [])]
        except (ValueError, pydantic.ValidationError):
            raise CanonicalStateUnavailable(f"the credential store {self.path} is corrupt", details={}) from None
        return {record.credential_id: record for record in records}, self._tokens_of(document)

    def issued_token(self, name: str) -> IssuedToken | None:
        """The issued token ``name`` (``gateway``), or None when there is none.

        Cheap enough for every request: the file is parsed again only when its identity (inode,
        size, modification and change time) differs from the version read last, so a token
        replaced by another process is seen at the next call.

        Raises:
            CanonicalStateUnavailable: the file cannot be opened or parsed.
        """
        seen = self._tokens_seen
        if seen is not None:
            try:
                if _signature(os.stat(self.path, follow_symlinks=False)) == seen[0]:
                    return seen[1].get(name)
            except OSError:
                pass  # gone or unreadable: the read below says which
        read = self._read_raw()
        if read is None:
            self._tokens_seen = None
            return None
        tokens = self._tokens_of(self._document(read[0]))
        self._tokens_seen = (read[1], tokens)
        return tokens.get(name)

    def replace_issued_token(self, name: str, token: IssuedToken) -> IssuedToken | None:
        """Store ``token`` as the issued token ``name``, in place of the one there was (under
        the lock, in one atomic replace of the file). Returns the one replaced, or None.

        Raises:
            CanonicalStateUnavailable: the store cannot be locked, read or written.
        """
        with self._locked():
            records, tokens = self._read()
            previous = tokens.get(name)
            tokens[name] = token
            self._save(records, tokens)
            return previous

    def _unavailable(self, what: str, exc: OSError) -> CanonicalStateUnavailable:
        reason = "it is a symlink" if exc.errno == errno.ELOOP else (exc.strerror or type(exc).__name__)
        return CanonicalStateUnavailable(f"the credential store {self.path} {what}: {reason}")

    def list_public(self, *, owner_id: str | None = None) -> list[Credential]:
        """Every credential (public shape), oldest first; only ``owner_id``'s when given."""
        records = sorted(self.load().values(), key=lambda r: (r.created_at, r.credential_id))
        return [r.public() for r in records if owner_id is None or r.owner_id == owner_id]

    def get(self, credential_id: str) -> Credential:
        """One credential (public shape). Raises ``NotFoundError`` (``not_found``)."""
        return self.record(credential_id).public()

    def record(self, credential_id: str) -> StoredCredential:
        """One record with its value, for the control plane. Raises ``NotFoundError`` (``not_found``)."""
        record = self.load().get(credential_id)
        if record is None:
            raise NotFoundError(f"no credential {credential_id!r}", details={"id": credential_id})
        return record

    # -- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the store's exclusive lock for the whole block (waits up to :data:`LOCK_TIMEOUT`
        seconds); writes inside it (:meth:`mutate`, :meth:`apply` ...) in this thread take it
        again without waiting. For a change that writes the store and then commits the database
        rows that refer to it: another process's writes and repair pass wait until both are done,
        and a crash in between releases the lock with the process.

        Raises:
            CanonicalStateUnavailable: the lock cannot be taken.
        """
        with self._locked():
            yield

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's exclusive lock (waits up to :data:`LOCK_TIMEOUT` seconds)."""
        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise self._unavailable("cannot be locked", exc) from None
        try:
            if not lock_exclusive(fd, LOCK_TIMEOUT):  # another writer holds it
                raise CanonicalStateUnavailable(f"the credential store {self.path} stayed locked for {LOCK_TIMEOUT:g}s")
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0
        finally:
            os.close(fd)  # releases the lock

    def _save(self, records: Mapping[str, StoredCredential], tokens: Mapping[str, IssuedToken]) -> None:
        """Replace the file atomically with ``records`` and ``tokens`` (the lock must be held)."""
        document: dict[str, Any] = {
            "version": _VERSION,
            "credentials": [r.model_dump(mode="json") for r in sorted(records.values(), key=lambda r: r.created_at)],
        }
        if tokens:
            document["tokens"] = {name: tokens[name].model_dump(mode="json") for name in sorted(tokens)}
        data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
        try:
            dir_fd = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                replace_file(dir_fd, CREDENTIALS_FILE, data, 0o600, strict_dir_sync=False)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise self._unavailable("cannot be written", exc) from None

    def mutate(self, change: Callable[[dict[str, StoredCredential]], _T]) -> _T:
        """Run ``change(records)`` on a fresh read under the lock and save what it leaves.

        ``change`` edits the dict in place (add, replace, delete records) and may raise to abort
        (nothing is written). Returns what ``change`` returned.
        """
        with self._locked():
            records, tokens = self._read()
            result = change(records)
            self._save(records, tokens)  # the issued tokens are kept as they are
            return result

    def new_record(
        self,
        *,
        owner_id: str,
        kind: str,
        value: str | dict[str, Any] | None = None,
        variable: str | None = None,
        metadata: Mapping[str, str] | None = None,
        default: str | None = None,
        default_mode: str | None = None,
    ) -> StoredCredential:
        """A new record (not saved): ``value`` for a managed credential, ``variable`` for an
        environment one (then ``kind`` must be ``env_reference``), optionally with a ``default``
        used as ``default_mode`` says (``unset_or_empty``: ``${VAR:-x}``; ``unset``: ``${VAR-x}``);
        a default that :func:`~patchbay.core.credentials.looks_secret` is flagged ``default_secret``.

        Raises:
            ConfigError: ``invalid_config`` when ``kind``/source do not fit together.
        """
        now = self._clock()
        try:
            return StoredCredential(
                credential_id=CREDENTIAL_ID_PREFIX + uuid.uuid4().hex,
                kind=kind,  # type: ignore[arg-type]
                source="environment" if variable is not None else "managed",
                owner_id=owner_id,
                variable=variable,
                metadata=dict(metadata or {}),
                value=value,
                default=default,
                default_mode=(default_mode or "unset_or_empty") if default is not None else None,  # type: ignore[arg-type]
                default_secret=default is not None and looks_secret(variable or "", default),
                created_at=now,
                updated_at=now,
                database=self.database,
            )
        except pydantic.ValidationError as exc:
            raise ConfigError("kind", exc.errors(include_url=False)[0]["msg"]) from None

    def apply(
        self, upserts: Iterable[StoredCredential] = (), deletes: Iterable[str] = ()
    ) -> dict[str, StoredCredential | None]:
        """Save ``upserts`` and delete ``deletes`` in one atomic replace.

        Returns the previous state of every touched id (None: it did not exist), which
        :meth:`restore` puts back (the compensation when a later step fails).
        """
        upserts, deletes = list(upserts), list(deletes)

        def change(records: dict[str, StoredCredential]) -> dict[str, StoredCredential | None]:
            previous = {cid: records.get(cid) for cid in [*(r.credential_id for r in upserts), *deletes]}
            for record in upserts:
                records[record.credential_id] = record
            for cid in deletes:
                records.pop(cid, None)
            return previous

        return self.mutate(change)

    def restore(self, previous: Mapping[str, StoredCredential | None]) -> None:
        """Put back what :meth:`apply` returned."""
        self.apply(
            upserts=[r for r in previous.values() if r is not None],
            deletes=[cid for cid, r in previous.items() if r is None],
        )

    def delete_owned_by(self, connector_id: str) -> list[str]:
        """Delete every credential ``connector_id`` owns and drop it from every ``shared_with``.

        Returns the deleted ids (removing a custom connector removes its own credentials).
        """

        def change(records: dict[str, StoredCredential]) -> list[str]:
            gone = [cid for cid, r in records.items() if r.owner_id == connector_id]
            for cid in gone:
                del records[cid]
            for cid, r in list(records.items()):
                if connector_id in r.shared_with:
                    shared = tuple(c for c in r.shared_with if c != connector_id)
                    records[cid] = r.model_copy(update={"shared_with": shared, "updated_at": self._clock()})
            return gone

        return self.mutate(change)

    def mark_used(self, credential_ids: Iterable[str]) -> None:
        """Record ``last_used_at`` (at most once a minute per credential); best effort, never raises."""
        ids = set(credential_ids)
        now = self._clock()
        try:
            stale = [
                cid
                for cid, r in self.load().items()
                if cid in ids and (r.last_used_at is None or now - r.last_used_at >= _USED_MARK_INTERVAL_MS)
            ]
            if not stale:
                return

            def change(records: dict[str, StoredCredential]) -> None:
                for cid in stale:
                    if cid in records:
                        records[cid] = records[cid].model_copy(update={"last_used_at": now})

            self.mutate(change)
        except (CanonicalStateUnavailable, OSError):
            pass  # a usage mark must never stop a connector

    # -- resolution ---------------------------------------------------------------------------

    def register_values(self) -> int:
        """Register every value this process could resolve for redaction, before any connector
        starts: managed values, the current values of referenced environment variables, and
        OAuth tokens (as transient: they rotate). A value one connector stores is then masked
        in every other connector's output, and in whatever is logged before a connector resolves
        its own bindings. Never raises (an unreadable store registers nothing).

        Returns:
            How many values are masked from now on.
        """
        try:
            records = self.load()
        except CanonicalStateUnavailable:
            return 0
        environ = self._environ if self._environ is not None else os.environ
        count = 0
        for record in records.values():
            if record.source == "environment":
                count += register_secret(environ.get(record.variable or "") or "")
                if record.default_secret and record.default:
                    count += register_secret(record.default)
            elif isinstance(record.value, dict):
                for key in ("access_token", "refresh_token"):
                    token = record.value.get(key)
                    count += isinstance(token, str) and register_secret(token, transient=True)
            elif isinstance(record.value, str):
                count += register_secret(record.value)
        return count

    def resolve_values(self, refs: Iterable[str], *, connector_id: str, connector: str | None = None) -> dict[str, str]:
        """The values of credentials ``refs`` (ids) for ``connector_id``, by id: the same ownership,
        environment and redaction rules as :meth:`resolve` (used for OAuth client secrets, keys
        and ID tokens, which are not delivered as an env var or header).

        Raises:
            CredentialUnavailable: ``auth_required``, as :meth:`resolve`.
        """
        names = {ref: f"PATCHBAY_REF_{i}" for i, ref in enumerate(refs)}
        bindings = [CredentialBinding(ref=ref, delivery="env", name=name) for ref, name in names.items()]
        env = self.resolve(bindings, connector_id=connector_id, connector=connector).env
        return {ref: env[name] for ref, name in names.items()}

    def resolve(
        self, bindings: Iterable[CredentialBinding], *, connector_id: str, connector: str | None = None
    ) -> ResolvedCredentials:
        """Resolve one connector's bindings to values, at connect time.

        Each credential value is registered with :func:`~patchbay.core.redaction.register_secret`
        before it is returned, so every redaction in this process masks it from then on; plain
        bindings and plain defaults of environment references are delivered unregistered. An
        environment reference with a default follows shell semantics
        (:func:`~patchbay.core.credentials.apply_default`).

        Args:
            bindings: the connector's bindings (``RuntimeServer.bindings``/``Connector.bindings``).
            connector_id: who asks; a credential it neither owns nor was shared is refused.
            connector: the connector's name, for messages (default: ``connector_id``).

        Raises:
            CredentialUnavailable: ``auth_required`` with ``details["problem"]`` ``missing``,
                ``not_shared``, ``variable_unset``, ``no_value``, ``invalid_value`` (an environment
                value unfit for an HTTP header) or ``unreadable``.
        """
        bindings = tuple(bindings)
        if not bindings:
            return ResolvedCredentials({}, {}, ())
        who = connector or connector_id

        def unavailable(binding: CredentialBinding, problem: str, text: str) -> CredentialUnavailable:
            return CredentialUnavailable(
                f"connector {who!r}: the credential {binding.ref} bound as {binding.describe()} {text}",
                problem=problem,
                ref=binding.ref or "",
                binding=binding.describe(),
                connector=who,
            )

        if all(binding.ref is None for binding in bindings):
            env, headers = deliver(bindings, {})
            return ResolvedCredentials(env, headers, ())
        try:
            records = self.load()
        except CanonicalStateUnavailable as exc:
            raise unavailable(bindings[0], "unreadable", f"cannot be read ({exc.message})") from None
        environ = self._environ if self._environ is not None else os.environ
        values: dict[str, str] = {}
        unmasked: set[str] = set()  # refs whose value is a plain default: not a secret
        for binding in bindings:
            if binding.ref is None:
                continue  # a plain value, delivered as it is
            record = records.get(binding.ref)
            if record is None:
                raise unavailable(binding, "missing", "does not exist (bind a new one with: patchbay connector set)")
            if not record.usable_by(connector_id):
                raise unavailable(binding, "not_shared", "belongs to another connector and is not shared with this one")
            if record.source == "environment":
                raw = environ.get(record.variable or "")
                found = apply_default(raw, record.default, record.default_mode)
                if found is None or (found == "" and not (raw == "" and record.default_mode == "unset")):
                    raise unavailable(
                        binding,
                        "variable_unset",
                        f"reads {record.variable}, which is not set in Patchbay's environment",
                    )
                value = found
                if found is not raw and not record.default_secret:
                    unmasked.add(binding.ref)
            else:
                stored = record.value.get("access_token") if isinstance(record.value, dict) else record.value
                if not isinstance(stored, str) or not stored:
                    raise unavailable(binding, "no_value", "has no stored value")
                value = stored
            if binding.delivery != "env":
                try:
                    validate_secret_value("value", value, binding.delivery)
                except ConfigError as exc:
                    raise unavailable(binding, "invalid_value", f"cannot be sent as a header ({exc.message})") from None
            values[binding.ref] = value
        for ref, value in values.items():
            if ref not in unmasked:
                register_secret(value, transient=isinstance(records[ref].value, dict))  # OAuth tokens rotate
        env, headers = deliver(bindings, values)
        if values:
            self.mark_used(values)
        secrets = [value for ref, value in values.items() if ref not in unmasked and value]
        return ResolvedCredentials(env, headers, tuple(dict.fromkeys(secrets)))
