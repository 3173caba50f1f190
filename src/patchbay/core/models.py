"""Pydantic models of Patchbay's domain (DESIGN.md).

These are the shapes every layer passes around; the store maps them to rows, the CLI and API
print them. Nothing here holds a secret value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from patchbay.core.credentials import CredentialBinding, bindings_from_config
from patchbay.core.errors import ConfigError

__all__ = [
    "ApprovalMode",
    "Connector",
    "ConnectorSettings",
    "ConnectorSource",
    "ConnectorTarget",
    "GrantDecision",
    "GrantKind",
    "HttpTarget",
    "Lifecycle",
    "MAX_LIMIT",
    "MAX_OPTION_SECONDS",
    "MIN_ADDRESS_SPACE_BYTES",
    "ProbeOutcome",
    "ProbeResult",
    "RESOURCE_SUBJECT",
    "Project",
    "ResourceSummary",
    "ResourceLimits",
    "RestartPolicy",
    "RejectedServer",
    "RuntimeConfig",
    "RuntimeOptions",
    "RuntimeServer",
    "RuntimeState",
    "SocketTarget",
    "StdioTarget",
    "ToolCacheEntry",
    "ToolGrant",
    "ToolSummary",
    "TransportKind",
]

TransportKind = Literal["stdio", "streamable_http", "sse", "socket"]
ConnectorSource = Literal["builtin", "custom", "imported"]
ApprovalMode = Literal["ask", "custom", "allow_all"]
GrantDecision = Literal["allow", "ask", "deny"]
GrantKind = Literal["tool", "resource", "prompt"]
"""The key space of a grant: a server's tool (subject: its original name), the connector's
resource reads (subject :data:`RESOURCE_SUBJECT`: one grant per connector), or its prompts
(subject: a prompt's name, or ``*`` for every prompt; ``allow``/``deny`` only, since a person
triggers a prompt). The kind is part of a grant's key, so no name a server picks for a tool can
match a resource or prompt grant."""
RESOURCE_SUBJECT = "*"
"""The subject of a connector's one resource-read grant."""
Lifecycle = Literal["lazy", "eager", "keep_alive", "lazy_keep_alive"]
RuntimeState = Literal["unknown", "checking", "ready", "connecting", "connected", "error", "disabled"]

MAX_OPTION_SECONDS = 30 * 24 * 3600
"""Largest per-connector timeout or restart delay :meth:`RuntimeOptions.parse_strict` accepts (30 days)."""
MAX_LIMIT = 2**63 - 1
"""Largest resource limit :meth:`RuntimeOptions.parse_strict` accepts (what ``rlim_t`` holds)."""
MIN_ADDRESS_SPACE_BYTES = 1024 * 1024
"""Smallest address-space limit accepted: below 1 MiB no program can even be loaded."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StdioTarget(_Model):
    """A local command started as a child process, never through a shell."""

    transport: Literal["stdio"] = "stdio"
    command: str
    """The executable: a name looked up on PATH, or a path. Never starts with ``-``."""
    args: tuple[str, ...] = ()
    """Arguments passed as a list; no shell word splitting or expansion happens."""
    cwd: str = ""
    """Working directory relative to the workspace root; empty means the workspace root."""


class HttpTarget(_Model):
    """A remote server over Streamable HTTP or the legacy HTTP+SSE transport."""

    transport: Literal["streamable_http", "sse"] = "streamable_http"
    url: str
    """Absolute http(s) URL without userinfo."""


class SocketTarget(_Model):
    """A server listening on a Unix domain socket (newline-delimited JSON-RPC)."""

    transport: Literal["socket"] = "socket"
    path: str
    """Absolute, normalised socket path (``~`` expanded at validation)."""


ConnectorTarget = Annotated[StdioTarget | HttpTarget | SocketTarget, Field(discriminator="transport")]


class ConnectorSettings(_Model):
    """Global, user-level settings of one connector; they carry their own revision."""

    enabled: bool = True
    include_tools: tuple[str, ...] = ()
    """Glob patterns; when non-empty, only matching tools are visible."""
    exclude_tools: tuple[str, ...] = ()
    """Glob patterns of tools that are never visible."""
    approval_mode: ApprovalMode = "ask"
    revision: int = 1


class Connector(_Model):
    """One registered MCP server."""

    connector_id: str
    name: str
    display_name: str
    description: str = ""
    terms_url: str = ""
    """The service's terms of use (an http(s) URL), for people to read; empty: none given."""
    privacy_url: str = ""
    """The service's privacy policy (an http(s) URL); empty: none given."""
    source: ConnectorSource = "custom"
    target: ConnectorTarget
    runtime_config: dict[str, Any] = Field(default_factory=dict)
    """Non-secret runtime options (lifecycle, timeouts) and credential bindings (``"bindings"``,
    references only); never a secret value."""
    credential_ref: str | None = None
    revision: int = 1
    settings: ConnectorSettings = ConnectorSettings()
    created_at: int = 0
    """Unix time in milliseconds."""
    updated_at: int = 0
    """Unix time in milliseconds."""

    @property
    def transport(self) -> TransportKind:
        return self.target.transport

    @property
    def bindings(self) -> tuple[CredentialBinding, ...]:
        """The credential bindings in ``runtime_config``.

        Raises:
            ConfigError: ``invalid_config`` (field ``bindings``) when the stored bindings are malformed.
        """
        return bindings_from_config(self.runtime_config)


class ToolSummary(_Model):
    """One tool as the server listed it; ``name`` is the server's original name."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    """The server's tool annotations in wire (camelCase) form, e.g. ``{"readOnlyHint": true}``."""

    @property
    def read_only(self) -> bool:
        return bool((self.annotations or {}).get("readOnlyHint"))

    @property
    def destructive(self) -> bool:
        return bool((self.annotations or {}).get("destructiveHint"))


class ResourceSummary(_Model):
    """One resource as the server listed it."""

    uri: str
    name: str | None = None
    mime_type: str | None = None
    description: str | None = None


class ToolCacheEntry(_Model):
    """The cached catalog of one connector, valid only for its fingerprint."""

    connector_id: str
    config_revision: int
    fingerprint: str
    tools: tuple[ToolSummary, ...] = ()
    resources: tuple[ResourceSummary, ...] = ()
    server_info: dict[str, Any] | None = None
    fetched_at: int = 0
    """Unix time in milliseconds."""
    expires_at: int = 0
    """Unix time in milliseconds."""


class ToolGrant(_Model):
    """A global (``project_id is None``) or project grant in one key space."""

    connector_id: str
    tool_name: str
    """The subject: a tool's or prompt's name, or :data:`RESOURCE_SUBJECT` for resource reads."""
    decision: GrantDecision
    project_id: str | None = None
    updated_at: int = 0
    kind: GrantKind = "tool"


class Project(_Model):
    """A workspace directory; the same canonical path always has the same ``project_id``."""

    project_id: str
    path: str
    created_at: int = 0


class ProbeResult(_Model):
    """What one real connect probe found."""

    connector: str
    state: RuntimeState
    """``ready`` or ``error``."""
    code: str | None = None
    """A stable probe code when ``state == "error"``."""
    message: str | None = None
    tool_count: int = 0
    resource_count: int = 0
    tools: tuple[ToolSummary, ...] = ()
    resources: tuple[ResourceSummary, ...] = ()
    server_info: dict[str, Any] | None = None
    protocol_version: str | None = None
    stderr_tail: str = ""
    """The last bytes of the server's stderr (at most ``stderr_tail_bytes``), redacted."""
    duration_ms: int = 0
    diagnostics: tuple[dict[str, Any], ...] = ()
    """One entry per listed tool left out of the catalog (schema over its bounds, malformed):
    ``{"tool", "problem", "message", "measured", "limit", "exact"}``; then one per kept tool whose
    name is flagged (``problem`` ``"name"``: outside MCP's ``[A-Za-z0-9_.-]``, 1-128, or starting
    ``mcp.``); and one per list whose pagination misbehaved (what it listed is kept), with ``tool``
    None, ``problem`` ``repeated_cursor``/``page_limit``/``duplicate_names`` and ``list`` the method."""


class ProbeOutcome(_Model):
    """The outcome of a connector's last probe, kept in the store whatever its result, so a
    failed probe is as visible as a successful one."""

    connector_id: str
    state: Literal["ready", "error"]
    code: str | None = None
    """The stable probe code when ``state == "error"``."""
    message: str | None = None
    """One redacted sentence."""
    tool_count: int = 0
    duration_ms: int = 0
    probed_at: int = 0
    """Unix time in milliseconds."""
    config_revision: int = 0
    """The connector revision probed: an outcome of an older revision describes an older configuration."""
    stderr_tail: str = ""
    """The redacted end of a local command's stderr during the probe (at most 4000 characters
    kept); empty for remote and socket servers, and when the command wrote nothing."""
    protocol_version: str | None = None
    """The MCP protocol version a ready probe negotiated."""


class RestartPolicy(_Model):
    """What happens when a live server crashes; settable per connector.

    After crash number ``n`` (1-based) the runtime waits :meth:`delay` ``(n)`` seconds and
    restarts the server, while ``n <= max_restarts``; the next crash is permanent
    (``mcp.server.permanently_failed``, its tools leave the router). ``enabled=False`` makes the
    first crash permanent.
    """

    enabled: bool = True
    base_delay: PositiveFloat = 0.5
    """Seconds before the first restart; doubled for every further one."""
    max_delay: PositiveFloat = 10.0
    """Cap on the delay, seconds."""
    max_restarts: int = Field(default=3, ge=0, le=100)

    def delay(self, crash_number: int) -> float:
        """Seconds to wait before restarting after crash ``crash_number`` (1, 2, 3, ...)."""
        exponent = max(0, min(crash_number - 1, 62))
        return min(self.max_delay, self.base_delay * (2.0**exponent))


class ResourceLimits(_Model):
    """Optional setrlimit bounds applied in a stdio child before exec."""

    address_space_bytes: PositiveInt | None = None
    """RLIMIT_AS, bytes."""
    cpu_seconds: PositiveInt | None = None
    """RLIMIT_CPU, seconds of CPU time."""
    open_files: PositiveInt | None = None
    """RLIMIT_NOFILE."""

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.address_space_bytes, self.cpu_seconds, self.open_files))


class RuntimeOptions(_Model):
    """A connector's non-secret runtime options, stored in ``Connector.runtime_config``.

    ``None`` means "use the process-wide setting" (:class:`patchbay.core.settings.Settings`).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    lifecycle: Lifecycle = "lazy"
    """``lazy``: connect on first use, close after ``idle_timeout``; ``eager``: connect when the
    runtime starts, close after ``idle_timeout``; ``keep_alive``: connect when the runtime starts
    and never close for idleness; ``lazy_keep_alive``: connect on first use, then never close for
    idleness (a server too costly to start with every session, too costly to restart after a pause)."""
    idle_timeout: PositiveFloat | None = None
    """Seconds without calls after which a lazy/eager connection is closed (reopened on next use)."""
    request_timeout: PositiveFloat | None = None
    """Seconds a call may go without a result or a progress notification."""
    max_call_seconds: PositiveFloat | None = None
    """Hard cap on one call's total seconds, progress notifications or not."""
    unresponsive_timeouts: int | None = Field(default=None, ge=0, le=1000)
    """Consecutive request timeouts after which the server is restarted as unresponsive (0: never)."""
    restart: RestartPolicy = RestartPolicy()
    limits: ResourceLimits = ResourceLimits()
    allow_private: bool = False
    """HTTP/SSE only: let the egress guard reach loopback, private, link-local, unique-local and
    CGNAT addresses (refused by default; cloud metadata addresses stay refused)."""

    @classmethod
    def parse_strict(cls, data: Mapping[str, Any], *, transport: TransportKind | None = None) -> RuntimeOptions:
        """``data`` validated as a connector's stored options, refusing what ``model_validate`` lets by.

        ``model_validate`` (what the runtime uses) ignores unknown top-level keys and coerces; this
        is the write-side check the control plane runs before storing:

        - every key must be a field (also inside ``restart`` and ``limits``), no coercion
          (``"5"`` is not a number, ``1`` is not a boolean, ``2.0`` is not a count);
        - seconds are finite and in (0, :data:`MAX_OPTION_SECONDS`]; counts and limits are positive
          (``restart.max_restarts`` 0..100) and at most :data:`MAX_LIMIT`;
          ``limits.address_space_bytes`` is at least :data:`MIN_ADDRESS_SPACE_BYTES`;
        - resource limits are set only on a ``stdio`` connector (they bound a local child process);
          ``allow_private`` only on an HTTP/SSE one (the egress guard sees only their traffic).

        Args:
            data: a ``runtime_config``-shaped mapping holding option keys only, e.g.
                ``{"lifecycle": "eager", "restart": {"max_restarts": 5}}``.
            transport: the connector's transport, when known; limits are refused unless ``stdio``,
                ``allow_private`` unless ``streamable_http``/``sse``.

        Raises:
            ConfigError: ``invalid_config``; ``details["field"]`` is the dotted path of the first
                bad field (``request_timeout``, ``restart.base_delay``, ``limits.open_files``).
        """
        if not isinstance(data, Mapping):
            raise ConfigError("runtime_config", "must be a JSON object")
        for key in data:
            if key not in cls.model_fields:
                raise ConfigError(str(key), f"is not a runtime option (known: {', '.join(cls.model_fields)})")
        try:
            options = cls.model_validate(dict(data), strict=True)
        except pydantic.ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field = ".".join(str(part) for part in error["loc"]) or "runtime_config"
            message = error["msg"].replace("Input should be", "must be").replace("Extra inputs are", "unknown keys are")
            raise ConfigError(field, f"{message}; got {repr(error.get('input'))[:60]}") from None
        seconds = {
            "idle_timeout": options.idle_timeout,
            "request_timeout": options.request_timeout,
            "max_call_seconds": options.max_call_seconds,
            "restart.base_delay": options.restart.base_delay,
            "restart.max_delay": options.restart.max_delay,
        }
        for field, value in seconds.items():
            if value is not None and not (math.isfinite(value) and value <= MAX_OPTION_SECONDS):
                raise ConfigError(
                    field, f"must be a finite number of seconds up to {MAX_OPTION_SECONDS}; got {value!r}"
                )
        limits = options.limits
        for name in ("address_space_bytes", "cpu_seconds", "open_files"):
            value = getattr(limits, name)
            if value is not None and value > MAX_LIMIT:
                raise ConfigError(f"limits.{name}", f"must be at most {MAX_LIMIT}; got {value}")
        if limits.address_space_bytes is not None and limits.address_space_bytes < MIN_ADDRESS_SPACE_BYTES:
            raise ConfigError(
                "limits.address_space_bytes",
                f"must be at least {MIN_ADDRESS_SPACE_BYTES} bytes (1 MiB); got {limits.address_space_bytes}",
            )
        if limits.any and transport is not None and transport != "stdio":
            raise ConfigError(
                "limits", f"resource limits apply to local command (stdio) connectors only, not {transport}"
            )
        if options.allow_private and transport is not None and transport not in ("streamable_http", "sse"):
            raise ConfigError("allow_private", f"applies to remote (HTTP/SSE) connectors only, not {transport}")
        return options


class RuntimeServer(_Model):
    """One connector as a runtime sees it: what to connect to and how to decide its tools.

    Built by the control plane from canonical state (later written as the workspace's projected
    snapshot); holds references only, never a secret value.
    """

    connector_id: str
    name: str
    target: ConnectorTarget
    revision: int = 1
    """The connector revision this was built from (written into the snapshot)."""
    settings: ConnectorSettings = ConnectorSettings()
    global_grants: dict[str, GrantDecision] = Field(default_factory=dict)
    """Explicit global grants keyed by the server's original tool name."""
    project_grants: dict[str, GrantDecision] = Field(default_factory=dict)
    """Explicit grants of this workspace's project, keyed by original tool name."""
    global_resource_grant: GrantDecision | None = None
    """The global grant of the connector's resource reads (its own key space), if any."""
    project_resource_grant: GrantDecision | None = None
    """This project's grant of the connector's resource reads, if any."""
    global_prompt_grants: dict[str, GrantDecision] = Field(default_factory=dict)
    """Global prompt grants keyed by prompt name (``*``: every prompt); ``allow``/``deny``."""
    project_prompt_grants: dict[str, GrantDecision] = Field(default_factory=dict)
    """This project's prompt grants keyed by prompt name (``*``: every prompt)."""
    tools: tuple[ToolSummary, ...] = ()
    """The cached catalog, if any (annotations feed the risk and destructive rules)."""
    runtime_config: dict[str, Any] = Field(default_factory=dict)
    bindings: tuple[CredentialBinding, ...] = ()
    """Credential references the runtime resolves when it starts this connector (never values)."""

    @property
    def options(self) -> RuntimeOptions:
        """``runtime_config`` parsed as :class:`RuntimeOptions` (unknown keys ignored)."""
        return RuntimeOptions.model_validate(self.runtime_config)


class RejectedServer(_Model):
    """A projected server the runtime refused to start: its entry no longer passes the runtime's
    checks (e.g. an argument that now looks like a secret); the other servers run on."""

    name: str
    """The connector name (the entry's key in the snapshot)."""
    field: str
    """The dotted field that failed, e.g. ``servers.bad.args``."""
    message: str
    """Why, as the check says it (it names the rule, never the value)."""


class RuntimeConfig(_Model):
    """Everything one workspace runtime may use: nothing else is ever loaded."""

    version: Literal[1] = 1
    project_id: str
    workspace: str
    """The canonical workspace root."""
    servers: tuple[RuntimeServer, ...] = ()
    rejected: tuple[RejectedServer, ...] = ()
    """Entries of the snapshot left out because they failed their checks (warnings, not errors)."""
