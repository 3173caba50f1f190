"""Projects: one row per workspace directory, keyed by a hash of its canonical path."""

from __future__ import annotations

import hashlib
import os

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from patchbay.adapters.store._transactions import Transactions, upsert
from patchbay.adapters.store.tables import projects
from patchbay.core.errors import ConfigError, NotFoundError, PatchbayError
from patchbay.core.models import Project

__all__ = ["ProjectStore", "project_id_for", "require_project"]


def project_id_for(canonical_path: str) -> str:
    """``prj_`` + the first 16 hex digits of SHA-256 of the canonical path (stable across runs)."""
    return "prj_" + hashlib.sha256(canonical_path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def require_project(conn: Connection, project_id: str) -> None:
    """Raise ``NotFoundError`` (``not_found``) unless the project exists, inside ``conn``'s transaction."""
    if conn.execute(select(projects.c.project_id).where(projects.c.project_id == project_id)).first() is None:
        raise NotFoundError(f"no project {project_id!r}", details={"project_id": project_id})


def _canonical_path(path: str | os.PathLike[str]) -> str:
    """A workspace path canonicalised with ``os.path.realpath`` (symlinks resolved; the directory
    need not exist). Raises ``ConfigError`` (``invalid_config``, field ``path``) for an empty or
    NUL-containing path."""
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise ConfigError("path", "must be a non-empty path without NUL characters")
    return os.path.realpath(raw)


class ProjectStore:
    """The projects of the canonical store (``Repository.projects``).

    Usage::

        project = repo.projects.ensure("~/work/app")
        repo.projects.find("~/work/other")      # None: looking creates nothing
    """

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def ensure(self, path: str | os.PathLike[str]) -> Project:
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
        with self._tx.write() as conn:
            conn.execute(
                upsert(conn, projects)
                .values(project_id=project_id, path=canonical, created_at=self._tx.clock())
                .on_conflict_do_nothing()
            )
            row = conn.execute(select(projects).where(projects.c.project_id == project_id)).mappings().one()
        if row["path"] != canonical:  # a 64-bit hash collision; refuse rather than merge projects
            raise PatchbayError(f"project id {project_id} already belongs to {row['path']!r}")
        return Project.model_validate(dict(row))

    def find(self, path: str | os.PathLike[str]) -> Project | None:
        """The project of a workspace directory if there is one; never creates it (unlike
        :meth:`ensure`: same canonical path, same ``project_id``). Read-only callers use
        this, as every known project's workspace is re-projected on each committed change.

        Raises:
            ConfigError: ``invalid_config`` (field ``path``) for an empty or NUL-containing path.
        """
        canonical = _canonical_path(path)
        with self._tx.read() as conn:
            row = (
                conn.execute(select(projects).where(projects.c.project_id == project_id_for(canonical)))
                .mappings()
                .first()
            )
        if row is None or row["path"] != canonical:
            return None
        return Project.model_validate(dict(row))

    def get(self, project_id: str) -> Project:
        """The project with this id. Raises ``NotFoundError`` (``not_found``)."""
        with self._tx.read() as conn:
            row = conn.execute(select(projects).where(projects.c.project_id == project_id)).mappings().first()
        if row is None:
            raise NotFoundError(f"no project {project_id!r}", details={"project_id": project_id})
        return Project.model_validate(dict(row))

    def list_all(self) -> list[Project]:
        """Every project, ordered by path."""
        with self._tx.read() as conn:
            rows = conn.execute(select(projects).order_by(projects.c.path)).mappings().all()
        return [Project.model_validate(dict(row)) for row in rows]

    def delete(self, project_id: str) -> None:
        """Remove a project; its project tool grants go by FK cascade. Raises ``NotFoundError``."""
        with self._tx.write() as conn:
            if conn.execute(delete(projects).where(projects.c.project_id == project_id)).rowcount != 1:
                raise NotFoundError(f"no project {project_id!r}", details={"project_id": project_id})
