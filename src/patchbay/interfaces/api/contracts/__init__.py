"""Every request and response body of the REST API (seed 003 §8), in one module (``contracts``).

Names follow DESIGN.md and seed 003 §5: ``connector_id``, ``name``, ``display_name``, ``source``,
``transport``, ``settings`` (``enabled``, ``include_tools``, ``exclude_tools``, ``approval_mode``,
``revision``), ``decision``, ``project_id``. Requests refuse unknown fields; every mutation takes a
JSON body (seed 003 §8.1: never ``?enabled=true``).

No response model has a field that could hold a secret value (seed 003 §8.3, §19 point 8): a
credential is shown as its binding (``ref``, ``delivery``, ``name``, ``source``, ``variable`` --
the NAME of an environment variable) and whether it resolves, never its value. The one secret a
request may carry, :attr:`BindingRequest.value`, is a ``SecretStr``: write-only in the OpenAPI
document and masked if it is ever printed.

Errors are always :class:`ErrorResponse` (``{"error": {"code", "message", "details"}}``); see
:mod:`patchbay.interfaces.api.errors` for codes and statuses.

Runtime reload (seed 003 §10.5): every successful mutation carries ``runtime_reload``
(:class:`RuntimeReload`: ``{"code": "runtime_reload_failed" | null, "sessions": [...]}``), how the
sessions ``patchbay serve`` hosts took the committed change.

The models live by area in private modules (``_base``: error shape and reload report;
``_connectors``: connectors, settings, probe, tools and grants; ``_imports``: import and the
deprecated projections; ``_sessions``: sessions and tool calls); import them from here.
"""

from patchbay.control.importer.models import ImportPreview, ImportResult
from patchbay.interfaces.api.contracts._base import ErrorBody, ErrorResponse, RuntimeReload, SessionReloadView
from patchbay.interfaces.api.contracts._connectors import (
    AuthState,
    BindingRequest,
    BindingView,
    CacheState,
    CacheView,
    ConfigState,
    ConnectorChanged,
    ConnectorCreate,
    ConnectorDeleted,
    ConnectorDetail,
    ConnectorList,
    ConnectorSettingsUpdate,
    ConnectorSummary,
    ConnectorUpdate,
    Delivery,
    DisconnectRequest,
    DisconnectResult,
    GrantCleared,
    GrantSet,
    HttpTargetBody,
    HttpTargetView,
    LimitsChange,
    OAuthLogout,
    ProbeOutcomeView,
    ProbeReport,
    ProjectView,
    ResourceReadsDecisionView,
    ResourceView,
    RestartChange,
    RuntimeOptionsChange,
    RuntimeOptionsView,
    Scope,
    SettingsView,
    SocketTargetBody,
    SocketTargetView,
    StdioTargetBody,
    StdioTargetView,
    TargetBody,
    TargetView,
    ToolCacheView,
    ToolDecisionView,
    ToolGrantCleared,
    ToolGrantSet,
    ToolGrantUpdate,
    ToolGrantView,
    ToolList,
)
from patchbay.interfaces.api.contracts._imports import (
    ImportCommitRequest,
    ImportCommitted,
    ImportPreviewRequest,
    LegacyCatalog,
    LegacyCatalogServer,
    LegacyServerSetting,
    LegacySettings,
    LegacyToggle,
    LegacyToggled,
)
from patchbay.interfaces.api.contracts._sessions import (
    SessionClosed,
    SessionEvents,
    SessionList,
    SessionOpen,
    SessionState,
    SessionTool,
    SessionTools,
    SessionView,
    ToolCallOutcome,
    ToolCallRequest,
)

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
    "ErrorBody",
    "ErrorResponse",
    "GrantCleared",
    "GrantSet",
    "HttpTargetBody",
    "HttpTargetView",
    "ImportCommitRequest",
    "ImportCommitted",
    "ImportPreview",
    "ImportPreviewRequest",
    "ImportResult",
    "LegacyCatalog",
    "LegacyCatalogServer",
    "LegacyServerSetting",
    "LegacySettings",
    "LegacyToggle",
    "LegacyToggled",
    "LimitsChange",
    "OAuthLogout",
    "ProbeOutcomeView",
    "ProbeReport",
    "ProjectView",
    "ResourceReadsDecisionView",
    "ResourceView",
    "RestartChange",
    "RuntimeOptionsChange",
    "RuntimeOptionsView",
    "RuntimeReload",
    "Scope",
    "SessionClosed",
    "SessionEvents",
    "SessionList",
    "SessionOpen",
    "SessionReloadView",
    "SessionState",
    "SessionTool",
    "SessionTools",
    "SessionView",
    "SettingsView",
    "SocketTargetBody",
    "SocketTargetView",
    "StdioTargetBody",
    "StdioTargetView",
    "TargetBody",
    "TargetView",
    "ToolCacheView",
    "ToolCallOutcome",
    "ToolCallRequest",
    "ToolDecisionView",
    "ToolGrantCleared",
    "ToolGrantSet",
    "ToolGrantUpdate",
    "ToolGrantView",
    "ToolList",
]
