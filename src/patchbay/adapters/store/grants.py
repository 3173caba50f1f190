"""Grants: global and per-project decisions, one key space per ``GrantKind``.

Grants are idempotent upserts and never touch a connector revision; a project ``allow`` never
lifts a global ``deny``, but that is the policy's rule (``patchbay.core.policy``), not the store's.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select

from patchbay.adapters.store._rows import check_choice, check_text, grant_from_row
from patchbay.adapters.store._transactions import Transactions, upsert
from patchbay.adapters.store.connectors import require_connector
from patchbay.adapters.store.projects import require_project
from patchbay.adapters.store.tables import GRANT_DECISIONS, GRANT_KINDS, mcp_global_tool_grants, mcp_project_tool_grants
from patchbay.core.errors import ConfigError
from patchbay.core.models import RESOURCE_SUBJECT, GrantKind, ToolGrant

__all__ = ["PROMPT_DECISIONS", "GrantStore"]

PROMPT_DECISIONS = ("allow", "deny")
"""A person triggers a prompt, which is its approval, so a prompt grant never asks."""


class GrantStore:
    """The global and project grants of the canonical store (``Repository.grants``).

    Usage::

        repo.grants.set_global(connector_id, "delete_repo", "deny")
        repo.grants.set_for_project(project_id, connector_id, "delete_repo", "ask")
        repo.grants.list_global(connector_id, kind="prompt")
    """

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def set_global(self, connector_id: str, tool_name: str, decision: str, *, kind: GrantKind = "tool") -> ToolGrant:
        """Upsert the global grant for one subject of ``kind`` (a tool's original name, a prompt's
        name or ``*``, or :data:`~patchbay.core.models.RESOURCE_SUBJECT` for resource reads).

        Subjects the cache does not know are stored as given. Does not change any revision.

        Raises:
            ConfigError: ``invalid_config`` (field ``decision``: allow|ask|deny, allow|deny for a
                prompt; ``tool_name``; or ``kind``).
            NotFoundError: ``not_found`` for an unknown connector.
        """
        values = self._values(connector_id, tool_name, decision, kind)
        with self._tx.write() as conn:
            require_connector(conn, connector_id)
            stmt = upsert(conn, mcp_global_tool_grants).values(values)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["connector_id", "subject_kind", "tool_name"], set_=_grant_set(stmt)
                )
            )
        return _grant(values)

    def clear_global(self, connector_id: str, tool_name: str, *, kind: GrantKind = "tool") -> bool:
        """Remove a global grant; True when one existed (idempotent, never raises for a missing one)."""
        table = mcp_global_tool_grants
        with self._tx.write() as conn:
            result = conn.execute(
                delete(table).where(
                    table.c.connector_id == connector_id,
                    table.c.subject_kind == kind,
                    table.c.tool_name == tool_name,
                )
            )
        return result.rowcount > 0

    def set_for_project(
        self, project_id: str, connector_id: str, tool_name: str, decision: str, *, kind: GrantKind = "tool"
    ) -> ToolGrant:
        """Upsert a project override in ``kind``'s key space; idempotent,
        touches no revision.

        A project ``allow`` never lifts a global ``deny``; that is the policy's rule, not the store's.

        Raises:
            ConfigError: ``invalid_config`` (``decision``, ``tool_name`` or ``kind``).
            NotFoundError: ``not_found`` for an unknown project or connector.
        """
        values = self._values(connector_id, tool_name, decision, kind)
        values["project_id"] = project_id
        with self._tx.write() as conn:
            require_project(conn, project_id)
            require_connector(conn, connector_id)
            stmt = upsert(conn, mcp_project_tool_grants).values(values)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["project_id", "connector_id", "subject_kind", "tool_name"], set_=_grant_set(stmt)
                )
            )
        return _grant(values)

    def clear_for_project(
        self, project_id: str, connector_id: str, tool_name: str, *, kind: GrantKind = "tool"
    ) -> bool:
        """Remove a project override; True when one existed."""
        t = mcp_project_tool_grants
        with self._tx.write() as conn:
            result = conn.execute(
                delete(t).where(
                    t.c.project_id == project_id,
                    t.c.connector_id == connector_id,
                    t.c.subject_kind == kind,
                    t.c.tool_name == tool_name,
                )
            )
        return result.rowcount > 0

    def list_global(self, connector_id: str | None = None, *, kind: GrantKind = "tool") -> list[ToolGrant]:
        """Global grants (``project_id`` None) of one key space (tools unless ``kind`` says
        otherwise), optionally of one connector, by connector then subject."""
        t = mcp_global_tool_grants
        query = select(t).where(t.c.subject_kind == kind).order_by(t.c.connector_id, t.c.tool_name)
        if connector_id is not None:
            query = query.where(t.c.connector_id == connector_id)
        with self._tx.read() as conn:
            return [grant_from_row(row) for row in conn.execute(query).mappings()]

    def list_for_project(
        self, project_id: str, connector_id: str | None = None, *, kind: GrantKind = "tool"
    ) -> list[ToolGrant]:
        """One project's overrides of one key space, optionally of one connector, by connector then
        subject."""
        t = mcp_project_tool_grants
        query = (
            select(t)
            .where(t.c.project_id == project_id, t.c.subject_kind == kind)
            .order_by(t.c.connector_id, t.c.tool_name)
        )
        if connector_id is not None:
            query = query.where(t.c.connector_id == connector_id)
        with self._tx.read() as conn:
            return [grant_from_row(row) for row in conn.execute(query).mappings()]

    def in_scope(self, project_id: str) -> list[ToolGrant]:
        """Every grant of every kind that applies in ``project_id``'s scope: the global ones, then
        the project's; one read transaction of two ``SELECT``s whatever the number of connectors."""
        with self._tx.read() as conn:
            rows = [*conn.execute(select(mcp_global_tool_grants)).mappings()]
            t = mcp_project_tool_grants
            rows += conn.execute(select(t).where(t.c.project_id == project_id)).mappings()
        return [grant_from_row(row) for row in rows]

    def _values(self, connector_id: str, tool_name: str, decision: str, kind: str) -> dict[str, Any]:
        kind = check_choice("kind", kind, GRANT_KINDS)
        name = check_text("tool_name", tool_name)
        if kind == "resource" and name != RESOURCE_SUBJECT:
            raise ConfigError(
                "tool_name", f"a resource-read grant covers the whole connector: its subject is {RESOURCE_SUBJECT!r}"
            )
        choices = PROMPT_DECISIONS if kind == "prompt" else GRANT_DECISIONS
        return {
            "connector_id": connector_id,
            "subject_kind": kind,
            "tool_name": name,
            "decision": check_choice("decision", decision, choices),
            "updated_at": self._tx.clock(),
        }


def _grant(values: dict[str, Any]) -> ToolGrant:
    return ToolGrant(**{k: v for k, v in values.items() if k != "subject_kind"}, kind=values["subject_kind"])


def _grant_set(stmt: Any) -> dict[str, Any]:
    return {"decision": stmt.excluded.decision, "updated_at": stmt.excluded.updated_at}
