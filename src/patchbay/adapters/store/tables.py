"""The canonical schema as SQLAlchemy Core tables.

This module describes the schema for queries and for comparing against the migrated database;
it never creates anything. Schema changes happen only through the Alembic migrations in
``migrations/versions`` (DESIGN.md "Where things live").

One metadata serves SQLite (the default) and PostgreSQL:

- SQLite tables are ``STRICT``, so column types are limited to ``TEXT`` and ``INTEGER``
  (booleans are ``INTEGER`` with ``CHECK (enabled IN (0, 1))``).
- Unix-millisecond timestamps are ``BIGINT`` on PostgreSQL (a 32-bit ``INTEGER`` would overflow)
  and ``INTEGER`` (64-bit) on SQLite.
- ``*_json`` columns are ``TEXT`` with a validity CHECK: ``json_valid(col)`` on SQLite,
  ``(col::jsonb IS NOT NULL)`` on PostgreSQL. PostgreSQL rejects malformed JSON while
  evaluating the cast, so there the error is ``invalid_text_representation`` (a
  ``DataError``) rather than a check violation; either way the row is refused.
- Connector names are unique case-insensitively: ``COLLATE NOCASE`` plus ``UNIQUE`` on SQLite,
  a unique index on ``lower(name)`` on PostgreSQL.
"""

from __future__ import annotations

from typing import get_args

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)

from patchbay.core.models import RESOURCE_SUBJECT, GrantKind

__all__ = [
    "APPROVAL_MODES",
    "CONNECTOR_SOURCES",
    "GRANT_DECISIONS",
    "PROBE_STATES",
    "GRANT_KINDS",
    "TRANSPORTS",
    "mcp_connectors",
    "mcp_global_tool_grants",
    "mcp_probe_outcomes",
    "mcp_project_tool_grants",
    "mcp_tool_cache",
    "metadata",
    "pending_approvals",
    "session_events",
    "session_records",
    "projects",
    "state_version",
]

CONNECTOR_SOURCES = ("builtin", "custom", "imported")
TRANSPORTS = ("stdio", "streamable_http", "sse", "socket")
APPROVAL_MODES = ("ask", "custom", "allow_all")
GRANT_DECISIONS = ("allow", "ask", "deny")
PROBE_STATES = ("ready", "error")
GRANT_KINDS: tuple[str, ...] = get_args(GrantKind)

TRANSPORT_EXCLUSIVITY = (
    "(transport = 'stdio' AND command IS NOT NULL AND endpoint_url IS NULL AND socket_path IS NULL) OR "
    "(transport IN ('streamable_http', 'sse') AND endpoint_url IS NOT NULL AND command IS NULL "
    "AND socket_path IS NULL) OR "
    "(transport = 'socket' AND socket_path IS NOT NULL AND endpoint_url IS NULL AND command IS NULL)"
)

metadata = MetaData()

#: Unix time in milliseconds: BIGINT on PostgreSQL, INTEGER (64-bit, STRICT-compatible) on SQLite.
Millis = BigInteger().with_variant(Integer(), "sqlite")
#: Connector names compare case-insensitively on SQLite through the column collation.
NameText = Text().with_variant(Text(collation="NOCASE"), "sqlite")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _grant_kind_checks(table: str) -> list[CheckConstraint]:
    """The CHECKs of a grant table's ``subject_kind``: a known kind, one subject per connector for
    resource reads, and no ``ask`` for a prompt (a person triggers a prompt: that is the approval)."""
    return [
        CheckConstraint(_in("subject_kind", GRANT_KINDS), name=f"ck_{table}_subject_kind"),
        CheckConstraint(
            f"subject_kind <> 'resource' OR tool_name = '{RESOURCE_SUBJECT}'", name=f"ck_{table}_resource_subject"
        ),
        CheckConstraint("subject_kind <> 'prompt' OR decision <> 'ask'", name=f"ck_{table}_prompt_decision"),
    ]


def json_checks(table: str, column: str, *, nullable: bool = False) -> list[CheckConstraint]:
    """Dialect-specific "this TEXT column holds valid JSON" CHECKs; exactly one is emitted per dialect."""
    sqlite_sql = f"json_valid({column})"
    pg_sql = f"({column}::jsonb IS NOT NULL)"
    if nullable:
        sqlite_sql = f"{column} IS NULL OR {sqlite_sql}"
        pg_sql = f"{column} IS NULL OR {pg_sql}"
    name = f"ck_{table}_{column}_valid"
    return [
        CheckConstraint(sqlite_sql, name=name).ddl_if(dialect="sqlite"),
        CheckConstraint(pg_sql, name=name).ddl_if(dialect="postgresql"),
    ]


mcp_connectors = Table(
    "mcp_connectors",
    metadata,
    Column("connector_id", Text, primary_key=True),
    Column("name", NameText, nullable=False),
    Column("display_name", Text, nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("terms_url", Text, nullable=False, server_default=""),
    Column("privacy_url", Text, nullable=False, server_default=""),
    Column("source", Text, nullable=False),
    Column("transport", Text, nullable=False),
    Column("endpoint_url", Text),
    Column("command", Text),
    Column("args_json", Text, nullable=False, server_default="[]"),
    Column("socket_path", Text),
    Column("runtime_config_json", Text, nullable=False, server_default="{}"),
    Column("credential_ref", Text),
    Column("enabled", Integer, nullable=False, server_default=text("0")),
    Column("include_tools_json", Text, nullable=False, server_default="[]"),
    Column("exclude_tools_json", Text, nullable=False, server_default="[]"),
    Column("approval_mode", Text, nullable=False, server_default="ask"),
    Column("settings_revision", Integer, nullable=False, server_default=text("1")),
    Column("revision", Integer, nullable=False, server_default=text("1")),
    Column("created_at", Millis, nullable=False),
    Column("updated_at", Millis, nullable=False),
    CheckConstraint(_in("source", CONNECTOR_SOURCES), name="ck_mcp_connectors_source"),
    CheckConstraint(_in("transport", TRANSPORTS), name="ck_mcp_connectors_transport"),
    CheckConstraint("enabled IN (0, 1)", name="ck_mcp_connectors_enabled"),
    CheckConstraint(_in("approval_mode", APPROVAL_MODES), name="ck_mcp_connectors_approval_mode"),
    CheckConstraint(TRANSPORT_EXCLUSIVITY, name="ck_mcp_connectors_transport_target"),
    *json_checks("mcp_connectors", "args_json"),
    *json_checks("mcp_connectors", "runtime_config_json"),
    *json_checks("mcp_connectors", "include_tools_json"),
    *json_checks("mcp_connectors", "exclude_tools_json"),
    UniqueConstraint("name", name="uq_mcp_connectors_name").ddl_if(dialect="sqlite"),
    sqlite_strict=True,
)

Index(
    "uq_mcp_connectors_name_lower",
    func.lower(mcp_connectors.c.name),
    unique=True,
).ddl_if(dialect="postgresql")

mcp_global_tool_grants = Table(
    "mcp_global_tool_grants",
    metadata,
    Column(
        "connector_id",
        Text,
        ForeignKey("mcp_connectors.connector_id", ondelete="CASCADE", name="fk_mcp_global_tool_grants_connector"),
        nullable=False,
    ),
    Column("tool_name", Text, nullable=False),
    Column("decision", Text, nullable=False),
    Column("updated_at", Millis, nullable=False),
    Column("subject_kind", Text, nullable=False, server_default="tool"),
    PrimaryKeyConstraint("connector_id", "subject_kind", "tool_name", name="pk_mcp_global_tool_grants"),
    CheckConstraint(_in("decision", GRANT_DECISIONS), name="ck_mcp_global_tool_grants_decision"),
    *_grant_kind_checks("mcp_global_tool_grants"),
    sqlite_strict=True,
)

projects = Table(
    "projects",
    metadata,
    Column("project_id", Text, primary_key=True),
    Column("path", Text, nullable=False),
    Column("created_at", Millis, nullable=False),
    UniqueConstraint("path", name="uq_projects_path"),
    sqlite_strict=True,
)

mcp_project_tool_grants = Table(
    "mcp_project_tool_grants",
    metadata,
    Column(
        "project_id",
        Text,
        ForeignKey("projects.project_id", ondelete="CASCADE", name="fk_mcp_project_tool_grants_project"),
        nullable=False,
    ),
    Column(
        "connector_id",
        Text,
        ForeignKey("mcp_connectors.connector_id", ondelete="CASCADE", name="fk_mcp_project_tool_grants_connector"),
        nullable=False,
    ),
    Column("tool_name", Text, nullable=False),
    Column("decision", Text, nullable=False),
    Column("updated_at", Millis, nullable=False),
    Column("subject_kind", Text, nullable=False, server_default="tool"),
    PrimaryKeyConstraint("project_id", "connector_id", "subject_kind", "tool_name", name="pk_mcp_project_tool_grants"),
    CheckConstraint(_in("decision", GRANT_DECISIONS), name="ck_mcp_project_tool_grants_decision"),
    *_grant_kind_checks("mcp_project_tool_grants"),
    sqlite_strict=True,
)

mcp_tool_cache = Table(
    "mcp_tool_cache",
    metadata,
    Column(
        "connector_id",
        Text,
        ForeignKey("mcp_connectors.connector_id", ondelete="CASCADE", name="fk_mcp_tool_cache_connector"),
        primary_key=True,
    ),
    Column("config_revision", Integer, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("tools_json", Text, nullable=False),
    Column("resources_json", Text, nullable=False, server_default="[]"),
    Column("server_info_json", Text),
    Column("fetched_at", Millis, nullable=False),
    Column("expires_at", Millis, nullable=False),
    Column("tool_count", Integer, nullable=False, server_default=text("0")),
    *json_checks("mcp_tool_cache", "tools_json"),
    *json_checks("mcp_tool_cache", "resources_json"),
    *json_checks("mcp_tool_cache", "server_info_json", nullable=True),
    sqlite_strict=True,
)

# Covers the connector list's per-connector cache summary, so SQLite never reads a row's catalog
# text (stored before the count, in overflow pages) to reach its tool count or its stamps.
Index(
    "ix_mcp_tool_cache_summary",
    mcp_tool_cache.c.connector_id,
    mcp_tool_cache.c.config_revision,
    mcp_tool_cache.c.fingerprint,
    mcp_tool_cache.c.tool_count,
    mcp_tool_cache.c.fetched_at,
    mcp_tool_cache.c.expires_at,
)

mcp_probe_outcomes = Table(
    "mcp_probe_outcomes",
    metadata,
    Column(
        "connector_id",
        Text,
        ForeignKey("mcp_connectors.connector_id", ondelete="CASCADE", name="fk_mcp_probe_outcomes_connector"),
        primary_key=True,
    ),
    Column("state", Text, nullable=False),
    Column("code", Text),
    Column("message", Text),
    Column("tool_count", Integer, nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("probed_at", Millis, nullable=False),
    Column("config_revision", Integer, nullable=False),
    Column("stderr_tail", Text, nullable=False, server_default=text("''")),
    Column("protocol_version", Text),
    CheckConstraint(_in("state", PROBE_STATES), name="ck_mcp_probe_outcomes_state"),
    sqlite_strict=True,
)
"""The last probe of each connector, whatever its outcome (one row per connector, replaced)."""


state_version = Table(
    "state_version",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", BigInteger().with_variant(Integer(), "sqlite"), nullable=False),
    CheckConstraint("id = 1", name="ck_state_version_one_row"),
    sqlite_strict=True,
)
"""One row (``id`` 1): a counter moved in the same transaction as every write that changes a row
of the other tables, so any process can tell cheaply that committed state changed."""


session_events = Table(
    "session_events",
    metadata,
    Column("session_id", Text, nullable=False),
    Column("seq", BigInteger().with_variant(Integer(), "sqlite"), nullable=False),
    Column("type", Text, nullable=False),
    Column("ts", Text, nullable=False),
    Column("instance", Text),
    Column("payload", Text, nullable=False),
    Column("hash", Text, nullable=False),
    PrimaryKeyConstraint("session_id", "seq", name="pk_session_events"),
    CheckConstraint("seq >= 1", name="ck_session_events_seq"),
    sqlite_strict=True,
)
"""Session event logs when the store is shared (PostgreSQL): one row per event, ``seq`` assigned
in the inserting transaction, ``hash`` chaining each event to the one before (see
:mod:`patchbay.adapters.store.session_events`). Not canonical state: the runtime appends here."""


session_records = Table(
    "session_records",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("workspace", Text),
    Column("project_id", Text),
    Column("started_at", Text, nullable=False),
    sqlite_strict=True,
)
"""What describes a session whose events are in ``session_events`` (the JSONL log's metadata
record): written once, when the session first opens its log."""


pending_approvals = Table(
    "pending_approvals",
    metadata,
    Column("approval_id", Text, primary_key=True),
    Column("session_id", Text, nullable=False),
    Column("instance", Text, nullable=False),
    Column("workspace", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("connector", Text, nullable=False),
    Column("tool", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("risk", Text, nullable=False),
    Column("arguments_digest", Text, nullable=False),
    Column("policy", Text, nullable=False),
    Column("preview_json", Text, nullable=False),
    Column("created_at", Millis, nullable=False),
    Column("expires_at", Millis, nullable=False),
    Column("decision", Text),
    Column("decided_at", Millis),
    Column("actor", Text),
    CheckConstraint(
        "decision IS NULL OR decision IN ('allow_once', 'allow_session', 'deny')",
        name="ck_pending_approvals_decision",
    ),
    CheckConstraint(
        "(decision IS NULL AND decided_at IS NULL AND actor IS NULL) OR "
        "(decision IS NOT NULL AND decided_at IS NOT NULL AND actor = 'user')",
        name="ck_pending_approvals_decided",
    ),
    CheckConstraint("expires_at > created_at", name="ck_pending_approvals_expiry"),
    *json_checks("pending_approvals", "preview_json"),
    Index("ix_pending_approvals_expires_at", "expires_at"),
    sqlite_strict=True,
)
"""Calls waiting for a person's answer, one row each (see
:mod:`patchbay.adapters.store.approvals`): the waiting instance writes it, any instance answers
it with a compare-and-set on ``decision``. ``preview_json`` is the redacted arguments, never the
arguments themselves. Not canonical state: writes here do not move the change counter."""
