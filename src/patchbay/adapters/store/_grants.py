"""Projects, tool grants and the tool cache of the store repository.

Grants are idempotent upserts and never touch a connector revision; a project ``allow`` never
lifts a global ``deny``, but that is the policy's rule (``patchbay.core.policy``), not the store's.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from sqlalchemy import delete, select

from patchbay.adapters.store import _rows
from patchbay.adapters.store._base import StoreBase, upsert
from patchbay.adapters.store.tables import (
    GRANT_DECISIONS,
    GRANT_KINDS,
    mcp_connectors,
    mcp_global_tool_grants,
    mcp_project_tool_grants,
    mcp_tool_cache,
    projects,
)
from patchbay.core.errors import ConfigError, NotFoundError, PatchbayError
from patchbay.core.models import RESOURCE_SUBJECT, GrantKind, Project, ToolCacheEntry, ToolGrant

__all__ = ["ProjectGrantCacheMixin", "project_id_for"]

PROMPT_DECISIONS = ("allow", "deny")
"""A person triggers a prompt, which is its approval, so a prompt grant never asks."""


def project_id_for(canonical_path: str) -> str:
    """``prj_`` + the first 16 hex digits of SHA-256 of the canonical path (stable across runs)."""
    return "prj_" + hashlib.sha256(canonical_path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _canonical_path(path: str | os.PathLike[str]) -> str:
    """A workspace path canonicalised with ``os.path.realpath`` (symlinks resolved; the directory
    need not exist). Raises ``ConfigError`` (``invalid_config``, field ``path``) for an empty or
    NUL-containing path."""
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise ConfigError("path", "must be a non-empty path without NUL characters")
    return os.path.realpath(raw)


class ProjectGrantCacheMixin(StoreBase):
    """The project, grant and tool-cache methods of :class:`~patchbay.adapters.store.Repository`."""

    # -- projects -----------------------------------------------------------------------------

    def ensure_project(self, path: str | os.PathLike[str]) -> Project:
        """The project for a workspace directory, created on first use.

        The path is canonicalised with ``os.path.realpath`` (symlinks resolved; the directory
        need not exist), and the same canonical path always yields the same ``project_id``
        (:func:`project_id_for`). Safe under concurrency: ``INSERT ... ON CONFLICT DO NOTHING``
        then ``SELECT``.

        Raises:
            ConfigError: ``invalid_config`` (field ``path``) for an empty or NUL-containing path.
        """
        canonical = _canonical_path(path)
        project_id = project_id_for(canonical)
        with self._write() as conn:
            conn.execute(
                upsert(conn, projects)
                .values(project_id=project_id, path=canonical, created_at=self._clock())
                .on_conflict_do_nothing()
            )
            row = conn.execute(select(projects).where(projects.c.project_id == project_id)).mappings().one()
        if row["path"] != canonical:  # a 64-bit hash collision; refuse rather than merge projects
            raise PatchbayError(f"project id {project_id} already belongs to {row['path']!r}")
        return Project.model_validate(dict(row))

    def find_project(self, path: str | os.PathLike[str]) -> Project | None:
        """The project of a workspace directory if there is one; never creates it (unlike
        :meth:`ensure_project`: same canonical path, same ``project_id``). Read-only callers use
        this, as every known project's workspace is re-projected on each committed change.

        Raises:
            ConfigError: ``invalid_config`` (field ``path``) for an empty or NUL-containing path.
        """
        canonical = _canonical_path(path)
        with self._read() as conn:
            row = (
                conn.execute(select(projects).where(projects.c.project_id == project_id_for(canonical)))
                .mappings()
                .first()
            )
        if row is None or row["path"] != canonical:
            return None
        return Project.model_validate(dict(row))

    def get_project(self, project_id: str) -> Project:
        """The project with this id. Raises ``NotFoundError`` (``not_found``)."""
        with self._read() as conn:
            row = conn.execute(select(projects).where(projects.c.project_id == project_id)).mappings().first()
        if row is None:
            raise NotFoundError(f"no project {project_id!r}", details={"project_id": project_id})
        return Project.model_validate(dict(row))

    def list_projects(self) -> list[Project]:
        """Every project, ordered by path."""
        with self._read() as conn:
            rows = conn.execute(select(projects).order_by(projects.c.path)).mappings().all()
        return [Project.model_validate(dict(row)) for row in rows]

    def delete_project(self, project_id: str) -> None:
        """Remove a project; its project tool grants go by FK cascade. Raises ``NotFoundError``."""
        with self._write() as conn:
            if conn.execute(delete(projects).where(projects.c.project_id == project_id)).rowcount != 1:
                raise NotFoundError(f"no project {project_id!r}", details={"project_id": project_id})

    # -- grants, one key space per GrantKind -------------------------------

    def set_global_grant(
        self, connector_id: str, tool_name: str, decision: str, *, kind: GrantKind = "tool"
    ) -> ToolGrant:
        """Upsert the global grant for one subject of ``kind`` (a tool's original name, a prompt's
        name or ``*``, or :data:`~patchbay.core.models.RESOURCE_SUBJECT` for resource reads).

        Subjects the cache does not know are stored as given. Does not change any revision.

        Raises:
            ConfigError: ``invalid_config`` (field ``decision``: allow|ask|deny, allow|deny for a
                prompt; ``tool_name``; or ``kind``).
            NotFoundError: ``not_found`` for an unknown connector.
        """
        values = self._grant_values(connector_id, tool_name, decision, kind)
        with self._write() as conn:
            self._connector_row(conn, connector_id)
            stmt = upsert(conn, mcp_global_tool_grants).values(values)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["connector_id", "subject_kind", "tool_name"], set_=_grant_set(stmt)
                )
            )
        return _grant(values)

    def clear_global_grant(self, connector_id: str, tool_name: str, *, kind: GrantKind = "tool") -> bool:
        """Remove a global grant; True when one existed (idempotent, never raises for a missing one)."""
        table = mcp_global_tool_grants
        with self._write() as conn:
            result = conn.execute(
                delete(table).where(
                    table.c.connector_id == connector_id,
                    table.c.subject_kind == kind,
                    table.c.tool_name == tool_name,
                )
            )
        return result.rowcount > 0

    def set_project_grant(
        self, project_id: str, connector_id: str, tool_name: str, decision: str, *, kind: GrantKind = "tool"
    ) -> ToolGrant:
        """Upsert a project override in ``kind``'s key space; idempotent, touches no revision.

        A project ``allow`` never lifts a global ``deny``; that is the policy's rule, not the store's.

        Raises:
            ConfigError: ``invalid_config`` (``decision``, ``tool_name`` or ``kind``).
            NotFoundError: ``not_found`` for an unknown project or connector.
        """
        values = self._grant_values(connector_id, tool_name, decision, kind)
        values["project_id"] = project_id
        with self._write() as conn:
            self._require_project(conn, project_id)
            self._connector_row(conn, connector_id)
            stmt = upsert(conn, mcp_project_tool_grants).values(values)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["project_id", "connector_id", "subject_kind", "tool_name"], set_=_grant_set(stmt)
                )
            )
        return _grant(values)

    def clear_project_grant(
        self, project_id: str, connector_id: str, tool_name: str, *, kind: GrantKind = "tool"
    ) -> bool:
        """Remove a project override; True when one existed."""
        t = mcp_project_tool_grants
        with self._write() as conn:
            result = conn.execute(
                delete(t).where(
                    t.c.project_id == project_id,
                    t.c.connector_id == connector_id,
                    t.c.subject_kind == kind,
                    t.c.tool_name == tool_name,
                )
            )
        return result.rowcount > 0

    def list_global_grants(self, connector_id: str | None = None, *, kind: GrantKind = "tool") -> list[ToolGrant]:
        """Global grants (``project_id`` None) of one key space (tools unless ``kind`` says
        otherwise), optionally of one connector, by connector then subject."""
        t = mcp_global_tool_grants
        query = select(t).where(t.c.subject_kind == kind).order_by(t.c.connector_id, t.c.tool_name)
        if connector_id is not None:
            query = query.where(t.c.connector_id == connector_id)
        with self._read() as conn:
            return [_rows.grant_from_row(row) for row in conn.execute(query).mappings()]

    def list_project_grants(
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
        with self._read() as conn:
            return [_rows.grant_from_row(row) for row in conn.execute(query).mappings()]

    # -- tool cache -----------------------------------------------------------

    def replace_tool_cache(self, entry: ToolCacheEntry) -> ToolCacheEntry:
        """Store ``entry`` as the connector's whole cached catalog, replacing any previous one.

        Raises:
            ConfigError: ``invalid_config`` when ``entry`` is not a ``ToolCacheEntry``.
            NotFoundError: ``not_found`` for an unknown connector.
        """
        if not isinstance(entry, ToolCacheEntry):
            raise ConfigError("entry", "must be a ToolCacheEntry")
        values = _rows.cache_columns(entry)
        with self._write() as conn:
            self._connector_row(conn, entry.connector_id)
            stmt = upsert(conn, mcp_tool_cache).values(values)
            replace = {k: stmt.excluded[k] for k in values if k != "connector_id"}
            conn.execute(stmt.on_conflict_do_update(index_elements=["connector_id"], set_=replace))
        return entry

    def get_tool_cache(self, connector_id: str) -> ToolCacheEntry | None:
        """The cached catalog, or None when there is none (fingerprint checks are the caller's)."""
        with self._read() as conn:
            row = (
                conn.execute(select(mcp_tool_cache).where(mcp_tool_cache.c.connector_id == connector_id))
                .mappings()
                .first()
            )
        return None if row is None else _rows.tool_cache_from_row(row)

    def tool_cache_stamps(self) -> dict[str, tuple[int, str, int, int]]:
        """What identifies each cached catalog without reading it, by connector id:
        ``(config_revision, fingerprint, fetched_at, expires_at)``; a stamp that differs from an
        earlier reading means the catalog was replaced since. One ``SELECT`` of small columns."""
        t = mcp_tool_cache
        query = select(t.c.connector_id, t.c.config_revision, t.c.fingerprint, t.c.fetched_at, t.c.expires_at)
        with self._read() as conn:
            return {row[0]: (row[1], row[2], row[3], row[4]) for row in conn.execute(query)}

    def connector_stamps(self) -> dict[str, tuple[int, int]]:
        """``(revision, settings_revision)`` of every connector by id: every change of a connector
        row moves one of them, so a connector read earlier with the same pair is unchanged. One
        ``SELECT`` of small columns."""
        t = mcp_connectors
        query = select(t.c.connector_id, t.c.revision, t.c.settings_revision)
        with self._read() as conn:
            return {row[0]: (row[1], row[2]) for row in conn.execute(query)}

    def _grant_values(self, connector_id: str, tool_name: str, decision: str, kind: str) -> dict[str, Any]:
        kind = _rows.check_choice("kind", kind, GRANT_KINDS)
        name = _rows.check_text("tool_name", tool_name)
        if kind == "resource" and name != RESOURCE_SUBJECT:
            raise ConfigError(
                "tool_name", f"a resource-read grant covers the whole connector: its subject is {RESOURCE_SUBJECT!r}"
            )
        choices = PROMPT_DECISIONS if kind == "prompt" else GRANT_DECISIONS
        return {
            "connector_id": connector_id,
            "subject_kind": kind,
            "tool_name": name,
            "decision": _rows.check_choice("decision", decision, choices),
            "updated_at": self._clock(),
        }


def _grant(values: dict[str, Any]) -> ToolGrant:
    return ToolGrant(**{k: v for k, v in values.items() if k != "subject_kind"}, kind=values["subject_kind"])


def _grant_set(stmt: Any) -> dict[str, Any]:
    return {"decision": stmt.excluded.decision, "updated_at": stmt.excluded.updated_at}
