"""Contracts of the connector, settings, probe, tool and grant routes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, SecretStr

from patchbay.control.status import ConnectorStatus
from patchbay.core.models import ApprovalMode, ConnectorSource, GrantDecision, Lifecycle, RuntimeState, TransportKind
from patchbay.core.policy import DecisionSource, Risk
from patchbay.interfaces.api.contracts._base import ErrorBody, RuntimeReload, _Request, _Response

__all__ = [
    "AuthState",
    "BindingRequest",
    "BindingView",
    "CacheState",
    "CacheView",
    "ConfigState",
    "ConnectorChanged",
    "ConnectorCreate",
    "ConnectorDeleted",
    "ConnectorDetail",
    "ConnectorList",
    "ConnectorSettingsUpdate",
    "ConnectorSummary",
    "ConnectorUpdate",
    "Delivery",
    "DisconnectRequest",
    "DisconnectResult",
    "HttpAutoTargetBody",
    "HttpTargetBody",
    "HttpTargetView",
    "LimitsChange",
    "LiveRuntimeView",
    "LiveStatusEvent",
    "OAuthLogout",
    "OAuthState",
    "ProbeOutcomeView",
    "ProbeReport",
    "ProjectList",
    "ProjectView",
    "ResourceView",
    "RestartChange",
    "RuntimeOptionsChange",
    "RuntimeOptionsView",
    "Scope",
    "SettingsView",
    "SocketTargetBody",
    "SocketTargetView",
    "StdioTargetBody",
    "StdioTargetView",
    "TargetBody",
    "TargetView",
    "TransportDetectionView",
    "ToolCacheView",
    "ToolDecisionView",
    "ToolGrantCleared",
    "ToolGrantSet",
    "ToolGrantUpdate",
    "GrantUpdate",
    "ToolGrantView",
    "ToolList",
]

ConfigState = Literal["valid", "invalid"]
AuthState = Literal["not-required", "configured", "needs-auth"]
CacheState = Literal["fresh", "stale", "missing"]
OAuthState = Literal["authorized", "expired", "not_authorized", "needs_auth"]
Delivery = Literal["env", "header", "bearer"]
Scope = Literal["global", "project"]

_Text = Annotated[str, Field(max_length=4096)]
_Pattern = Annotated[str, Field(min_length=1, max_length=512)]


# -- targets ----------------------------------------------------------------------------------


class StdioTargetBody(_Request):
    """A local command, started without a shell."""

    transport: Literal["stdio"]
    command: Annotated[str, Field(min_length=1, max_length=4096)]
    """The executable: a name looked up on PATH, or a path; never starts with ``-``."""
    args: Annotated[list[_Text], Field(max_length=256)] = Field(default_factory=list)
    """Arguments, passed as a list (no word splitting, no expansion)."""
    cwd: _Text = ""
    """Working directory relative to the workspace root (or absolute inside it); empty: the root."""


class HttpTargetBody(_Request):
    """A remote server: Streamable HTTP or the legacy HTTP+SSE transport."""

    transport: Literal["streamable_http", "sse"]
    url: Annotated[str, Field(min_length=8, max_length=2048, pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://")]
    """Absolute http(s) URL without user name or password."""


class SocketTargetBody(_Request):
    """A server on a Unix domain socket."""

    transport: Literal["socket"]
    path: Annotated[str, Field(min_length=1, max_length=4096)]
    """Absolute or ``~`` path."""


TargetBody = Annotated[StdioTargetBody | HttpTargetBody | SocketTargetBody, Field(discriminator="transport")]


class HttpAutoTargetBody(_Request):
    """Create only: a remote server whose transport Patchbay detects once, now (Streamable HTTP
    first, then SSE); the created connector names the transport found, never ``auto``."""

    transport: Literal["auto"]
    url: Annotated[str, Field(min_length=8, max_length=2048, pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://")]
    """Absolute http(s) URL without user name or password."""


CreateTargetBody = Annotated[
    StdioTargetBody | HttpTargetBody | HttpAutoTargetBody | SocketTargetBody, Field(discriminator="transport")
]


class StdioTargetView(_Response):
    transport: Literal["stdio"]
    command: str
    args: list[str]
    cwd: str
    """Relative to the workspace root; empty: the root."""


class HttpTargetView(_Response):
    transport: Literal["streamable_http", "sse"]
    url: str


class SocketTargetView(_Response):
    transport: Literal["socket"]
    path: str


TargetView = Annotated[StdioTargetView | HttpTargetView | SocketTargetView, Field(discriminator="transport")]


# -- runtime options --------------------------------------------------------------------------


class RestartChange(_Request):
    """Changes to the restart policy; ``null`` puts a key back to its default."""

    enabled: bool | None = None
    base_delay: float | None = None
    """Seconds before the first restart, doubled for each further one."""
    max_delay: float | None = None
    """Cap on the delay, seconds."""
    max_restarts: int | None = None
    """0..100."""


class LimitsChange(_Request):
    """Changes to the resource limits of a local command (stdio only); ``null`` removes one."""

    address_space_bytes: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = None


class RuntimeOptionsChange(_Request):
    """Changes to a connector's runtime options. A key left out stays as it is; ``null`` puts it
    back to the default. Checked strictly by the connector service (``invalid_config`` naming the
    field, answered as 422 ``validation_error``)."""

    lifecycle: Lifecycle | None = None
    idle_timeout: float | None = None
    """Seconds."""
    request_timeout: float | None = None
    """Seconds."""
    max_call_seconds: float | None = None
    """Seconds."""
    unresponsive_timeouts: int | None = None
    """Request timeouts in a row after which the server is restarted as unresponsive (0: never)."""
    restart: RestartChange | None = None
    limits: LimitsChange | None = None
    allow_private: bool | None = None
    """HTTP/SSE only: let the egress guard reach private addresses."""


class RuntimeOptionsView(_Response):
    """The options a runtime would apply now (unset timeouts filled from the process settings)."""

    lifecycle: Lifecycle
    idle_timeout: float | None
    request_timeout: float | None
    max_call_seconds: float | None
    unresponsive_timeouts: int | None
    restart: dict[str, Any]
    limits: dict[str, Any]
    allow_private: bool


# -- credential bindings ----------------------------------------------------------------------


class BindingRequest(_Request):
    """One credential binding: where a value goes, and exactly one of where it comes from: ``value``
    (stored as a managed credential owned by the connector), ``variable`` (the NAME of a variable of
    Patchbay's environment, optionally with a ``default``), ``ref`` (an existing credential the
    connector owns or that was shared with it) or ``plain`` (a value that is not a secret)."""

    delivery: Delivery
    """``env`` (stdio environment variable), ``header`` or ``bearer`` (``Authorization: Bearer``)."""
    name: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    """The variable or header name; ``Authorization`` (the default) for ``bearer``."""
    value: SecretStr | None = Field(default=None, json_schema_extra={"writeOnly": True})
    """A secret to store; never returned by any route."""
    variable: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    default: SecretStr | None = Field(default=None, json_schema_extra={"writeOnly": True})
    """With ``variable``: the value used when the variable is unset (or empty, see
    ``default_mode``); kept in the credential store, shown back only when it is not a secret."""
    default_mode: Literal["unset", "unset_or_empty"] = "unset_or_empty"
    """``unset_or_empty`` (shell ``${VAR:-x}``) or ``unset`` (``${VAR-x}``)."""
    ref: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    plain: Annotated[str, Field(max_length=65536)] | None = None
    """A setting that is not a secret (``NODE_ENV=production``): kept in the connector's config,
    shown in views, never masked in output; refused for ``bearer`` and for values that look like
    a key or token."""


class BindingView(_Response):
    """A binding as every route shows it: never a credential's value (a plain setting's value is
    no secret and is shown)."""

    ref: str | None
    """The credential id; None for a plain setting."""
    delivery: Delivery
    name: str
    kind: str | None
    source: str | None
    """``managed``, ``environment`` or ``plain``."""
    variable: str | None
    """The environment variable's NAME for an environment credential."""
    owned: bool
    problem: str | None
    """Why it would not resolve now: ``missing``, ``not_shared``, ``variable_unset``, ``no_value``."""
    plain: str | None = None
    """A plain setting's value (``source: plain``)."""
    default: str | None = None
    """An environment reference's default, when it is not a secret."""
    default_mode: Literal["unset", "unset_or_empty"] | None = None
    """When the default applies (None: no default)."""
    default_secret: bool = False
    """The default looks like a secret: stored, never shown."""


# -- connectors -------------------------------------------------------------------------------


class SettingsView(_Response):
    """Global settings of a connector; ``revision`` is the settings revision."""

    enabled: bool
    include_tools: list[str]
    exclude_tools: list[str]
    approval_mode: ApprovalMode
    revision: int


class LiveRuntimeView(_Response):
    """What the hosted runtimes of this server say about the connector now (in memory, with a
    90 s TTL; never stored). Several sessions using it are summed up: connected if any is,
    in-flight requests and restarts summed, the largest tool/resource count."""

    state: Literal["connected", "connecting", "cached", "failed", "needs-auth", "not-connected", "disabled", "unknown"]
    """``unknown``: no runtime updated it within the TTL (then nothing below is current)."""
    sessions: int
    """Runtimes that reported it within the TTL."""
    tool_count: int
    resource_count: int | None
    """Null: no runtime listed its resources."""
    failure_age: int | None
    """Seconds since its most recent failure while it is failing, else null."""
    restarts: int
    in_flight: int
    """Requests (tool calls, reads) under way on it now."""
    updated_at: int
    """Unix milliseconds of the latest update."""


class LiveStatusEvent(_Response):
    """One ``status`` event of ``GET /api/mcp/status/stream``: a connector whose live status
    changed, with the fields of its list entry that follow from it."""

    connector_id: str
    name: str
    runtime_state: RuntimeState
    status: ConnectorStatus
    runtime: LiveRuntimeView | None


class ProbeOutcomeView(_Response):
    """The connector's last probe, ready or failed (what ``POST .../probe`` answered, in short)."""

    state: Literal["ready", "error"]
    code: str | None
    """The stable probe code of a failure: ``command_not_found``, ``timeout``, ..."""
    message: str | None
    """Redacted."""
    tool_count: int
    duration_ms: int
    probed_at: int
    """Unix milliseconds."""
    config_revision: int
    """The connector revision probed."""
    current: bool
    """Whether that was the connector's current revision (false: the configuration changed since)."""


class DataSourceView(_Response):
    """A public service a built-in connector reaches, with its terms and licence links (https)."""

    name: str
    url: str
    terms_url: str
    licence: str
    """The licence of the data it returns, in a few words (e.g. ``CC0 1.0``)."""
    licence_url: str


class ConnectorSummary(_Response):
    """One connector in the list: no live connection is opened to answer it; states come from
    canonical state and the tool cache."""

    connector_id: str
    name: str
    display_name: str
    description: str
    terms_url: str
    """The service's terms of use (http(s) URL); empty: none given."""
    privacy_url: str
    """The service's privacy policy (http(s) URL); empty: none given."""
    source: ConnectorSource
    data_sources: list[DataSourceView] = []
    """A built-in's public data sources with their terms and licence links (its catalogue entry);
    empty for other connectors."""
    transport: TransportKind
    target: TargetView
    settings: SettingsView
    revision: int
    """The connector (configuration) revision; PATCH must name it."""
    config_state: ConfigState
    auth_state: AuthState
    runtime_state: RuntimeState
    """``disabled``; else, when a hosted runtime reported it within the live status TTL and is
    connected, connecting or failing: ``connected``, ``connecting`` or ``error``; else ``ready``
    when a fresh catalog is cached; ``error`` when the last probe of the current configuration
    failed; else ``unknown``."""
    status: ConnectorStatus
    """The one word a badge shows, from the three states by the fixed priority invalid > disabled >
    needs-auth > error > connecting/checking > connected/ready > unknown
    (:func:`patchbay.control.status.display_status`)."""
    tool_count: int
    error: ErrorBody | None
    """An invalid stored configuration (``validation_error``), else the failed last probe of the
    current configuration (its probe code)."""
    last_probe: ProbeOutcomeView | None
    """The last probe, whatever its outcome; null when it was never probed."""
    runtime: LiveRuntimeView | None = None
    """The hosted runtimes' live status of it; null when none reported it."""
    created_at: int
    """Unix milliseconds."""
    updated_at: int
    """Unix milliseconds."""


class ConnectorList(_Response):
    connectors: list[ConnectorSummary]


class ToolCacheView(_Response):
    """One cached tool as the server listed it (schemas are not repeated here)."""

    name: str
    title: str | None
    description: str | None
    annotations: dict[str, Any] | None


class ResourceView(_Response):
    uri: str
    name: str | None
    mime_type: str | None
    description: str | None


class CacheView(_Response):
    """The tool cache of a connector."""

    state: CacheState
    """``fresh``; ``stale`` (configuration changed since: probe again); ``missing``."""
    fetched_at: int | None
    expires_at: int | None
    tools: list[ToolCacheView]
    resources: list[ResourceView]
    server_info: dict[str, Any] | None


class ConnectorDetail(ConnectorSummary):
    """One connector with its effective runtime options, bindings, tool cache, OAuth state and
    what its last probe saw of the server."""

    runtime_options: RuntimeOptionsView
    bindings: list[BindingView]
    cache: CacheView
    oauth_state: OAuthState | None = None
    """The OAuth grant's state (never a token): ``authorized``, ``expired``, ``not_authorized`` or
    ``needs_auth``; null when the connector uses no OAuth."""
    stderr_tail: str = ""
    """The redacted end (at most 4000 characters) of a local command's stderr during its last
    probe; empty for remote and socket servers, when it wrote nothing and when it was never probed."""
    protocol_version: str | None = None
    """The MCP protocol version the last ready probe negotiated; null when unknown."""


class TransportDetectionView(_Response):
    """How a create with transport ``auto`` chose the stored transport."""

    requested: Literal["auto"]
    transport: Literal["streamable_http", "sse"]
    """The transport found (the connector's ``transport``)."""
    auth_required: bool
    """The server answered HTTP 401/403: it needs credentials or an OAuth login."""
    message: str
    """One sentence on how it was decided."""


class ConnectorChanged(ConnectorDetail):
    """A connector as a mutation (create, update, settings) left it, and how the open sessions
    took the change."""

    runtime_reload: RuntimeReload
    """How the open sessions took the change."""
    transport_detection: TransportDetectionView | None = None
    """A create with transport ``auto``: what was detected; null otherwise."""


class ConnectorCreate(_Request):
    """``POST /api/mcp/connectors``. The connector is created disabled unless ``enabled`` is true
    ("optionally enable it at the same time")."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "time", "target": {"transport": "stdio", "command": "mcp-server-time"}, "enabled": True},
                {"name": "docs", "target": {"transport": "streamable_http", "url": "https://mcp.example.com/mcp"}},
            ]
        }
    )

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")]
    """1-64 chars of ``[a-z0-9-]``, starting and ending with a letter or digit; unique ignoring case."""
    display_name: Annotated[str, Field(max_length=200)] | None = None
    description: Annotated[str, Field(max_length=1000)] = ""
    terms_url: Annotated[str, Field(max_length=2048)] = ""
    """The service's terms of use: an absolute http(s) URL without user name or password; empty: none."""
    privacy_url: Annotated[str, Field(max_length=2048)] = ""
    """The service's privacy policy, as ``terms_url``."""
    target: CreateTargetBody
    """A command, URL or socket; a URL's transport may be ``auto`` (detected now: Streamable HTTP,
    else SSE; failure answers 502, or 504 ``timeout``, and nothing is stored)."""
    enabled: bool = False
    runtime_options: RuntimeOptionsChange | None = None
    bindings: Annotated[list[BindingRequest], Field(max_length=64)] = Field(default_factory=list)


class ConnectorUpdate(_Request):
    """``PATCH /api/mcp/connectors/{connector}``: change configuration under ``revision`` (the
    connector revision read before). Fields left out stay as they are. Everything is checked
    before anything is written; a stale revision changes nothing (409)."""

    revision: Annotated[int, Field(ge=1)]
    display_name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    description: Annotated[str, Field(max_length=1000)] | None = None
    terms_url: Annotated[str, Field(max_length=2048)] | None = None
    """An http(s) URL, or empty to remove it."""
    privacy_url: Annotated[str, Field(max_length=2048)] | None = None
    """An http(s) URL, or empty to remove it."""
    target: TargetBody | None = None
    """A new command, URL or socket, checked by the rules of create (a stdio ``cwd`` against the
    workspace ``cwd``); the transport kind may change. Grants, settings and bindings stay; the
    tool cache goes stale (probe again); another URL origin voids an OAuth grant."""
    runtime_options: RuntimeOptionsChange | None = None
    """Checked against the new ``target`` when both are given, and written with it."""
    bindings: Annotated[list[BindingRequest], Field(max_length=64)] = Field(default_factory=list)
    """Bindings to add, or to replace where they fill the same variable or header."""
    unset_bindings: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=64)] = Field(
        default_factory=list
    )
    """Places to free: ``env:KEY``, ``header:Name`` or ``bearer``."""


class ConnectorSettingsUpdate(_Request):
    """``PUT /api/mcp/connectors/{connector}/settings``: global enablement and default tool policy
    under the settings ``revision``. Fields left out stay as they are."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "enabled": True,
                    "include_tools": ["search_*"],
                    "exclude_tools": ["delete_*"],
                    "approval_mode": "custom",
                    "revision": 3,
                }
            ]
        }
    )

    revision: Annotated[int, Field(ge=1)]
    enabled: bool | None = None
    include_tools: Annotated[list[_Pattern], Field(max_length=256)] | None = None
    exclude_tools: Annotated[list[_Pattern], Field(max_length=256)] | None = None
    approval_mode: ApprovalMode | None = None


class ConnectorDeleted(_Response):
    name: str
    connector_id: str
    removed: bool
    runtime_reload: RuntimeReload
    """How the open sessions took the change."""


class DisconnectRequest(_Request):
    """``POST /api/mcp/connectors/{connector}/disconnect``; ``revision`` is checked when given."""

    revision: Annotated[int, Field(ge=1)] | None = None


class OAuthLogout(_Response):
    """What happened to an OAuth grant (never a token)."""

    revoked: list[str]
    """Token kinds the server accepted to revoke (``refresh_token``, ``access_token``)."""
    revocation: Literal["done", "unsupported", "failed", "nothing_to_revoke"]
    deleted: bool
    """Whether stored tokens were deleted."""


class DisconnectResult(_Response):
    """What a disconnect removed: the OAuth grant (revoked, tokens deleted), every credential
    binding of the connector, and the credentials it owned that nothing binds any more (their
    values are deleted from the store)."""

    connector: ConnectorDetail
    unbound: list[BindingView]
    deleted_credentials: list[str]
    oauth: OAuthLogout
    runtime_reload: RuntimeReload
    """How the open sessions took the change."""


# -- probe and tools --------------------------------------------------------------------------


class ProbeReport(_Response):
    """One real connect probe; a failing server is a 200 with ``state: error`` and a stable
    ``code``."""

    connector: str
    state: RuntimeState
    code: str | None
    message: str | None
    tool_count: int
    resource_count: int
    tools: list[str]
    server_info: dict[str, Any] | None
    protocol_version: str | None
    stderr_tail: str
    duration_ms: int
    diagnostics: list[dict[str, Any]]
    runtime_reload: RuntimeReload
    """How the open sessions took the new cached catalog (a ready probe re-projects); empty sessions
    otherwise."""


class ProjectView(_Response):
    project_id: str
    path: str


class ProjectList(_Response):
    """Every known project, by path: the workspaces whose tool decisions can differ from the
    global defaults."""

    projects: list[ProjectView]


class ToolDecisionView(_Response):
    """A cached tool with its effective decision in the scope asked for (DESIGN.md "Permissions")."""

    name: str
    canonical_name: str
    description: str | None
    visible: bool
    decision: GrantDecision
    source: DecisionSource
    """Which rule decided (DESIGN.md "Permissions")."""
    risk: Risk
    global_grant: GrantDecision | None
    project_grant: GrantDecision | None
    input_schema: dict[str, Any] | None
    """The JSON Schema of the tool's arguments, in full, as the server listed it (from the cache)."""
    name_flag: str | None
    """Why the server's name for this tool is flagged (outside MCP's ``[A-Za-z0-9_.-]``, 1-128
    characters, or starting ``mcp.``: spaces, zero-width characters, lookalike letters),
    completing "its name ..."; null for a clean name."""
    risk_reason: str
    """Why the tool has its risk: ``annotated readOnlyHint``, ``annotated destructiveHint``, or
    ``no annotation says otherwise`` (then the risk is ``network``, the default for MCP tools)."""


class ResourceReadsDecisionView(_Response):
    """How explicit resource includes from the connector are decided (their own key space)."""

    decision: GrantDecision
    source: DecisionSource
    global_grant: GrantDecision | None
    project_grant: GrantDecision | None


class ToolGrantView(_Response):
    connector_id: str
    tool_name: str
    decision: GrantDecision
    project_id: str | None


class ToolList(_Response):
    """``GET /api/mcp/connectors/{connector}/tools[?cwd=]``."""

    connector: str
    project: ProjectView | None
    """The project of ``cwd``; null without ``cwd``, and when the workspace is no project yet
    (nothing was ever set or opened there): looking never makes a directory a project, and the
    decisions shown are then the global ones."""
    cache: CacheState
    tools: list[ToolDecisionView]
    unmatched_grants: list[ToolGrantView]
    """Grants that name no cached tool: kept, matching nothing."""
    resource_reads: ResourceReadsDecisionView
    """The decision on resource includes in the same scope."""
    prompt_grants: list[ToolGrantView]
    """Prompt grants (``tool_name``: the prompt, or ``*``) in the same scope."""


class GrantUpdate(_Request):
    """The body of ``PUT .../resources/grant`` and ``PUT .../prompts/{prompt}/grant``."""

    decision: GrantDecision


class ToolGrantUpdate(_Request):
    """The body of ``PUT .../tools/{tool}``."""

    decision: GrantDecision
    unknown_ok: bool = False
    """Store the grant even when the connector's probed (fresh cached) catalog does not list the
    tool, for a tool the server will list later; by default such a name is refused (404
    ``not_found``, ``details.suggestions``: the closest cached names). Without a probed catalog
    the name cannot be checked and the grant is stored either way."""


class ToolGrantSet(_Response):
    connector: str
    tool: str
    decision: GrantDecision
    scope: Scope
    project_id: str | None
    matches_known_tool: bool
    """Whether the cached catalog knows the tool (a grant for an unknown tool matches nothing yet)."""
    runtime_reload: RuntimeReload
    """How the open sessions took the change."""


class ToolGrantCleared(_Response):
    connector: str
    tool: str
    cleared: bool
    """False when there was no grant in that scope (the call is idempotent)."""
    scope: Scope
    project_id: str | None
    runtime_reload: RuntimeReload
    """How the open sessions took the change."""


class GrantSet(_Response):
    """``PUT .../resources/grant`` or ``PUT .../prompts/{prompt}/grant``: a grant in the resource
    or prompt key space, which no tool name can reach."""

    connector: str
    kind: Literal["resource", "prompt"]
    subject: str
    """``*`` for resource reads (one grant per connector); the prompt's name, or ``*`` for every prompt."""
    decision: GrantDecision
    scope: Scope
    project_id: str | None
    runtime_reload: RuntimeReload
    """How the open sessions took the change (see ``ToolGrantSet``)."""


class GrantCleared(_Response):
    """``DELETE .../resources/grant`` or ``DELETE .../prompts/{prompt}/grant``."""

    connector: str
    kind: Literal["resource", "prompt"]
    subject: str
    cleared: bool
    """False when there was no grant in that scope (the call is idempotent)."""
    scope: Scope
    project_id: str | None
    runtime_reload: RuntimeReload
    """How the open sessions took the change (see ``ToolGrantSet``)."""
