"""Where legacy MCP config files are found, and how one is read.

Scans the standard project and user locations in precedence order when no file is named; host
files (:data:`HOST_KEYWORDS`) are read only when named. The home directory is always passed in.
Reading is bounded by :data:`MAX_FILE_BYTES`, follows only regular files and never writes.

Design: docs/importer.md
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from patchbay.control.importer.jsonc import parse_jsonc
from patchbay.core.errors import ConfigError, MalformedConfigError, NotFoundError, PatchbayError

__all__ = [
    "HOST_KEYWORDS",
    "MAX_FILE_BYTES",
    "FileStatus",
    "HostKind",
    "PASTED_LABEL",
    "LoadedFile",
    "Origin",
    "Scope",
    "SourceFile",
    "detect_host",
    "load_source",
    "load_text",
    "named_sources",
    "read_bounded",
    "scopes_of",
    "standard_sources",
]

HostKind = Literal["generic", "pi", "claude_desktop", "claude_code", "cursor", "vscode"]
Origin = Literal["standard", "named", "pasted"]
"""``standard``: a standard location; ``named``: a file the user named; ``pasted``: text the user
pasted (no file)."""
FileStatus = Literal["ok", "absent", "missing", "malformed", "invalid", "unreadable"]
"""``absent``: a standard location with no file (normal); ``missing``: a named file that does not
exist; ``malformed``: not JSONC (line and column given); ``invalid``: JSON of the wrong shape;
``unreadable``: permissions, not a regular file, too large."""

PASTED_LABEL = "pasted text"
"""How reports name a pasted document (its ``path`` and ``label``: there is no file)."""

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Largest config file read (Claude Code's ``~/.claude.json`` holds history and grows large)."""

_STANDARD: tuple[tuple[str, str, HostKind], ...] = (
    ("workspace", ".mcp.json", "generic"),
    ("workspace", ".pi/mcp.json", "pi"),
    ("workspace", ".cursor/mcp.json", "cursor"),
    ("workspace", ".vscode/mcp.json", "vscode"),
    ("home", ".config/mcp/mcp.json", "generic"),
    ("home", ".agents/mcp.json", "generic"),
    ("home", ".agents/mcp/mcp.json", "generic"),
)

HOST_KEYWORDS: dict[str, tuple[HostKind, tuple[str, ...]]] = {
    "claude-desktop": (
        "claude_desktop",
        (
            "Library/Application Support/Claude/claude_desktop_config.json",
            ".config/Claude/claude_desktop_config.json",
            "AppData/Roaming/Claude/claude_desktop_config.json",
        ),
    ),
    "claude-code": ("claude_code", (".claude.json",)),
    "cursor": ("cursor", (".cursor/mcp.json",)),
    "vscode": (
        "vscode",
        (
            "Library/Application Support/Code/User/mcp.json",
            ".config/Code/User/mcp.json",
            "Library/Application Support/Code - Insiders/User/mcp.json",
            ".config/Code - Insiders/User/mcp.json",
            "AppData/Roaming/Code/User/mcp.json",
        ),
    ),
}
"""Keywords a user may name instead of a path: host kind and candidate paths under the home
directory (macOS, Linux, Windows layouts); the first that exists is read, this platform's first."""

_PLATFORM_DIRS = {"darwin": "Library/", "win32": "AppData/"}
"""Where a host keeps its config on each platform (under the home directory); else ``.config/``."""


def _this_platform_first(candidates: Sequence[str]) -> list[str]:
    """``candidates`` with this platform's layout first (a missing file is then reported where
    this platform's host would keep it), the others after, in order."""
    prefix = _PLATFORM_DIRS.get(sys.platform, ".config/")
    return sorted(candidates, key=lambda candidate: not candidate.startswith(prefix))


@dataclass(frozen=True)
class SourceFile:
    """One file to read.

    Attributes:
        path: absolute path.
        host: whose format it is (labels and per-host defaults; the parser accepts every format).
        origin: ``standard`` (a standard location), ``named`` (the user named it) or ``pasted``
            (text the user pasted: ``path`` is then :data:`PASTED_LABEL`, no file).
        label: how reports name it, e.g. ``workspace .mcp.json`` or ``claude-code``.
    """

    path: Path
    host: HostKind
    origin: Origin
    label: str


@dataclass(frozen=True)
class LoadedFile:
    """A source after reading: ``document`` is the parsed JSON object when ``status == "ok"``."""

    source: SourceFile
    status: FileStatus
    document: dict[str, Any] | None = None
    error: PatchbayError | None = None
    duplicate_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scope:
    """One set of server definitions inside a file.

    Attributes:
        source: the file.
        scope: ``file`` (the whole file), or for Claude Code's ``~/.claude.json``: ``local`` (the
            current workspace's project entry), ``user`` (the root), ``project:<path>`` (another
            project's entry).
        root_key: where the servers were: ``mcpServers``, ``servers`` or ``mcp.servers``, with the
            ``projects[<path>].`` prefix for project scopes.
        servers: name → raw definition (JSON values as read).
        inputs: VS Code ``inputs`` definitions by id (``{"id", "type", "password", ...}``).
    """

    source: SourceFile
    scope: str
    root_key: str
    servers: dict[str, Any]
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)


def detect_host(path: Path) -> HostKind:
    """The host whose file ``path`` is, from its name and place (``generic`` when unknown)."""
    if path.name == "claude_desktop_config.json":
        return "claude_desktop"
    if path.name == ".claude.json":
        return "claude_code"
    parent = path.parent.name
    if parent == ".cursor":
        return "cursor"
    if parent == ".vscode" or (parent == "User" and path.parent.parent.name.startswith("Code")):
        return "vscode"
    if parent == ".pi":
        return "pi"
    return "generic"


def standard_sources(workspace: Path, home: Path) -> list[SourceFile]:
    """The standard locations for ``workspace`` and ``home``, in precedence order."""
    out = []
    for base, relative, host in _STANDARD:
        root = workspace if base == "workspace" else home
        label = f"workspace {relative}" if base == "workspace" else f"~/{relative}"
        out.append(SourceFile(path=root / relative, host=host, origin="standard", label=label))
    return out


def named_sources(names: Sequence[str], *, home: Path, cwd: Path) -> list[SourceFile]:
    """The files the user named: paths (relative to ``cwd``; ``~`` is ``home``) or keywords of
    :data:`HOST_KEYWORDS`. A keyword resolves to its first candidate that exists (else the first
    candidate, which then reads as ``missing``).

    Raises:
        ConfigError: ``invalid_config`` (field ``paths``) for an empty name or a name given twice.
    """
    out: list[SourceFile] = []
    seen: set[Path] = set()
    for name in names:
        if not name or not name.strip():
            raise ConfigError("paths", "a file name must not be empty")
        if name in HOST_KEYWORDS:
            host, candidates = HOST_KEYWORDS[name]
            paths = [home / c for c in _this_platform_first(candidates)]
            path = next((p for p in paths if p.exists()), paths[0])
            source = SourceFile(path=path, host=host, origin="named", label=name)
        else:
            if name == "~" or name.startswith("~/"):
                path = home / name[2:]
            else:
                path = Path(name)
                path = path if path.is_absolute() else cwd / path
            path = Path(os.path.normpath(path))
            source = SourceFile(path=path, host=detect_host(path), origin="named", label=str(path))
        if source.path in seen:
            raise ConfigError("paths", f"{source.path} is named twice")
        seen.add(source.path)
        out.append(source)
    return out


def read_bounded(path: Path) -> bytes:
    """The bytes of a regular file, at most :data:`MAX_FILE_BYTES`.

    Raises:
        FileNotFoundError: no such file. OSError/ValueError: why it cannot be read.
    """
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between stat and open
            raise ValueError("not a regular file")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_source(source: SourceFile) -> LoadedFile:
    """Read and parse one source; never raises for the file's own problems (they become its status).

    A file that exists but cannot be parsed is ``malformed`` with a
    :class:`~patchbay.core.errors.MalformedConfigError` carrying its line and column:
    malformed is never treated as missing.
    """
    shown = str(source.path)
    try:
        data = read_bounded(source.path)
    except (FileNotFoundError, NotADirectoryError):
        if source.origin == "standard":
            return LoadedFile(source, "absent")
        return LoadedFile(source, "missing", error=NotFoundError(f"{shown}: no such file", details={"path": shown}))
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return LoadedFile(source, "unreadable", error=ConfigError("file", f"{shown} cannot be read: {reason}"))
    try:
        parsed = parse_jsonc(data, path=shown)
    except MalformedConfigError as exc:
        return LoadedFile(source, "malformed", error=exc)
    if not isinstance(parsed.value, dict):
        return LoadedFile(source, "invalid", error=ConfigError("file", f"{shown}: the top level is not a JSON object"))
    return LoadedFile(source, "ok", document=parsed.value, duplicate_keys=parsed.duplicate_keys)


_ROOT_KEYS = ("mcpServers", "servers", "mcp", "projects")


def load_text(text: str) -> LoadedFile:
    """Parse a pasted document as :func:`load_source` parses a file (``origin`` ``pasted``).

    Accepted: what a host file holds (``{"mcpServers": {...}}``, ``servers``, ``mcp.servers``),
    or the server map alone (``{"time": {"command": ...}}``, as snippets in a server's README
    often are), which is read as ``mcpServers``. Never raises for the text's own problems:
    ``malformed`` (line and column in the pasted text) or ``invalid`` (no JSON object).
    """
    source = SourceFile(path=Path(PASTED_LABEL), host="generic", origin="pasted", label=PASTED_LABEL)
    try:
        parsed = parse_jsonc(text, path=PASTED_LABEL)
    except MalformedConfigError as exc:
        return LoadedFile(source, "malformed", error=exc)
    document = parsed.value
    if not isinstance(document, dict):
        return LoadedFile(source, "invalid", error=ConfigError("text", "the top level is not a JSON object"))
    if (
        document
        and not any(key in document for key in _ROOT_KEYS)
        and all(isinstance(v, dict) for v in document.values())
    ):
        document = {"mcpServers": document}
    return LoadedFile(source, "ok", document=document, duplicate_keys=parsed.duplicate_keys)


def _servers_at(obj: dict[str, Any], prefix: str) -> Iterable[tuple[str, dict[str, Any]]]:
    """``(root_key, servers)`` for every server map in ``obj``: ``mcpServers``, ``servers`` and
    VS Code settings' ``mcp.servers``."""
    for key in ("mcpServers", "servers"):
        value = obj.get(key)
        if isinstance(value, dict):
            yield prefix + key, value
    mcp = obj.get("mcp")
    if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict):
        yield prefix + "mcp.servers", mcp["servers"]


def _inputs(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    raw = obj.get("inputs")
    if not isinstance(raw, list):
        mcp = obj.get("mcp")
        raw = mcp.get("inputs") if isinstance(mcp, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out.setdefault(item["id"], item)
    return out


def _same_dir(text: str, workspace: Path) -> bool:
    if not os.path.isabs(text):
        return False
    normal = os.path.normpath(text)
    return normal in (os.path.normpath(workspace), os.path.realpath(workspace)) or os.path.realpath(normal) == str(
        workspace.resolve()
    )


def scopes_of(loaded: LoadedFile, workspace: Path) -> tuple[list[Scope], list[str]]:
    """The server sets of a loaded file, in precedence order, and warnings about its shape.

    Claude Code's ``~/.claude.json`` (any file with a ``projects`` object of per-project entries)
    gives, in order: ``local`` (the entry for ``workspace``, which Claude Code prefers), ``user``
    (the root) and one ``project:<path>`` scope per other project that defines servers. Nothing
    else in that file (accounts, history) is looked at.

    Warnings name keys only (a value may be a secret): a ``servers`` root that is no object, a
    server name defined twice in one object.
    """
    document = loaded.document or {}
    source = loaded.source
    warnings = [
        f"the key {k!r} appears more than once in one object; the last one is used" for k in loaded.duplicate_keys
    ]
    inputs = _inputs(document)
    scopes: list[Scope] = []
    projects = document.get("projects")
    has_projects = isinstance(projects, dict) and any(
        isinstance(v, dict) and isinstance(v.get("mcpServers"), dict) for v in projects.values()
    )
    if has_projects:
        assert isinstance(projects, dict)
        local = [k for k, v in projects.items() if isinstance(v, dict) and _same_dir(k, workspace)]
        for key in local:
            for root_key, servers in _servers_at(projects[key], f"projects[{key}]."):
                scopes.append(Scope(source, "local", root_key, servers, inputs))
        for root_key, servers in _servers_at(document, ""):
            scopes.append(Scope(source, "user", root_key, servers, inputs))
        for key, value in projects.items():
            if key in local or not isinstance(value, dict):
                continue
            for root_key, servers in _servers_at(value, f"projects[{key}]."):
                if servers:
                    scopes.append(Scope(source, f"project:{key}", root_key, servers, inputs))
    else:
        for root_key, servers in _servers_at(document, ""):
            scopes.append(Scope(source, "file", root_key, servers, inputs))
    for key in ("mcpServers", "servers"):
        if key in document and not isinstance(document[key], dict):
            warnings.append(f"{key!r} is not an object; it was skipped")
    return scopes, warnings
