"""Connectors and their global settings: transactional CRUD under two optimistic locks.

- every write runs in one transaction (``BEGIN IMMEDIATE`` on SQLite); bad input raises before
  or inside it and leaves nothing behind;
- connector updates use the optimistic lock on ``revision``, settings updates the independent
  one on ``settings_revision``: one ``UPDATE ... WHERE revision = :expected``
  whose row count decides, so two writers can never both win;
- removing a connector removes its grants, tool cache and probe outcome by ``ON DELETE CASCADE``
 , so an engine on SQLite must come from
  :func:`~patchbay.adapters.store.db.create_engine_for` (``PRAGMA foreign_keys=ON``).

URL, command and credential checks, audit and runtime reload are the connector service's job.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypedDict, Unpack

from sqlalchemy import RowMapping, delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from patchbay.adapters.store._rows import (
    check_choice,
    check_text,
    coerce_target,
    connector_from_row,
    settings_columns,
    target_columns,
    tool_patterns,
)
from patchbay.adapters.store._transactions import Transactions
from patchbay.adapters.store.tables import APPROVAL_MODES, CONNECTOR_SOURCES, mcp_connectors
from patchbay.core.errors import (
    BuiltinConnectorError,
    ConfigError,
    NameTakenError,
    NotFoundError,
    RevisionConflictError,
)
from patchbay.core.models import Connector, ConnectorSettings
from patchbay.core.names import validate_connector_name
from patchbay.core.validation import validate_policy_url

__all__ = ["UNSET", "ConnectorFields", "ConnectorStore", "Unset", "require_connector"]

_C = mcp_connectors.c


class Unset(enum.Enum):
    UNSET = enum.auto()


#: "Leave this field as it is" for the keyword arguments of the ``update*`` methods.
UNSET = Unset.UNSET


def require_connector(conn: Connection, connector_id: str) -> RowMapping:
    """The connector's row, read inside ``conn``'s transaction. Raises ``NotFoundError`` (``not_found``)."""
    row = conn.execute(select(mcp_connectors).where(_C.connector_id == connector_id)).mappings().first()
    if row is None:
        raise NotFoundError(f"no connector {connector_id!r}", details={"connector_id": connector_id})
    return row


class ConnectorFields(TypedDict, total=False):
    """The optional fields of a new connector (:meth:`ConnectorStore.create`); the defaults
    are those of a connector created without them."""

    description: str
    """Free text; default empty."""
    terms_url: str
    """The service's terms of use, an http(s) URL; default empty (none)."""
    privacy_url: str
    """The service's privacy policy, an http(s) URL; default empty (none)."""
    source: str
    """Where it came from: ``custom`` (the default), ``builtin`` or ``imported``."""
    runtime_config: dict[str, Any] | None
    """Non-secret options (JSON object); ``cwd`` comes from the stdio target."""
    credential_ref: str | None
    """The credential the connector uses, by reference."""
    settings: ConnectorSettings | None
    """Initial global settings; default ``ConnectorSettings()``. Its ``revision`` is ignored: a
    new row starts at settings revision 1."""


class ConnectorStore:
    """The connectors of the canonical store and their global settings (``Repository.connectors``).

    Usage::

        github = repo.connectors.create("github", "GitHub", HttpTarget(url="https://api.example/mcp"))
        github = repo.connectors.update_settings(github.connector_id, github.settings.revision, enabled=False)
    """

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def create(self, name: str, display_name: str, target: Any, **fields: Unpack[ConnectorFields]) -> Connector:
        """Insert a connector with ``revision`` and settings revision 1.

        Args:
            name: the stable name (``validate_connector_name``); unique case-insensitively.
            target: a ``StdioTarget``/``HttpTarget``/``SocketTarget`` or an equivalent dict.
            fields: the optional :class:`ConnectorFields` (keywords only).

        Raises:
            ConfigError: ``invalid_config`` for a bad field, or field ``name`` when the name exists.
        """
        return self.create_many([{"name": name, "display_name": display_name, "target": target, **fields}])[0]

    def create_many(
        self, items: Sequence[Mapping[str, Any]], *, before_commit: Callable[[list[Connector]], None] | None = None
    ) -> list[Connector]:
        """Insert several connectors in ONE transaction: all of them or none (an import
        commits as one batch).

        Args:
            items: keyword arguments of :meth:`create` for each connector (``name``,
                ``display_name``, ``target`` required).
            before_commit: called with the new connectors after every insert and before the
                commit; if it raises, nothing is committed (the credential import hangs its
                store write here). If the commit itself fails after it ran, the caller must undo
                whatever it did (the exception propagates).

        Raises:
            ConfigError: ``invalid_config`` for a bad field, or field ``name`` when a name exists
                or repeats within ``items``; nothing inserted.
        """
        rows = [self._new_row(**item) for item in items]
        names = [row["name"].lower() for row in rows]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise _duplicate(rows[index]["name"])
        try:
            with self._tx.write() as conn:
                for row in rows:
                    if self._name_taken(conn, row["name"]):
                        raise _duplicate(row["name"])
                    conn.execute(insert(mcp_connectors).values(row))
                connectors = [connector_from_row(row) for row in rows]
                if before_commit is not None:
                    before_commit(connectors)
        except IntegrityError as exc:  # lost a race on a unique name
            with self._tx.read() as conn:
                for row in rows:
                    if self._name_taken(conn, row["name"]):
                        raise _duplicate(row["name"]) from exc
            raise
        return connectors

    def _new_row(
        self,
        name: str,
        display_name: str,
        target: Any,
        *,
        description: str = "",
        terms_url: str = "",
        privacy_url: str = "",
        source: str = "custom",
        runtime_config: dict[str, Any] | None = None,
        credential_ref: str | None = None,
        settings: ConnectorSettings | None = None,
    ) -> dict[str, Any]:
        """The checked column values of a new connector row (no SQL)."""
        validate_connector_name(name)
        check = check_text
        values: dict[str, Any] = {
            "connector_id": "con_" + uuid.uuid4().hex,
            "name": name,
            "display_name": check("display_name", display_name),
            "description": check("description", description, allow_empty=True),
            "terms_url": validate_policy_url("terms_url", terms_url),
            "privacy_url": validate_policy_url("privacy_url", privacy_url),
            "source": check_choice("source", source, CONNECTOR_SOURCES),
            **target_columns(coerce_target(target), runtime_config),
            "credential_ref": None if credential_ref is None else check("credential_ref", credential_ref),
            **settings_columns(settings or ConnectorSettings()),
            "settings_revision": 1,
            "revision": 1,
        }
        values["created_at"] = values["updated_at"] = self._tx.clock()
        return values

    def get(self, connector_id: str) -> Connector:
        """The connector with this id. Raises ``NotFoundError`` (``not_found``)."""
        with self._tx.read() as conn:
            return connector_from_row(require_connector(conn, connector_id))

    def get_by_name(self, name: str) -> Connector:
        """The connector whose name equals ``name`` case-insensitively. Raises ``NotFoundError``."""
        with self._tx.read() as conn:
            row = conn.execute(select(mcp_connectors).where(func.lower(_C.name) == name.lower())).mappings().first()
        if row is None:
            raise NotFoundError(f"no connector named {name!r}", details={"name": name})
        return connector_from_row(row)

    def list_all(self) -> list[Connector]:
        """Every connector, ordered by name."""
        with self._tx.read() as conn:
            rows = conn.execute(select(mcp_connectors).order_by(_C.name, _C.connector_id)).mappings().all()
        return [connector_from_row(row) for row in rows]

    def stamps(self) -> dict[str, tuple[int, int]]:
        """``(revision, settings_revision)`` of every connector by id: every change of a connector
        row moves one of them, so a connector read earlier with the same pair is unchanged. One
        query of small columns, in :meth:`list_all`'s order."""
        query = select(_C.connector_id, _C.revision, _C.settings_revision).order_by(_C.name, _C.connector_id)
        with self._tx.read() as conn:
            return {row[0]: (row[1], row[2]) for row in conn.execute(query)}

    def update(
        self,
        connector_id: str,
        expected_revision: int,
        *,
        display_name: str | Unset = UNSET,
        description: str | Unset = UNSET,
        terms_url: str | Unset = UNSET,
        privacy_url: str | Unset = UNSET,
        target: Any = UNSET,
        runtime_config: dict[str, Any] | Unset = UNSET,
        credential_ref: str | Unset | None = UNSET,
    ) -> Connector:
        """Change connector fields under the ``revision`` optimistic lock.

        Only the given keywords change (``credential_ref=None`` clears it); a change bumps
        ``revision`` by one and sets ``updated_at``. With no keywords the revision is only checked.
        The current row is read to fill in whichever of target/runtime_config is unchanged; the
        ``UPDATE ... WHERE revision = :expected`` row count is what makes the write atomic.

        Raises:
            NotFoundError: ``not_found``.
            RevisionConflictError: ``revision_conflict`` with details ``{"expected", "actual"}``;
                nothing changed.
            ConfigError: ``invalid_config`` for a bad field.
        """
        changes: dict[str, Any] = {}
        if display_name is not UNSET:
            changes["display_name"] = check_text("display_name", display_name)
        if description is not UNSET:
            changes["description"] = check_text("description", description, allow_empty=True)
        if terms_url is not UNSET:
            changes["terms_url"] = validate_policy_url("terms_url", terms_url)
        if privacy_url is not UNSET:
            changes["privacy_url"] = validate_policy_url("privacy_url", privacy_url)
        if credential_ref is not UNSET:
            changes["credential_ref"] = None if credential_ref is None else check_text("credential_ref", credential_ref)
        new_target = None if target is UNSET else coerce_target(target)
        with self._tx.write() as conn:
            current = connector_from_row(require_connector(conn, connector_id))
            if new_target is not None or runtime_config is not UNSET:
                changes.update(
                    target_columns(
                        new_target or current.target,
                        current.runtime_config if runtime_config is UNSET else runtime_config,
                    )
                )
            if current.revision != expected_revision or not changes:
                _check_revision(current.name, "connector", expected_revision, current.revision)
                return current
            result = conn.execute(
                update(mcp_connectors)
                .where(_C.connector_id == connector_id, _C.revision == expected_revision)
                .values(**changes, revision=_C.revision + 1, updated_at=self._tx.clock())
            )
            if result.rowcount != 1:
                self._raise_lost(conn, connector_id, expected_revision, _C.revision, "connector")
            return connector_from_row(require_connector(conn, connector_id))

    def update_settings(
        self,
        connector_id: str,
        expected_settings_revision: int,
        *,
        enabled: bool | Unset = UNSET,
        include_tools: Any = UNSET,
        exclude_tools: Any = UNSET,
        approval_mode: str | Unset = UNSET,
    ) -> Connector:
        """Change global settings under the ``settings_revision`` lock.

        Independent of the connector ``revision``: neither update bumps the other's counter.

        Args:
            include_tools, exclude_tools: lists of glob patterns.
            approval_mode: ``ask`` | ``custom`` | ``allow_all``.

        Raises:
            NotFoundError, RevisionConflictError (``details={"expected", "actual"}``), ConfigError.
        """
        changes: dict[str, Any] = {}
        if enabled is not UNSET:
            if not isinstance(enabled, bool):
                raise ConfigError("enabled", "must be true or false")
            changes["enabled"] = 1 if enabled else 0
        if include_tools is not UNSET:
            changes["include_tools_json"] = tool_patterns("include_tools", include_tools)
        if exclude_tools is not UNSET:
            changes["exclude_tools_json"] = tool_patterns("exclude_tools", exclude_tools)
        if approval_mode is not UNSET:
            changes["approval_mode"] = check_choice("approval_mode", approval_mode, APPROVAL_MODES)
        with self._tx.write() as conn:
            # Checked before the UPDATE too, as ``update`` does: a revision no row can hold (past
            # PostgreSQL's 32-bit integer) is a conflict, not a DataError of the comparison.
            row = require_connector(conn, connector_id)
            if row["settings_revision"] != expected_settings_revision or not changes:
                _check_revision(row["name"], "settings", expected_settings_revision, row["settings_revision"])
                return connector_from_row(row)
            result = conn.execute(
                update(mcp_connectors)
                .where(_C.connector_id == connector_id, _C.settings_revision == expected_settings_revision)
                .values(**changes, settings_revision=_C.settings_revision + 1, updated_at=self._tx.clock())
            )
            if result.rowcount != 1:
                self._raise_lost(conn, connector_id, expected_settings_revision, _C.settings_revision, "settings")
            return connector_from_row(require_connector(conn, connector_id))

    def delete(self, connector_id: str) -> None:
        """Remove a connector; its grants and tool cache go by FK cascade.

        Raises:
            NotFoundError: ``not_found``.
            BuiltinConnectorError: ``builtin_connector`` for ``source == "builtin"``.
        """
        with self._tx.write() as conn:
            result = conn.execute(delete(mcp_connectors).where(_C.connector_id == connector_id, _C.source != "builtin"))
            if result.rowcount != 1:
                require_connector(conn, connector_id)  # raises NotFoundError
                raise BuiltinConnectorError(
                    "built-in connectors cannot be removed", details={"connector_id": connector_id}
                )

    @staticmethod
    def _name_taken(conn: Connection, name: str) -> bool:
        return conn.execute(select(_C.connector_id).where(func.lower(_C.name) == name.lower())).first() is not None

    def _raise_lost(self, conn: Connection, connector_id: str, expected: int, column: Any, which: RevisionKind) -> None:
        row = conn.execute(select(column, _C.name).where(_C.connector_id == connector_id)).first()
        if row is None:
            raise NotFoundError(f"no connector {connector_id!r}", details={"connector_id": connector_id})
        _check_revision(row[1], which, expected, row[0])


def _duplicate(name: str) -> ConfigError:
    return NameTakenError(name)


RevisionKind = Literal["connector", "settings"]
"""Which of a connector's two independent counters: ``revision`` or ``settings.revision``."""


def _check_revision(name: str, which: RevisionKind, expected: int, actual: int) -> None:
    if expected == actual:
        return
    if which == "settings":
        what = f"connector {name!r}: its settings are at settings revision {actual}, not {expected}"
        other = "(settings.revision; the connector's own revision is counted separately)"
    else:
        what = f"connector {name!r} is at revision {actual}, not {expected}"
        other = "(its definition's revision; settings.revision is counted separately)"
    raise RevisionConflictError(f"{what} {other}", details={"expected": expected, "actual": actual})
