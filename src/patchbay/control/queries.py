"""The read side of the control plane: connectors, projects, cached catalogs, effective decisions.

:class:`ConnectorQueries` resolves workspaces to stable projects, tells whether a cached tool
catalog still matches its connector (fingerprint and revision), computes the
effective decision of every tool (DESIGN.md "Permissions") and builds the
:class:`~patchbay.core.models.RuntimeConfig` a workspace runtime loads. None of it commits a
mutation (:class:`~patchbay.control.connectors.ConnectorService` does); :meth:`ConnectorQueries.project`
only registers a workspace as a project on first use.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from patchbay.adapters.store import Repository
from patchbay.control.decisions import ResourceReadDecision, ToolDecision, ToolDecisions, ToolNameCheck
from patchbay.core.credentials import BINDINGS_KEY
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.fingerprint import config_fingerprint
from patchbay.core.models import (
    Connector,
    ConnectorTarget,
    GrantDecision,
    ProbeOutcome,
    Project,
    RuntimeConfig,
    RuntimeServer,
    ToolCacheEntry,
    ToolGrant,
    ToolSummary,
)
from patchbay.core.names import canonical_tool_name, is_connector_name, tool_name_problem
from patchbay.core.policy import decide_for, decide_resource_read, risk_reason

__all__ = ["ConnectorQueries", "ScopeGrants", "catalog_fingerprint", "real_dir", "runtime_server"]


ScopeGrants = tuple[tuple[str, str, str, GrantDecision], ...]
"""One connector's grants in a project's scope, sorted: ``(scope, kind, subject, decision)`` with
scope ``global`` or ``project`` and kind ``tool``, ``resource`` or ``prompt``."""


def catalog_fingerprint(connector: Connector) -> str:
    """The config fingerprint a cached catalog of ``connector`` must carry to be fresh: its target
    only; names, options and credential bindings are no part of it."""
    return _target_fingerprint(connector.target)


@lru_cache(maxsize=4096)
def _target_fingerprint(target: ConnectorTarget) -> str:
    # targets are frozen models hashed and compared by value: a list of 1,000 connectors checks
    # every catalog's freshness without hashing 1,000 canonical JSON documents each time
    return config_fingerprint(target, auth_type="none")


def real_dir(workspace: Path) -> Path:
    """A workspace directory with symlinks resolved.

    Raises:
        ConfigError: ``invalid_config`` (field ``project``) for a missing path, a file, a symlink
            loop, an over-long or non-UTF-8 path.
    """
    text = str(workspace)
    try:
        text.encode("utf-8")
        real = workspace.resolve(strict=True)
        is_dir = real.is_dir()
    except UnicodeEncodeError:
        raise ConfigError("project", "the path is not valid UTF-8") from None
    except (OSError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError("project", f"{text[:200]!r} cannot be used as a workspace: {reason}") from None
    if not is_dir:
        raise ConfigError("project", f"{text[:200]!r} is not a directory")
    return real


class ConnectorQueries:
    """Reads canonical state for the connector service and the interfaces.

    Usage::

        queries = ConnectorQueries(repository)
        connector = queries.get("git")
        decisions = queries.tools("git", project=Path("~/work/repo").expanduser())
        config = queries.runtime_config(queries.project(workspace))

    Args:
        repository: the canonical store.
    """

    def __init__(self, repository: Repository):
        self.repository = repository

    # -- connectors -------------------------------------------------------------------------

    def get(self, name: str) -> Connector:
        """The connector called exactly ``name``.

        Raises:
            NotFoundError: ``not_found`` (also for strings that are no connector name at all).
        """
        if not is_connector_name(name):
            raise NotFoundError(f"no connector named {name!r}", details={"name": name})
        return self.repository.connectors.get_by_name(name)

    def list_connectors(self) -> list[Connector]:
        """Every connector, ordered by name."""
        return self.repository.connectors.list_all()

    # -- projects ---------------------------------------------------------------------------

    def project(self, workspace: Path) -> Project:
        """The stable project of a workspace directory (symlinks resolved).

        Raises:
            ConfigError: ``invalid_config`` (field ``project``) when the directory does not exist.
        """
        return self.repository.projects.ensure(str(real_dir(workspace)))

    def projects(self) -> list[Project]:
        """Every known project (a workspace that has settings of its own or had a session),
        ordered by path."""
        return sorted(self.repository.projects.list_all(), key=lambda project: project.path)

    def find_project(self, workspace: Path) -> Project | None:
        """The project of a workspace directory if it already has one; never creates it.

        Read-only callers use this rather than :meth:`project`: every known project's workspace gets
        its snapshot (``<workspace>/.patchbay/``) written on each committed change, so merely
        looking at a directory must not make it a project.

        Raises:
            ConfigError: ``invalid_config`` (field ``project``) when the directory does not exist.
        """
        return self.repository.projects.find(str(real_dir(workspace)))

    # -- cache ------------------------------------------------------------------------------

    def fingerprint(self, connector: Connector) -> str:
        """:func:`catalog_fingerprint` of ``connector``."""
        return catalog_fingerprint(connector)

    def cached_catalog(self, connector: Connector) -> tuple[ToolCacheEntry | None, str]:
        """The cache entry if it still matches the connector's fingerprint and revision.

        Returns ``(entry, state)`` with state ``fresh``, ``stale`` or ``missing``; a stale entry is
        returned as None: a changed fingerprint invalidates the catalog.
        """
        entry = self.repository.tool_cache.get(connector.connector_id)
        if entry is None:
            return None, "missing"
        if entry.fingerprint != catalog_fingerprint(connector) or entry.config_revision != connector.revision:
            return None, "stale"
        return entry, "fresh"

    def check_tool_name(self, connector: Connector, tool: str) -> ToolNameCheck:
        """Whether ``tool`` (a server's own tool name) is in ``connector``'s fresh cached catalog,
        with the closest names when it is not (:mod:`difflib`; a name differing only in case comes
        first). Reads the cache only."""
        entry, cache = self.cached_catalog(connector)
        if entry is None:
            return ToolNameCheck("unchecked", cache)
        names = [t.name for t in entry.tools]
        if tool in names:
            return ToolNameCheck("known", cache)
        same_case = [n for n in names if n.casefold() == tool.casefold()]
        close = difflib.get_close_matches(tool, names, n=3, cutoff=0.6)
        suggestions = list(dict.fromkeys([*same_case, *close]))[:3]
        return ToolNameCheck("unknown", cache, tuple(suggestions))

    def fresh_tool_counts(self, connectors: Iterable[Connector]) -> dict[str, int]:
        """How many tools each of ``connectors`` has cached, by connector id, for those whose
        cached catalog is fresh (as :meth:`cached_catalog` decides); one query that parses no
        catalog, for lists."""
        summaries = self.repository.tool_cache.summaries()
        counts: dict[str, int] = {}
        for connector in connectors:
            summary = summaries.get(connector.connector_id)
            if (
                summary is not None
                and summary.config_revision == connector.revision
                and summary.fingerprint == self.fingerprint(connector)
            ):
                counts[connector.connector_id] = summary.tool_count
        return counts

    def last_probes(self) -> dict[str, ProbeOutcome]:
        """Every connector's last probe outcome by connector id (one query, for lists)."""
        return self.repository.probe_outcomes.by_connector()

    def last_probe(self, connector: Connector) -> ProbeOutcome | None:
        """The outcome of the connector's last probe (ready or error), or None if never probed."""
        return self.repository.probe_outcomes.get(connector.connector_id)

    # -- effective decisions ----------------------------------------------------------------

    def tools(self, name: str, *, project: Path | Project | None = None) -> ToolDecisions:
        """Every cached tool of ``name`` with its effective decision (global, or in ``project``:
        a workspace directory, made a project if it is none yet, or a :class:`Project`)."""
        connector = self.get(name)
        prj = project if isinstance(project, Project) or project is None else self.project(project)
        entry, state = self.cached_catalog(connector)
        global_grants = {g.tool_name: g.decision for g in self.repository.grants.list_global(connector.connector_id)}
        project_grants = (
            {
                g.tool_name: g.decision
                for g in self.repository.grants.list_for_project(prj.project_id, connector.connector_id)
            }
            if prj
            else {}
        )
        tools = list(entry.tools) if entry else []
        known = {t.name for t in tools}
        views = [self._view(connector, tool, global_grants, project_grants) for tool in tools]
        unmatched = [
            ToolGrant(connector_id=connector.connector_id, tool_name=t, decision=d)
            for t, d in sorted(global_grants.items())
            if t not in known
        ] + [
            ToolGrant(
                connector_id=connector.connector_id, tool_name=t, decision=d, project_id=prj.project_id if prj else None
            )
            for t, d in sorted(project_grants.items())
            if t not in known
        ]
        global_reads = self._resource_grant(connector, None)
        project_reads = self._resource_grant(connector, prj) if prj else None
        reads = decide_resource_read(connector.settings, global_grant=global_reads, project_grant=project_reads)
        prompt_grants = self.repository.grants.list_global(connector.connector_id, kind="prompt")
        if prj:
            prompt_grants += self.repository.grants.list_for_project(
                prj.project_id, connector.connector_id, kind="prompt"
            )
        return ToolDecisions(
            connector=connector,
            project=prj,
            tools=views,
            cache=state,
            unmatched_grants=unmatched,
            resource_reads=ResourceReadDecision(reads.decision, reads.source, global_reads, project_reads),
            prompt_grants=prompt_grants,
        )

    @staticmethod
    def _view(
        connector: Connector,
        tool: ToolSummary,
        global_grants: dict[str, GrantDecision],
        project_grants: dict[str, GrantDecision],
    ) -> ToolDecision:
        d = decide_for(
            connector.settings,
            tool.name,
            annotations=tool.annotations,
            global_grants=global_grants,
            project_grants=project_grants,
        )
        return ToolDecision(
            name=tool.name,
            canonical_name=canonical_tool_name(connector.name, tool.name),
            description=tool.description,
            visible=d.visible,
            decision=d.decision,
            source=d.source,
            risk=d.risk,
            global_grant=global_grants.get(tool.name),
            project_grant=project_grants.get(tool.name),
            input_schema=tool.input_schema,
            name_flag=tool_name_problem(tool.name),
            risk_reason=risk_reason(tool.annotations),
        )

    def _resource_grant(self, connector: Connector, project: Project | None) -> GrantDecision | None:
        """The connector's resource-read grant, global (``project`` None) or the project's."""
        if project is None:
            grants = self.repository.grants.list_global(connector.connector_id, kind="resource")
        else:
            grants = self.repository.grants.list_for_project(
                project.project_id, connector.connector_id, kind="resource"
            )
        return grants[0].decision if grants else None

    def scope_grants(self, project: Project) -> dict[str, ScopeGrants]:
        """Every grant that applies in ``project``'s scope (global ones and the project's), by
        connector id; a connector without grants has no entry. Two ``SELECT``s whatever the number
        of connectors."""
        found: dict[str, list[tuple[str, str, str, GrantDecision]]] = {}
        for g in self.repository.grants.in_scope(project.project_id):
            scope = "global" if g.project_id is None else "project"
            found.setdefault(g.connector_id, []).append((scope, g.kind, g.tool_name, g.decision))
        return {connector_id: tuple(sorted(items)) for connector_id, items in found.items()}

    def runtime_config(self, workspace: Path | Project) -> RuntimeConfig:
        """What a runtime for ``workspace`` may load: enabled connectors only, with their grants.

        The input of the projected snapshot (:mod:`patchbay.control.projection`), raw grants
        included; no secrets: only credential bindings (references), which the runtime resolves when
        it starts a connector. ``workspace``: a directory, or its :class:`Project`.
        """
        prj = workspace if isinstance(workspace, Project) else self.project(workspace)
        grants = self.scope_grants(prj)
        servers = []
        for connector in self.list_connectors():
            if not connector.settings.enabled:
                continue
            entry, _ = self.cached_catalog(connector)
            tools = entry.tools if entry else ()
            servers.append(runtime_server(connector, grants.get(connector.connector_id, ()), tools))
        return RuntimeConfig(project_id=prj.project_id, workspace=prj.path, servers=tuple(servers))


def runtime_server(connector: Connector, grants: ScopeGrants, tools: tuple[ToolSummary, ...]) -> RuntimeServer:
    """One connector as a runtime of a project loads it (:meth:`ConnectorQueries.runtime_config`).

    Args:
        connector: the connector as stored.
        grants: its grants in the project's scope (:meth:`ConnectorQueries.scope_grants`).
        tools: its fresh cached catalog (empty when there is none).
    """
    by: dict[tuple[str, str], dict[str, GrantDecision]] = {}
    for scope, kind, subject, decision in grants:
        by.setdefault((scope, kind), {})[subject] = decision
    return RuntimeServer(
        connector_id=connector.connector_id,
        name=connector.name,
        target=connector.target,
        revision=connector.revision,
        settings=connector.settings,
        global_grants=by.get(("global", "tool"), {}),
        project_grants=by.get(("project", "tool"), {}),
        tools=tools,
        runtime_config={k: v for k, v in connector.runtime_config.items() if k != BINDINGS_KEY},
        bindings=connector.bindings,
        global_resource_grant=next(iter(by.get(("global", "resource"), {}).values()), None),
        project_resource_grant=next(iter(by.get(("project", "resource"), {}).values()), None),
        global_prompt_grants=by.get(("global", "prompt"), {}),
        project_prompt_grants=by.get(("project", "prompt"), {}),
    )
