"""Mapping between the domain models (``patchbay.core.models``) and rows of ``tables.py``.

Column mapping of a connector target:

- ``StdioTarget.command`` → ``command``, ``.args`` → ``args_json``, ``.cwd`` → the ``cwd`` key of
  ``runtime_config_json`` (only when non-empty);
- ``HttpTarget.url`` → ``endpoint_url`` (``transport`` is ``streamable_http`` or ``sse``);
- ``SocketTarget.path`` → ``socket_path``.

Input checks here raise :class:`~patchbay.core.errors.ConfigError` (``invalid_config``) naming
the field, before any SQL runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic
from sqlalchemy import RowMapping

from patchbay.adapters.store.tables import APPROVAL_MODES
from patchbay.core.errors import ConfigError
from patchbay.core.models import (
    Connector,
    ConnectorSettings,
    ConnectorTarget,
    HttpTarget,
    ResourceSummary,
    SocketTarget,
    StdioTarget,
    ToolCacheEntry,
    ToolGrant,
    ToolSummary,
)

__all__ = [
    "cache_columns",
    "check_choice",
    "check_text",
    "coerce_target",
    "connector_from_row",
    "dump_json",
    "grant_from_row",
    "settings_columns",
    "target_columns",
    "tool_cache_from_row",
    "tool_patterns",
]

_TARGET_ADAPTER: pydantic.TypeAdapter[StdioTarget | HttpTarget | SocketTarget] = pydantic.TypeAdapter(ConnectorTarget)
#: ``runtime_config`` keys the store owns; a caller may not set them directly.
RESERVED_RUNTIME_KEYS = frozenset({"cwd"})


def dump_json(field: str, value: Any) -> str:
    """Compact JSON text for a ``*_json`` column; ``ConfigError(field)`` when not JSON-able."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(field, f"must be JSON-serialisable ({exc})") from None


def check_choice(field: str, value: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(field, f"must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_text(field: str, value: Any, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise ConfigError(field, "must be a non-empty string" if not allow_empty else "must be a string")
    if "\x00" in value:
        raise ConfigError(field, "must not contain NUL characters")
    return value


def coerce_target(value: Any) -> StdioTarget | HttpTarget | SocketTarget:
    """A target model, or a dict validated into one (``ConfigError("target")`` otherwise)."""
    if isinstance(value, StdioTarget | HttpTarget | SocketTarget):
        return value
    try:
        return _TARGET_ADAPTER.validate_python(value)
    except pydantic.ValidationError as exc:
        raise ConfigError("target", f"is not a valid connector target ({exc.error_count()} errors)") from None


def target_columns(target: StdioTarget | HttpTarget | SocketTarget, runtime_config: Any) -> dict[str, Any]:
    """Every target column plus ``runtime_config_json``; unused target columns are NULL."""
    if runtime_config is None:
        runtime_config = {}
    if not isinstance(runtime_config, Mapping):
        raise ConfigError("runtime_config", "must be a JSON object")
    reserved = RESERVED_RUNTIME_KEYS.intersection(runtime_config)
    if reserved:
        raise ConfigError("runtime_config", f"{', '.join(sorted(reserved))} is set through the target, not here")
    config = dict(runtime_config)
    columns: dict[str, Any] = {
        "transport": target.transport,
        "endpoint_url": None,
        "command": None,
        "args_json": "[]",
        "socket_path": None,
    }
    if isinstance(target, StdioTarget):
        columns["command"] = target.command
        columns["args_json"] = dump_json("args", list(target.args))
        if target.cwd:
            config["cwd"] = target.cwd
    elif isinstance(target, HttpTarget):
        columns["endpoint_url"] = target.url
    else:
        columns["socket_path"] = target.path
    columns["runtime_config_json"] = dump_json("runtime_config", config)
    return columns


def tool_patterns(field: str, value: Any) -> str:
    """JSON text of a list of glob patterns (``include_tools`` / ``exclude_tools``)."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError(field, "must be a list of glob patterns")
    patterns = list(value)
    for pattern in patterns:
        check_text(field, pattern)
    return dump_json(field, patterns)


def settings_columns(settings: ConnectorSettings) -> dict[str, Any]:
    return {
        "enabled": 1 if settings.enabled else 0,
        "include_tools_json": tool_patterns("include_tools", settings.include_tools),
        "exclude_tools_json": tool_patterns("exclude_tools", settings.exclude_tools),
        "approval_mode": check_choice("approval_mode", settings.approval_mode, APPROVAL_MODES),
    }


def connector_from_row(row: Mapping[str, Any] | RowMapping) -> Connector:
    runtime_config = json.loads(row["runtime_config_json"])
    transport = row["transport"]
    target: StdioTarget | HttpTarget | SocketTarget
    if transport == "stdio":
        cwd = runtime_config.pop("cwd", "")
        target = StdioTarget(command=row["command"], args=tuple(json.loads(row["args_json"])), cwd=cwd)
    elif transport == "socket":
        target = SocketTarget(path=row["socket_path"])
    else:
        target = HttpTarget(transport=transport, url=row["endpoint_url"])
    return Connector(
        connector_id=row["connector_id"],
        name=row["name"],
        display_name=row["display_name"],
        description=row["description"],
        terms_url=row["terms_url"],
        privacy_url=row["privacy_url"],
        source=row["source"],
        target=target,
        runtime_config=runtime_config,
        credential_ref=row["credential_ref"],
        revision=row["revision"],
        settings=ConnectorSettings(
            enabled=bool(row["enabled"]),
            include_tools=tuple(json.loads(row["include_tools_json"])),
            exclude_tools=tuple(json.loads(row["exclude_tools_json"])),
            approval_mode=row["approval_mode"],
            revision=row["settings_revision"],
        ),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def grant_from_row(row: RowMapping) -> ToolGrant:
    return ToolGrant(
        connector_id=row["connector_id"],
        tool_name=row["tool_name"],
        decision=row["decision"],
        project_id=row.get("project_id"),
        updated_at=row["updated_at"],
        kind=row["subject_kind"],
    )


def cache_columns(entry: ToolCacheEntry) -> dict[str, Any]:
    return {
        "connector_id": entry.connector_id,
        "config_revision": entry.config_revision,
        "fingerprint": entry.fingerprint,
        "tools_json": dump_json("tools", [t.model_dump(mode="json") for t in entry.tools]),
        "resources_json": dump_json("resources", [r.model_dump(mode="json") for r in entry.resources]),
        "server_info_json": None if entry.server_info is None else dump_json("server_info", entry.server_info),
        "fetched_at": entry.fetched_at,
        "expires_at": entry.expires_at,
        "tool_count": len(entry.tools),
    }


def tool_cache_from_row(row: RowMapping) -> ToolCacheEntry:
    server_info = row["server_info_json"]
    return ToolCacheEntry(
        connector_id=row["connector_id"],
        config_revision=row["config_revision"],
        fingerprint=row["fingerprint"],
        tools=tuple(ToolSummary.model_validate(t) for t in json.loads(row["tools_json"])),
        resources=tuple(ResourceSummary.model_validate(r) for r in json.loads(row["resources_json"])),
        server_info=None if server_info is None else json.loads(server_info),
        fetched_at=row["fetched_at"],
        expires_at=row["expires_at"],
    )
