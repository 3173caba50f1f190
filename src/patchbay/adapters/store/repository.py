"""The canonical-store repository: one engine, one object per concept of the schema.

Timestamps are Unix milliseconds. Errors and their stable codes: ``ConfigError``
(``invalid_config``), ``NotFoundError`` (``not_found``), ``RevisionConflictError``
(``revision_conflict``), ``BuiltinConnectorError`` (``builtin_connector``), and from every method
``CanonicalStateUnavailable`` (``canonical_state_unavailable``, one line, no SQL) when the
database is read-only, corrupt, locked past ``busy_timeout`` or unreachable.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from patchbay.adapters.store._transactions import Transactions
from patchbay.adapters.store.approvals import ApprovalStore
from patchbay.adapters.store.connectors import ConnectorStore
from patchbay.adapters.store.grants import GrantStore
from patchbay.adapters.store.probe_outcomes import ProbeOutcomeStore
from patchbay.adapters.store.projects import ProjectStore
from patchbay.adapters.store.tool_cache import ToolCacheStore

__all__ = ["Repository"]


class Repository:
    """Canonical store of connectors, settings, grants, projects, tool caches and probe outcomes.

    Each concept is one attribute, all sharing one engine and its change counter:

    - ``connectors``: :class:`~patchbay.adapters.store.connectors.ConnectorStore`
    - ``projects``: :class:`~patchbay.adapters.store.projects.ProjectStore`
    - ``grants``: :class:`~patchbay.adapters.store.grants.GrantStore`
    - ``tool_cache``: :class:`~patchbay.adapters.store.tool_cache.ToolCacheStore`
    - ``probe_outcomes``: :class:`~patchbay.adapters.store.probe_outcomes.ProbeOutcomeStore`
    - ``approvals``: :class:`~patchbay.adapters.store.approvals.ApprovalStore` (calls waiting for
      a person, shared by the instances; not canonical state, no change counter)

    Usage::

        repo = open_store(Settings(home=tmp_path))
        github = repo.connectors.create("github", "GitHub", HttpTarget(url="https://api.example/mcp"))
        repo.grants.set_global(github.connector_id, "delete_repo", "deny")

    Args:
        engine: from :func:`~patchbay.adapters.store.db.create_engine_for`, already migrated.
        clock: returns Unix milliseconds; tests pass a fake.
    """

    def __init__(self, engine: Engine, *, clock: Callable[[], int] | None = None) -> None:
        self._tx = Transactions(engine, clock=clock)
        self.connectors = ConnectorStore(self._tx)
        self.projects = ProjectStore(self._tx)
        self.grants = GrantStore(self._tx)
        self.tool_cache = ToolCacheStore(self._tx)
        self.probe_outcomes = ProbeOutcomeStore(self._tx)
        self.approvals = ApprovalStore(self._tx)

    @property
    def engine(self) -> Engine:
        return self._tx.engine

    def state_version(self) -> int:
        """The change counter: it grows by one with every committed write that changed a row
        (from any process); a reading larger than an earlier one means something changed since.
        One small ``SELECT``.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable`` when the store cannot be read.
        """
        return self._tx.state_version()

    def close(self) -> None:
        """Dispose the engine's pooled connections."""
        self._tx.engine.dispose()
