"""Import preview: read the files, normalise every definition, report each.

Per entry: source path and precedence, name, transport, suspected plaintext secrets (only as
``configured: true``), ``!command`` helpers (never run), name conflicts with existing
connectors, cwd/socket outside the workspace, lossless or not, and a normalised diff.

A preview only reads: it starts no command, runs no helper, opens no connection, resolves no
environment variable and writes nothing (no database row either: the workspace is checked, not
registered as a project). Precedence: files in the order scanned (standard locations, or the
files named, in the order named), scopes in file order; the first definition of an import
name is effective, later ones are ``shadowed_by`` it.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from patchbay.control.connectors import ConnectorService
from patchbay.control.importer.discovery import (
    LoadedFile,
    Scope,
    SourceFile,
    load_source,
    load_text,
    named_sources,
    scopes_of,
    standard_sources,
)
from patchbay.control.importer.models import (
    BindingView,
    ConflictView,
    FileView,
    ImportPreview,
    PreviewEntry,
    SecretView,
    SourceView,
)
from patchbay.control.importer.normalise import Context, Draft, normalise
from patchbay.control.importer.placeholders import EnvRef, parse_value
from patchbay.core.credentials import validate_env_name
from patchbay.core.errors import ConfigError
from patchbay.core.names import validate_connector_name
from patchbay.core.redaction import is_secret_key, redact_text

__all__ = ["ImportSources", "Scan", "ScannedEntry", "preview_import", "scan"]

_MASK = "<configured>"


@dataclass(frozen=True)
class ScannedEntry:
    """A public entry and the draft behind it (the draft holds values; never printed)."""

    entry: PreviewEntry
    draft: Draft


@dataclass(frozen=True)
class Scan:
    """Everything a preview found; :meth:`preview` is its public form."""

    workspace: Path
    loaded: list[LoadedFile]
    files: list[FileView]
    entries: list[ScannedEntry]

    def preview(self) -> ImportPreview:
        return ImportPreview(workspace=str(self.workspace), files=self.files, entries=[e.entry for e in self.entries])


def _workspace(path: Path) -> Path:
    """The workspace root, symlinks resolved. Raises ConfigError (``project``) if it is no directory."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ConfigError("project", f"{str(path)[:200]!r} cannot be used as a workspace: {exc}") from None
    if not real.is_dir():
        raise ConfigError("project", f"{str(path)[:200]!r} is not a directory")
    return real


def _check_renames(renames: Mapping[str, str]) -> None:
    for old, new in renames.items():
        if not old:
            raise ConfigError("rename", "must be OLD=NEW with a non-empty OLD")
        try:
            validate_connector_name(new)
        except ConfigError as exc:
            raise ConfigError("rename", f"{old}={new}: {exc.message}") from None


def _check_inputs(inputs: Mapping[str, str]) -> None:
    for key, variable in inputs.items():
        if not key:
            raise ConfigError("input", "must be ID=VAR with a non-empty ID")
        validate_env_name("input", variable)


class ImportSources(TypedDict, total=False):
    """What an import reads besides the workspace and home (:func:`scan`, :func:`preview_import`,
    :func:`~patchbay.control.importer.commit.commit_import`); every key is optional."""

    paths: Sequence[str]
    """Files or host keywords (``claude-desktop``, ``claude-code``, ``cursor``, ``vscode``) to read
    instead of the standard locations; relative to ``cwd``. Default: the standard locations."""
    text: str | None
    """A pasted document (JSONC: a host file's content, or a bare server map), read after
    ``paths``; when given, the standard locations are not read. Its source is ``pasted``."""
    cwd: Path | None
    """Base of relative ``paths`` (default: the process's current directory)."""
    inputs: Mapping[str, str] | None
    """VS Code input id → environment variable name (``--input ID=VAR``)."""
    renames: Mapping[str, str] | None
    """Name in the file (or its normalised name) → connector name (``--rename OLD=NEW``)."""
    classify: Mapping[str, str] | None
    """``FIELD`` or ``ENTRY:FIELD`` (``env.NODE_ENV``, ``app:headers.X-Region``) → ``plain`` or
    ``credential``: how a literal value is stored, overriding the classification by name and
    value (``--plain FIELD``, ``--secret FIELD``)."""


def scan(service: ConnectorService, *, workspace: Path, home: Path, **sources: Unpack[ImportSources]) -> Scan:
    """Read, normalise and compare with existing connectors (see :func:`preview_import`).

    Raises:
        ConfigError: ``invalid_config``: a workspace that is no directory (field ``project``),
            a bad or unused ``--rename`` (``rename``), a bad ``--input`` (``input``), a file named
            twice (``paths``).
        TypeError: a keyword that is not an :class:`ImportSources` key.
    """
    unknown = sorted(set(sources) - ImportSources.__optional_keys__)
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    paths = sources.get("paths") or ()
    renames = dict(sources.get("renames") or {})
    inputs = dict(sources.get("inputs") or {})
    _check_renames(renames)
    _check_inputs(inputs)
    root = _workspace(workspace)
    home = Path(os.path.abspath(home))
    classify = dict(sources.get("classify") or {})
    bad = next((k for k, v in classify.items() if v not in ("plain", "credential") or not k), None)
    if bad is not None:
        raise ConfigError("classify", f"{bad[:80]!r} must be classified as plain or credential")
    ctx = Context(workspace=root, home=home, input_variables=inputs, classify=classify)
    text = sources.get("text")
    files_read: list[SourceFile] = (
        named_sources(paths, home=home, cwd=sources.get("cwd") or Path.cwd())
        if paths
        else ([] if text is not None else standard_sources(root, home))
    )
    existing = {c.name.lower(): c for c in service.list_connectors()}
    loaded: list[LoadedFile] = [load_source(source) for source in files_read]
    if text is not None:
        loaded.append(load_text(text))
    files: list[FileView] = []
    scanned: list[tuple[Draft, SourceView]] = []
    precedence = 0
    for item in loaded:
        source = item.source
        scopes, warnings = scopes_of(item, root) if item.status == "ok" else ([], [])
        count = 0
        for scope in scopes:
            precedence += 1
            for name, raw in scope.servers.items():
                scanned.append((normalise(name, raw, scope, ctx), _source_view(scope, precedence)))
                count += 1
        files.append(
            FileView(
                path=str(source.path),
                label=source.label,
                host=source.host,
                origin=source.origin,
                status=item.status,
                error=item.error.to_dict() if item.error is not None else None,
                warnings=warnings,
                entries=count,
            )
        )
    used = set()
    for draft, _ in scanned:
        for old, new in renames.items():
            if old in (draft.name, draft.import_name):
                draft.import_name = new
                draft.problems = [p for p in draft.problems if p.code != "bad_name"]
                used.add(old)
    unused = sorted(set(renames) - used)
    if unused:
        raise ConfigError("rename", f"no definition is named {unused[0]!r}")
    unclassified = sorted(set(classify) - ctx.used)
    if unclassified:
        raise ConfigError(
            "classify", f"{unclassified[0][:80]!r} names no literal env or header value (e.g. env.NODE_ENV)"
        )
    first: dict[str, SourceView] = {}
    entries = []
    for draft, view in scanned:
        key = (draft.import_name or "").lower()
        shadow = first.get(key) if key else None
        if key and shadow is None:
            first[key] = view
        entries.append(ScannedEntry(entry=_entry(draft, view, shadow, existing.get(key)), draft=draft))
    return Scan(workspace=root, loaded=loaded, files=files, entries=entries)


def preview_import(
    service: ConnectorService, *, workspace: Path, home: Path, **sources: Unpack[ImportSources]
) -> ImportPreview:
    """Preview importing legacy MCP config files.

    Args:
        service: for the existing connectors (name conflicts); nothing is written.
        workspace: the workspace whose standard files are read and that cwd must stay in.
        home: the home directory (``~``, user-level files, host keywords); never ``$HOME`` itself.
        sources: ``paths``, ``text``, ``cwd``, ``inputs``, ``renames``, ``classify``: see
            :class:`ImportSources`.

    Returns:
        Every file with its status (a malformed one with line and column) and every definition.

    Raises:
        ConfigError: see :func:`scan`.
        CanonicalStateUnavailable: the database cannot be read.
    """
    return scan(service, workspace=workspace, home=home, **sources).preview()


def _source_view(scope: Scope, precedence: int) -> SourceView:
    return SourceView(
        path=str(scope.source.path),
        label=scope.source.label,
        host=scope.source.host,
        origin=scope.source.origin,
        scope=scope.scope,
        root_key=scope.root_key,
        precedence=precedence,
    )


def _entry(draft: Draft, view: SourceView, shadow: SourceView | None, existing: Any) -> PreviewEntry:
    conflict = None
    if existing is not None and draft.import_name is not None:
        conflict = ConflictView(
            connector=existing.name,
            connector_id=existing.connector_id,
            same_target=draft.target is not None and existing.target == draft.target,
        )
    importable = not draft.problems and conflict is None and shadow is None and draft.import_name is not None
    return PreviewEntry(
        name=draft.name,
        import_name=draft.import_name,
        source=view,
        effective=shadow is None,
        shadowed_by=shadow,
        transport=draft.transport,
        transport_spelling=draft.transport_spelling,
        target=draft.target_view,
        enabled=draft.enabled,
        bindings=[
            BindingView(
                field=b.field,
                delivery=b.delivery,
                name=b.name,
                source=b.source,  # type: ignore[arg-type]
                variable=b.variable,
                configured=True,
                sensitive=b.sensitive,
                has_default=b.has_default,
                default_mode=b.default_mode,  # type: ignore[arg-type]
                plain=b.shown if b.source == "plain" else None,
                default=b.shown if b.source == "environment" else None,
            )
            for b in draft.bindings
        ],
        plaintext=[SecretView(field=f) for f in dict.fromkeys(draft.secrets)],
        helpers=draft.helpers,
        inputs=draft.inputs,
        needs_input=any(i.mapped_to is None for i in draft.inputs),
        conflict=conflict,
        outside_workspace=draft.outside,
        lossless=not draft.losses and not draft.problems,
        losses=draft.losses,
        problems=draft.problems,
        importable=importable,
        diff=_diff(draft, view),
    )


# -- the normalised diff -------------------------------------------------------------------------


def _masked_value(value: Any) -> Any:
    """An env/header/token value as the diff may show it: a reference as written, else masked."""
    if not isinstance(value, str):
        return _MASK
    if parse_value(value, helpers=True).helper is not None:
        return "!<helper>"
    prefix, body = "", value
    if value.lower().startswith("bearer "):
        prefix, body = value[:7], value[7:].lstrip(" ")
    sole = parse_value(body).sole_reference()
    if sole is None:
        return _MASK
    if isinstance(sole, EnvRef) and sole.default is not None:
        return prefix + "${" + sole.variable + ":-…}"
    return prefix + body


def _masked_text(value: Any) -> Any:
    return redact_text(value) if isinstance(value, str) else value


def _masked_definition(raw: Any, draft: Draft) -> Any:
    """The definition as read, every value that could be a secret masked, unknown keys elided."""
    if not isinstance(raw, dict):
        return "<not an object>"
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("env", "headers") and isinstance(value, dict):
            out[key] = {str(k): _masked_value(v) for k, v in value.items()}
        elif key == "bearerToken":
            out[key] = _masked_value(value)
        elif key == "args" and isinstance(value, list):
            out[key] = [_masked_text(a) if isinstance(a, str | int | float | bool) else "<…>" for a in value]
        elif key in draft.seen and isinstance(value, str | bool | int | float) and not is_secret_key(str(key)):
            out[key] = _masked_text(value)
        elif key in draft.seen and isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = [redact_text(v) for v in value]
        else:
            out[key] = "<not imported>" if key not in draft.seen else "<…>"
    return out


def _normalised(draft: Draft) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draft.import_name, "transport": draft.transport}
    out.update(draft.target_view or {})
    bindings: dict[str, str] = {}
    for b in draft.bindings:
        label = "bearer" if b.delivery == "bearer" else f"{b.delivery} {b.name}"
        if b.source == "environment":
            sep = ("-" if b.default_mode == "unset" else ":-") if b.has_default else ""
            default = "" if not b.has_default else (b.shown if b.shown is not None else "<secret>")
            bindings[label] = f"@env:{b.variable}{sep}{default}"
        elif b.source == "managed":
            bindings[label] = "<managed credential>"
        elif b.source == "plain":
            bindings[label] = f"@plain:{b.shown}"
        else:
            bindings[label] = f"<{b.source}: not importable>"
    if bindings:
        out["bindings"] = bindings
    out["enabled"] = draft.enabled
    if draft.description:
        out["description"] = draft.description
    if draft.options:
        out["runtime_options"] = draft.options
    if draft.include_tools:
        out["include_tools"] = list(draft.include_tools)
    if draft.exclude_tools:
        out["exclude_tools"] = list(draft.exclude_tools)
    return out


def _diff(draft: Draft, view: SourceView) -> list[str]:
    before = json.dumps(_masked_definition(draft.raw, draft), indent=2, ensure_ascii=False).splitlines()
    after = json.dumps(_normalised(draft), indent=2, ensure_ascii=False).splitlines()
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=f"{view.path} {view.root_key}.{draft.name}",
        tofile=f"patchbay connector {draft.import_name or '?'}",
        lineterm="",
        n=max(len(before), len(after)),
    )
    return [redact_text(line) for line in lines]
