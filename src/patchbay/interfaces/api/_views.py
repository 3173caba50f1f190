"""Domain objects → API contracts. Only what the control plane already shows: binding views
(``CredentialService.binding_views``), tool decisions (``ConnectorQueries.tools``), the cache state
(``ConnectorQueries.cached_catalog``); no secret value is on any of them."""

from __future__ import annotations

from typing import Any

import pydantic

import patchbay.interfaces.api.contracts as c
from patchbay.control.connectors import ConnectorService
from patchbay.control.decisions import ToolDecisions, probe_failed, runtime_state
from patchbay.control.live_state import live_display_status, live_runtime_state
from patchbay.control.states import auth_state, binding_views, config_problem, connector_auth, list_states, oauth_state
from patchbay.core.builtins import builtin_spec
from patchbay.core.errors import ErrorCode
from patchbay.core.live_status import LiveStatus
from patchbay.core.models import Connector, HttpTarget, ProbeOutcome, ProbeResult, SocketTarget, ToolCacheEntry
from patchbay.core.redaction import redact_text

__all__ = [
    "connector_detail",
    "connector_summaries",
    "connector_summary",
    "data_egress",
    "live_view",
    "probe_report",
    "summary_fields",
    "tool_list",
]


def _target(connector: Connector) -> dict[str, Any]:
    return connector.target.model_dump(mode="json")


def _settings(connector: Connector) -> c.SettingsView:
    s = connector.settings
    return c.SettingsView(
        enabled=s.enabled,
        include_tools=list(s.include_tools),
        exclude_tools=list(s.exclude_tools),
        approval_mode=s.approval_mode,
        revision=s.revision,
    )


def data_egress(connector: Connector) -> str:
    """Where a connector's traffic goes, as the old catalog showed it."""
    target = connector.target
    if isinstance(target, HttpTarget):
        return "remote: audited by the egress guard"
    if isinstance(target, SocketTarget):
        return "local socket: runtime call audit unavailable"
    return "local command: runtime call audit unavailable"


def _probe_view(connector: Connector, outcome: ProbeOutcome | None) -> c.ProbeOutcomeView | None:
    if outcome is None:
        return None
    return c.ProbeOutcomeView(
        state=outcome.state,
        code=outcome.code,
        message=redact_text(outcome.message) if outcome.message is not None else None,
        tool_count=outcome.tool_count,
        duration_ms=outcome.duration_ms,
        probed_at=outcome.probed_at,
        config_revision=outcome.config_revision,
        current=outcome.config_revision == connector.revision,
    )


def live_view(live: LiveStatus | None) -> c.LiveRuntimeView | None:
    """The ``runtime`` object of a connector view from its live status (None: none reported)."""
    if live is None:
        return None
    return c.LiveRuntimeView(
        state=live.state,
        sessions=live.sessions,
        tool_count=live.tool_count,
        resource_count=live.resource_count,
        failure_age=None if live.failure_age is None else int(live.failure_age),
        restarts=live.restarts,
        in_flight=live.in_flight,
        updated_at=int(live.updated_at * 1000),
    )


def summary_fields(
    connector: Connector,
    auth: c.AuthState,
    tool_count: int | None,
    outcome: ProbeOutcome | None,
    live: LiveStatus | None = None,
) -> dict[str, Any]:
    """The fields every connector view shares.

    Args:
        connector: the stored connector.
        auth: its :func:`patchbay.control.states.auth_state`.
        tool_count: the tool count of its fresh cached catalog, None without one.
        outcome: its last probe, None if never probed.
        live: its live status from the hosted runtimes, None when none reported it
            (``runtime_state`` and ``status`` then come from the cache alone).
    """
    problem = config_problem(connector)
    cached = runtime_state(connector, fresh_catalog=tool_count is not None, outcome=outcome)
    state = live_runtime_state(cached, live)
    error = None
    if problem is not None:
        error = c.ErrorBody(
            code=ErrorCode.VALIDATION_ERROR,
            message=problem.message,
            details={**problem.details, "cause": "invalid_config"},
        )
    elif outcome is not None and probe_failed(connector, outcome):
        error = c.ErrorBody(
            code=outcome.code or ErrorCode.UNKNOWN,
            message=redact_text(outcome.message or "the last probe failed"),
            details={"cause": "probe", "probed_at": outcome.probed_at},
        )
    return {
        "connector_id": connector.connector_id,
        "name": connector.name,
        "display_name": connector.display_name,
        "description": connector.description,
        "terms_url": connector.terms_url,
        "privacy_url": connector.privacy_url,
        "source": connector.source,
        "data_sources": _data_sources(connector),
        "transport": connector.transport,
        "target": _target(connector),
        "settings": _settings(connector),
        "revision": connector.revision,
        "config_state": "invalid" if problem else "valid",
        "auth_state": auth,
        "runtime_state": state,
        "status": live_display_status("invalid" if problem else "valid", auth, state, live),
        "tool_count": tool_count or 0,
        "error": error,
        "last_probe": _probe_view(connector, outcome),
        "runtime": live_view(live),
        "created_at": connector.created_at,
        "updated_at": connector.updated_at,
    }


def connector_summary(service: ConnectorService, connector: Connector) -> c.ConnectorSummary:
    """One list entry: reads canonical state and the cache, opens no connection."""
    entry, _ = service.queries.cached_catalog(connector)
    fields = summary_fields(
        connector, connector_auth(service, connector), _tool_count(entry), service.queries.last_probe(connector)
    )
    return c.ConnectorSummary(**fields)


def connector_summaries(service: ConnectorService, connectors: list[Connector]) -> list[c.ConnectorSummary]:
    """The list entries of ``connectors``, as :func:`connector_summary` gives each (states read
    for all of them at once: :func:`list_states`)."""
    return [
        c.ConnectorSummary(**summary_fields(connector, *states))
        for connector, states in zip(connectors, list_states(service, connectors), strict=True)
    ]


def _data_sources(connector: Connector) -> list[c.DataSourceView]:
    if connector.source != "builtin":
        return []
    spec = builtin_spec(connector.name)
    if spec is None:
        return []
    return [
        c.DataSourceView(
            name=source.name,
            url=source.url,
            terms_url=source.terms_url,
            licence=source.licence,
            licence_url=source.licence_url,
        )
        for source in spec.data_sources
    ]


def _tool_count(entry: ToolCacheEntry | None) -> int | None:
    return None if entry is None else len(entry.tools)


def connector_detail(
    service: ConnectorService, connector: Connector, live: LiveStatus | None = None
) -> c.ConnectorDetail:
    """A connector with its effective options, bindings, tool cache, OAuth state and what its
    last probe kept (the redacted stderr tail, the protocol version); ``live``: its live status
    (see :func:`summary_fields`)."""
    entry, state = service.queries.cached_catalog(connector)
    bindings = binding_views(service, connector)
    try:
        options = service.effective_runtime_options(connector).model_dump(mode="json")
    except pydantic.ValidationError:  # stored options that no longer parse (config_state "invalid")
        options = service.effective_runtime_options(connector.model_copy(update={"runtime_config": {}})).model_dump(
            mode="json"
        )
    cache = c.CacheView(
        state=state,  # type: ignore[arg-type]
        fetched_at=entry.fetched_at if entry else None,
        expires_at=entry.expires_at if entry else None,
        tools=[
            c.ToolCacheView(name=t.name, title=t.title, description=t.description, annotations=t.annotations)
            for t in (entry.tools if entry else ())
        ],
        resources=[
            c.ResourceView(uri=r.uri, name=r.name, mime_type=r.mime_type, description=r.description)
            for r in (entry.resources if entry else ())
        ],
        server_info=entry.server_info if entry else None,
    )
    outcome = service.queries.last_probe(connector)
    oauth = oauth_state(service, connector)
    return c.ConnectorDetail(
        **summary_fields(connector, auth_state(bindings, oauth), _tool_count(entry), outcome, live),
        runtime_options=c.RuntimeOptionsView(**{key: options[key] for key in c.RuntimeOptionsView.model_fields}),
        bindings=[c.BindingView(**b) for b in bindings],
        cache=cache,
        oauth_state=oauth,  # type: ignore[arg-type]
        # stored redacted by the probe; redacted again here since the page shows it as it is
        stderr_tail=redact_text(outcome.stderr_tail) if outcome is not None else "",
        protocol_version=outcome.protocol_version if outcome is not None else None,
    )


def probe_report(result: ProbeResult, runtime_reload: c.RuntimeReload) -> c.ProbeReport:
    """The probe result as the CLI's ``probe --json`` shows it (tool names, not whole schemas),
    with how the open sessions took it."""
    data = result.model_dump(mode="json", exclude={"tools", "resources"})
    return c.ProbeReport(**data, tools=[t.name for t in result.tools], runtime_reload=runtime_reload)


def tool_list(view: ToolDecisions) -> c.ToolList:
    """``ConnectorQueries.tools`` as the API shows it (the CLI's ``tools --json`` shape)."""
    return c.ToolList(
        connector=view.connector.name,
        project=c.ProjectView(project_id=view.project.project_id, path=view.project.path) if view.project else None,
        cache=view.cache,  # type: ignore[arg-type]
        tools=[c.ToolDecisionView(**t.__dict__) for t in view.tools],
        unmatched_grants=[
            c.ToolGrantView(
                connector_id=g.connector_id, tool_name=g.tool_name, decision=g.decision, project_id=g.project_id
            )
            for g in view.unmatched_grants
        ],
        resource_reads=c.ResourceReadsDecisionView(**vars(view.resource_reads)),
        prompt_grants=[
            c.ToolGrantView(
                connector_id=g.connector_id, tool_name=g.tool_name, decision=g.decision, project_id=g.project_id
            )
            for g in view.prompt_grants
        ],
    )
