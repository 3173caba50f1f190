"""One legacy server definition → the connector Patchbay would store (:class:`~.values.Draft`).

Reads the host differences (transport names, ``${VAR}``-style references, ``envFile``, path
variables, enabled flags, tool filters) into a draft and says what cannot be imported or would be
lost, naming fields, never values. Nothing here runs a command or a helper, resolves a variable
from the environment, or connects.

Design: docs/importer.md (the mapping of each host difference)
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from patchbay.control.connectors import ConnectorService
from patchbay.control.importer.discovery import Scope
from patchbay.control.importer.envfile import read_env_file
from patchbay.control.importer.models import PathView
from patchbay.control.importer.values import (
    Context,
    Draft,
    PendingBinding,
    absolute_path,
    add_binding,
    inside,
    plain_text,
    scalar_text,
)
from patchbay.core.errors import ConfigError
from patchbay.core.redaction import redact_text
from patchbay.core.validation import validate_http_target, validate_socket_path

__all__ = ["Context", "Draft", "PendingBinding", "connector_name_for", "normalise"]

_TRANSPORTS = {
    "stdio": "stdio",
    "http": "streamable_http",
    "streamablehttp": "streamable_http",
    "sse": "sse",
    "socket": "socket",
    "unix": "socket",
}
_FIELD_OF = {"stdio": "command", "streamable_http": "url", "sse": "url", "socket": "socket"}
_LIFECYCLES = {"lazy": "lazy", "eager": "eager", "keepalive": "keep_alive"}
_NOT_IMPORTED = {
    "autoApprove": ("approvals_not_imported", "tool approvals are not imported; grant tools after a probe"),
    "alwaysAllow": ("approvals_not_imported", "tool approvals are not imported; grant tools after a probe"),
    "auth": ("auth_not_imported", "OAuth is not imported; bind a bearer token or header after import"),
    "oauth": ("auth_not_imported", "OAuth is not imported; bind a bearer token or header after import"),
}


def _reason(exc: ConfigError) -> str:
    """A ConfigError's message without its ``field:`` prefix: the problem names its field itself,
    and the commit error adds it again."""
    return exc.message.removeprefix(f"{exc.field}: ")


def connector_name_for(name: str) -> str | None:
    """The connector name a host's server name becomes: lower case, runs of other characters
    than ``a-z0-9`` → ``-``, trimmed, at most 64 characters (DESIGN.md "Names"); None if
    nothing is left (then only ``--rename`` can import it)."""
    text = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()).strip("-")
    return text[:64].rstrip("-") or None


# -- entry point -----------------------------------------------------------------------------


def normalise(name: str, raw: Any, scope: Scope, ctx: Context) -> Draft:
    """Normalise one definition (see the module docstring for every mapping).

    Never raises for the definition's own faults: they become ``problems`` (not importable) or
    ``losses`` (importable, not exactly as the host ran it). Messages name fields, never values.
    """
    draft = Draft(name=name, import_name=connector_name_for(name), raw=raw)
    if draft.import_name is None:
        draft.problem("name", "bad_name", "no connector name can be made from it; import it with --rename")
    if not isinstance(raw, dict):
        draft.problem("definition", "not_an_object", "the definition is not a JSON object")
        return draft
    transport = _transport(raw, draft)
    if transport == "stdio":
        _stdio(raw, draft, ctx, scope)
    elif transport in ("streamable_http", "sse"):
        _remote(raw, draft, ctx, scope, transport)
    elif transport == "socket":
        _socket(raw, draft, ctx, scope)
    _settings(raw, draft)
    keys = [b.target_key for b in (p.spec for p in draft.bindings) if b is not None]
    if len(keys) != len(set(keys)):
        draft.problem("bindings", "duplicate_binding", "two values fill the same environment variable or header")
    for key in raw:
        if key in draft.seen:
            continue
        code, message = _NOT_IMPORTED.get(
            key, ("field_not_imported", f"{key!r} has no Patchbay equivalent and is not imported")
        )
        draft.loss(str(key), code, message)
    return draft


# -- transport -------------------------------------------------------------------------------


def _is_sse_url(url: str) -> bool:
    try:
        return urlsplit(url).path.rstrip("/").endswith("/sse")
    except ValueError:
        return False


def _transport(raw: dict[str, Any], d: Draft) -> str | None:
    d.seen.update(("type", "transport"))
    kinds = [k for k in ("command", "url", "socket") if k in raw]
    spelled: list[tuple[str, str, str]] = []
    for key in ("type", "transport"):
        value = raw.get(key)
        if value is None:
            continue
        mapped = _TRANSPORTS.get(re.sub(r"[-_\s]", "", value).lower()) if isinstance(value, str) else None
        if mapped is None:
            shown = json.dumps(value)[:40] if isinstance(value, str) else type(value).__name__
            d.problem(
                key, "unsupported_transport", f"{shown} is no transport Patchbay supports (stdio, http, sse, socket)"
            )
            return None
        spelled.append((key, value, mapped))
    if len({m for _, _, m in spelled}) > 1:
        d.problem("type", "transport_mismatch", "'type' and 'transport' name different transports")
        return None
    if spelled:
        key, value, transport = spelled[0]
        d.transport_spelling = f"{key}: {json.dumps(value)}"
        needed = _FIELD_OF[transport]
        if needed not in raw:
            d.problem(needed, "missing_field", f"a {transport} server needs {needed!r}")
        others = [k for k in kinds if k != needed]
        if others:
            d.problem(others[0], "conflicting_fields", f"{others[0]!r} does not belong to a {transport} server")
    elif len(kinds) == 1:
        kind = kinds[0]
        if kind == "command":
            transport, d.transport_spelling = "stdio", "inferred from command"
        elif kind == "socket":
            transport, d.transport_spelling = "socket", "inferred from socket"
        elif isinstance(raw["url"], str) and _is_sse_url(raw["url"]):
            transport, d.transport_spelling = "sse", "inferred from url ending in /sse"
        else:
            transport, d.transport_spelling = "streamable_http", "inferred from url"
    else:
        where = kinds[1] if kinds else "command"
        d.problem(where, "no_single_target", "a server needs exactly one of 'command', 'url' or 'socket'")
        return None
    d.transport = transport
    return transport


# -- per transport -----------------------------------------------------------------------------


def _stdio(raw: dict[str, Any], d: Draft, ctx: Context, scope: Scope) -> None:
    d.seen.update(("command", "args", "cwd", "env", "envFile"))
    command = raw.get("command")
    if not isinstance(command, str) or not command:
        d.problem("command", "bad_command", "must be a non-empty string")
        return
    ok = True
    command_text = plain_text(command, "command", d, ctx, scope)
    args_raw = raw.get("args", [])
    args: list[str] = []
    if not isinstance(args_raw, list):
        d.problem("args", "bad_args", "must be a list of strings")
        ok = False
        args_raw = []
    for index, arg in enumerate(args_raw):
        where = f"args[{index}]"
        text = scalar_text(arg)
        if text is None:
            d.problem(where, "bad_argument", "must be a string")
            ok = False
            continue
        plain = plain_text(text, where, d, ctx, scope)
        if plain is None:
            ok = False
            continue
        if redact_text(plain) != plain:
            d.secrets.append(where)
        args.append(plain)
    cwd: str | None = None
    if raw.get("cwd") is not None:
        if not isinstance(raw["cwd"], str):
            d.problem("cwd", "bad_cwd", "must be a string")
            ok = False
        else:
            text = plain_text(raw["cwd"], "cwd", d, ctx, scope, exact_paths=True)
            if text is None:
                ok = False
            elif text:
                full = absolute_path(text, ctx)
                if inside(full, ctx.workspace):
                    cwd = os.path.relpath(os.path.normpath(full), ctx.workspace)
                else:
                    d.outside.append(PathView(field="cwd", path=full))
                    d.problem("cwd", "cwd_outside_workspace", "local commands run inside the workspace")
                    ok = False
    if command_text is not None and ok:
        try:
            d.target = ConnectorService.stdio_target(command_text, args, cwd=cwd, workspace=ctx.workspace)
        except ConfigError as exc:
            d.problem(exc.field, f"invalid_{exc.field}", _reason(exc))
    d.target_view = {
        "command": redact_text(command_text if command_text is not None else command),
        "args": [redact_text(a) for a in args],
        "cwd": d.target.cwd if d.target is not None else (cwd or ""),  # type: ignore[union-attr]
    }
    env = raw.get("env", {})
    if not isinstance(env, dict):
        d.problem("env", "bad_env", "must be an object of NAME: value")
        env = {}
    if raw.get("envFile") is not None:
        for key, value in _env_file(raw["envFile"], d, ctx, scope).items():
            if key not in env:
                add_binding("env", key, value, f"envFile:{key}", d, ctx, scope)
    for key, value in env.items():
        add_binding("env", str(key), value, f"env.{key}", d, ctx, scope)
    if raw.get("headers"):
        d.seen.add("headers")
        d.loss("headers", "headers_ignored", "a local command has no HTTP headers; they are not imported")


def _env_file(value: Any, d: Draft, ctx: Context, scope: Scope) -> dict[str, Any]:
    if not isinstance(value, str) or not value:
        d.problem("envFile", "bad_env_file", "must be a path")
        return {}
    text = plain_text(value, "envFile", d, ctx, scope, exact_paths=True)
    if text is None:
        return {}
    path = absolute_path(text, ctx)
    if not inside(path, ctx.workspace):
        d.outside.append(PathView(field="envFile", path=path))
    try:
        values = read_env_file(Path(path))
    except ConfigError as exc:
        d.problem("envFile", "env_file_unreadable", _reason(exc))
        return {}
    d.loss("envFile", "env_file_copied", "its values are copied at import time; later edits of the file are not seen")
    return values


def _private(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address.is_global


def _remote(raw: dict[str, Any], d: Draft, ctx: Context, scope: Scope, transport: str) -> None:
    d.seen.update(("url", "headers", "bearerToken", "bearerTokenEnv"))
    url = raw.get("url")
    if not isinstance(url, str) or not url:
        d.problem("url", "bad_url", "must be a non-empty string")
    else:
        text = plain_text(url, "url", d, ctx, scope)
        shown = redact_text(text if text is not None else url)
        if shown != (text if text is not None else url):
            d.secrets.append("url")
        d.target_view = {"url": shown}
        if text is not None:
            try:
                d.target = validate_http_target(text, transport)
            except ConfigError as exc:
                d.problem("url", "invalid_url", _reason(exc))
            else:
                if _private(text):
                    d.loss(
                        "url",
                        "private_address",
                        "a private or loopback address: the egress guard refuses it until allowed "
                        "(patchbay connector set NAME --allow-private)",
                    )
    headers = raw.get("headers", {})
    if not isinstance(headers, dict):
        d.problem("headers", "bad_headers", "must be an object of Name: value")
        headers = {}
    for key, value in headers.items():
        add_binding("header", str(key), value, f"headers.{key}", d, ctx, scope)
    if raw.get("bearerToken") is not None:
        add_binding("bearer", "Authorization", raw["bearerToken"], "bearerToken", d, ctx, scope)
    if raw.get("bearerTokenEnv") is not None:
        variable = raw["bearerTokenEnv"]
        if isinstance(variable, str) and variable:
            add_binding("bearer", "Authorization", "${" + variable + "}", "bearerTokenEnv", d, ctx, scope)
        else:
            d.problem("bearerTokenEnv", "bad_value", "must name an environment variable")
    for key in ("env", "envFile", "cwd"):
        if raw.get(key):
            d.seen.add(key)
            d.loss(key, f"{key.lower()}_ignored", f"a remote server has no {key}; it is not imported")


def _socket(raw: dict[str, Any], d: Draft, ctx: Context, scope: Scope) -> None:
    d.seen.add("socket")
    path = raw.get("socket")
    if not isinstance(path, str) or not path:
        d.problem("socket", "bad_socket", "must be a path")
        return
    text = plain_text(path, "socket", d, ctx, scope, exact_paths=True)
    if text is None:
        return
    full = absolute_path(text, ctx) if text.startswith("~") else text
    d.target_view = {"socket_path": full}
    try:
        d.target = validate_socket_path(full)
    except ConfigError as exc:
        d.problem("socket", "invalid_socket", _reason(exc))
        return
    if not inside(d.target.path, ctx.workspace):
        d.outside.append(PathView(field="socket", path=d.target.path))


# -- settings ----------------------------------------------------------------------------------


def _globs(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() and v.isprintable() for v in value):
        return tuple(dict.fromkeys(value))
    return None


def _settings(raw: dict[str, Any], d: Draft) -> None:
    d.seen.update(("disabled", "enabled", "description", "lifecycle", "includeTools", "excludeTools", "disabledTools"))
    for key, enabled_when in (("disabled", False), ("enabled", True)):
        if key in raw:
            if isinstance(raw[key], bool):
                d.enabled = raw[key] == enabled_when
            else:
                d.loss(key, "bad_flag", "is not true or false and is not imported")
    if "description" in raw:
        text = raw["description"]
        if isinstance(text, str) and text.isprintable() and len(text) <= 1000 and redact_text(text) == text:
            d.description = text
        else:
            d.loss("description", "description_not_imported", "is not a short printable text and is not imported")
    if "lifecycle" in raw:
        value = raw["lifecycle"]
        mapped = _LIFECYCLES.get(re.sub(r"[-_\s]", "", value).lower()) if isinstance(value, str) else None
        if mapped is None:
            d.loss("lifecycle", "lifecycle_not_imported", "is not lazy, eager or keep-alive and is not imported")
        else:
            d.options["lifecycle"] = mapped
    include = raw.get("includeTools")
    if include is not None:
        globs = _globs(include)
        if globs is None:
            d.loss("includeTools", "tools_not_imported", "is not a list of tool names and is not imported")
        else:
            d.include_tools = globs
    excluded: list[str] = []
    for key in ("excludeTools", "disabledTools"):
        if raw.get(key) is not None:
            globs = _globs(raw[key])
            if globs is None:
                d.loss(key, "tools_not_imported", "is not a list of tool names and is not imported")
            else:
                excluded.extend(globs)
    d.exclude_tools = tuple(dict.fromkeys(excluded))
