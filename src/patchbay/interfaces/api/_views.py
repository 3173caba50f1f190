"""Domain objects → API contracts. Only what the control plane already shows: binding views
(``CredentialService.binding_views``), tool decisions (``ConnectorQueries.tools``), the cache state
(``ConnectorQueries.cached_catalog``); no secret value is on any of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

import patchbay.interfaces.api.contracts as c
from patchbay.adapters.credentials import StoredCredential
from patchbay.control.connectors import ConnectorService
from patchbay.control.decisions import ToolDecisions, probe_failed, runtime_state
from patchbay.control.options import checked_options
from patchbay.control.status import display_status
from patchbay.core.errors import ConfigError, ErrorCode
from patchbay.core.models import Connector, HttpTarget, ProbeOutcome, ProbeResult, SocketTarget, ToolCacheEntry
from patchbay.core.oauth import oauth_from_config
from patchbay.core.redaction import redact_text

__all__ = [
    "auth_state",
    "connector_auth",
    "connector_detail",
    "connector_summaries",
    "connector_summary",
    "data_egress",
    "list_states",
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


def _config_problem(connector: Connector) -> ConfigError | None:
    """Why a stored connector could not run as it is (malformed bindings, options or OAuth
    settings), if it couldn't."""
    try:
        _ = connector.bindings
        checked_options(connector.runtime_config, connector.target)
        oauth_from_config(connector.runtime_config)
    except ConfigError as exc:
        return exc
    return None


def _oauth_state(service: ConnectorService, connector: Connector) -> str | None:
    """The OAuth grant's state (``OAuthService.status``: never a token), or None without OAuth."""
    try:
        if oauth_from_config(connector.runtime_config) is None:
            return None
    except ConfigError:  # malformed OAuth settings: reported as config_state "invalid"
        return "needs_auth"
    # the OAuth service loads the MCP SDK's auth client: only for a connector that has OAuth
    # (the CLI's ``connector list --json`` shows this shape)
    from patchbay.control.oauth import OAuthService

    state: str = OAuthService(service).status(connector.name)["state"]
    return state


def _bindings(
    service: ConnectorService, connector: Connector, records: Mapping[str, StoredCredential] | None = None
) -> list[dict[str, Any]]:
    try:
        return service.credentials.binding_views(connector, records=records)
    except ConfigError:  # malformed stored bindings: reported as config_state "invalid"
        return []


def auth_state(bindings: list[dict[str, Any]], oauth: str | None = None) -> c.AuthState:
    """``needs-auth`` when a binding would not resolve now or an OAuth grant is missing or void;
    ``configured`` when there are bindings or a grant; else ``not-required``.

    Args:
        bindings: ``CredentialService.binding_views`` of the connector.
        oauth: ``OAuthService.status(...)["state"]``, None when the connector has no OAuth.
    """
    if any(b["problem"] for b in bindings) or oauth in ("not_authorized", "needs_auth"):
        return "needs-auth"
    return "configured" if bindings or oauth in ("authorized", "expired") else "not-required"


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


def summary_fields(
    connector: Connector,
    auth: c.AuthState,
    tool_count: int | None,
    outcome: ProbeOutcome | None,
) -> dict[str, Any]:
    """The fields every connector view shares.

    Args:
        connector: the stored connector.
        auth: its :func:`auth_state`.
        tool_count: the tool count of its fresh cached catalog, None without one.
        outcome: its last probe, None if never probed.
    """
    problem = _config_problem(connector)
    state = runtime_state(connector, fresh_catalog=tool_count is not None, outcome=outcome)
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
        "transport": connector.transport,
        "target": _target(connector),
        "settings": _settings(connector),
        "revision": connector.revision,
        "config_state": "invalid" if problem else "valid",
        "auth_state": auth,
        "runtime_state": state,
        "status": display_status("invalid" if problem else "valid", auth, state),
        "tool_count": tool_count or 0,
        "error": error,
        "last_probe": _probe_view(connector, outcome),
        "created_at": connector.created_at,
        "updated_at": connector.updated_at,
    }


def connector_auth(
    service: ConnectorService, connector: Connector, bindings: list[dict[str, Any]] | None = None
) -> c.AuthState:
    """The connector's :func:`auth_state` from its binding views (read when not given) and its
    OAuth grant."""
    if bindings is None:
        bindings = _bindings(service, connector)
    return auth_state(bindings, _oauth_state(service, connector))


def connector_summary(service: ConnectorService, connector: Connector) -> c.ConnectorSummary:
    """One list entry: reads canonical state and the cache, opens no connection."""
    entry, _ = service.queries.cached_catalog(connector)
    fields = summary_fields(
        connector, connector_auth(service, connector), _tool_count(entry), service.queries.last_probe(connector)
    )
    return c.ConnectorSummary(**fields)


def list_states(
    service: ConnectorService, connectors: list[Connector]
) -> list[tuple[c.AuthState, int | None, ProbeOutcome | None]]:
    """What the list entries of ``connectors`` show besides the connectors themselves, in their
    order: ``(auth state, fresh tool count or None, last probe or None)``, reading the tool counts,
    the last probes and the credential records of all of them at once (no cached catalog is
    parsed)."""
    counts = service.queries.fresh_tool_counts(connectors)
    outcomes = service.queries.last_probes()
    records: dict[str, StoredCredential] | None = None

    def bindings_of(connector: Connector) -> list[dict[str, Any]]:
        nonlocal records  # read once, when the first connector with bindings needs them
        try:
            if records is None and connector.bindings:
                records = service.credentials.store.load()
        except ConfigError:  # malformed stored bindings: reported as config_state "invalid"
            return []
        return _bindings(service, connector, records)

    return [
        (
            connector_auth(service, connector, bindings_of(connector)),
            counts.get(connector.connector_id),
            outcomes.get(connector.connector_id),
        )
        for connector in connectors
    ]


def connector_summaries(service: ConnectorService, connectors: list[Connector]) -> list[c.ConnectorSummary]:
    """The list entries of ``connectors``, as :func:`connector_summary` gives each (states read
    for all of them at once: :func:`list_states`)."""
    return [
        c.ConnectorSummary(**summary_fields(connector, *states))
        for connector, states in zip(connectors, list_states(service, connectors), strict=True)
    ]


def _tool_count(entry: ToolCacheEntry | None) -> int | None:
    return None if entry is None else len(entry.tools)


def connector_detail(service: ConnectorService, connector: Connector) -> c.ConnectorDetail:
    """A connector with its effective options, bindings and tool cache."""
    entry, state = service.queries.cached_catalog(connector)
    bindings = _bindings(service, connector)
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
    return c.ConnectorDetail(
        **summary_fields(
            connector,
            connector_auth(service, connector, bindings),
            _tool_count(entry),
            service.queries.last_probe(connector),
        ),
        runtime_options=c.RuntimeOptionsView(**{key: options[key] for key in c.RuntimeOptionsView.model_fields}),
        bindings=[c.BindingView(**b) for b in bindings],
        cache=cache,
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
