"""Installing the Patchbay gateway into an MCP host's own config file, and taking it out again.

The inverse of import: instead of reading a host's server entries into the registry, one entry
is written into the host's file that spawns ``patchbay gateway --stdio`` for a workspace. A plan
is computed first (:func:`plan_install`, :func:`plan_uninstall`: the file, its text before and
after, a unified diff) and written only by :func:`apply_plan`, which keeps a backup of the file
beside it and replaces it atomically. :func:`plan_restore` puts a backup back (the newest, or one
named), itself backed up first. Only the one entry changes (:mod:`host_config_edit`):
other entries, comments, trailing commas and a byte order mark stay as they were.

Hosts and files (``project`` is the workspace; ``user`` the host's user-level file; a host name
is taken in any case, ``Claude-Desktop`` is ``claude-desktop``):

* ``claude-desktop``: its ``claude_desktop_config.json`` (user-level only), ``mcpServers``;
* ``claude-code``: ``<project>/.mcp.json``, ``mcpServers`` with ``"type": "stdio"`` (its
  user-level ``~/.claude.json`` is the host's own state file: use ``claude mcp add`` there);
* ``cursor``: ``<project>/.cursor/mcp.json`` or ``~/.cursor/mcp.json``, ``mcpServers``;
* ``vscode``: ``<project>/.vscode/mcp.json`` or the user ``mcp.json``, ``servers`` with
  ``"type": "stdio"``.

A user-level Cursor or VS Code entry serves whichever workspace the host has open
(``${workspaceFolder}``); every other entry names its workspace's absolute path.

Design: docs/gateway.md "Installing into a host"
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from patchbay.adapters.atomic import replace_file, write_new
from patchbay.control.host_config_edit import read_entry, remove_entry, set_entry
from patchbay.control.importer.discovery import HOST_KEYWORDS, read_bounded
from patchbay.core.errors import ConfigError, NotFoundError

__all__ = [
    "GATEWAY_HOSTS",
    "GatewayHost",
    "HostConfigFile",
    "InstallPlan",
    "apply_plan",
    "backups_of",
    "canonical_host",
    "gateway_entry",
    "host_config_file",
    "plan_install",
    "plan_restore",
    "plan_uninstall",
]

GatewayHost = Literal["claude-desktop", "claude-code", "cursor", "vscode"]
GATEWAY_HOSTS: tuple[GatewayHost, ...] = ("claude-desktop", "claude-code", "cursor", "vscode")
"""The hosts whose config files ``patchbay gateway install`` writes."""

WORKSPACE_FOLDER = "${workspaceFolder}"
"""The variable Cursor and VS Code replace with the open workspace in a user-level entry."""

_PLATFORM_PREFIX = {"darwin": "Library/", "win32": "AppData/"}


@dataclass(frozen=True)
class HostConfigFile:
    """Where one host keeps its server entries.

    Attributes:
        host: the host (:data:`GATEWAY_HOSTS`).
        path: the file (absolute; it may not exist yet).
        root_key: the object that holds the entries (``mcpServers`` or ``servers``).
        typed: whether an entry says ``"type": "stdio"`` (hosts that want it).
        scope: ``project`` (a workspace's file) or ``user`` (the host's user-level file).
    """

    host: GatewayHost
    path: Path
    root_key: str
    typed: bool
    scope: Literal["project", "user"]


@dataclass(frozen=True)
class InstallPlan:
    """What writing (or removing) the gateway entry would change in one file.

    Attributes:
        file: the host's file.
        name: the entry's name (``patchbay`` unless chosen).
        action: ``add``, ``replace`` (an entry of that name exists and differs), ``remove``,
            ``restore`` (a backup's text back), or ``unchanged`` (nothing to write).
        before: the file's text now; None when it does not exist.
        after: its text after the change (None for ``unchanged``).
        entry: the entry written (None for ``remove``, ``restore`` and ``unchanged``).
        source: for ``restore`` (and an ``unchanged`` one), the backup whose text is put back.
    """

    file: HostConfigFile
    name: str
    action: Literal["add", "replace", "remove", "restore", "unchanged"]
    before: str | None
    after: str | None
    entry: dict[str, Any] | None
    source: Path | None = None

    def diff(self) -> str:
        """A unified diff of the change ('' for ``unchanged``)."""
        if self.after is None:
            return ""
        label = str(self.file.path)
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=label if self.before is not None else "/dev/null",
                tofile=label,
            )
        )


def _user_file(host: GatewayHost, home: Path) -> Path:
    candidates = HOST_KEYWORDS[host][1]
    prefix = _PLATFORM_PREFIX.get(sys.platform, ".config/")
    mine = [c for c in candidates if c.startswith(prefix)] or list(candidates)
    existing = [home / c for c in mine if (home / c).exists()]
    return existing[0] if existing else home / mine[0]


def canonical_host(host: str) -> GatewayHost:
    """``host`` as one of :data:`GATEWAY_HOSTS`, whatever its case (``Claude-Desktop`` is
    ``claude-desktop``; surrounding whitespace is ignored).

    Raises:
        ConfigError: ``invalid_config`` (field ``host``) for another host, naming the closest
            known ones (``details.suggestions``).
    """
    folded = host.strip().casefold()
    for known in GATEWAY_HOSTS:
        if folded == known:
            return known
    close = difflib.get_close_matches(folded, GATEWAY_HOSTS, n=2, cutoff=0.5)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise ConfigError(
        "host",
        f"unknown host {host!r}{hint}; use one of {', '.join(GATEWAY_HOSTS)}",
        details={"suggestions": close},
    )


def host_config_file(host: str, *, project: Path, home: Path, user: bool = False) -> HostConfigFile:
    """The file ``host`` reads its servers from: the workspace's own, or with ``user`` the host's
    user-level file (Claude Desktop has only that one).

    Args:
        host: one of :data:`GATEWAY_HOSTS`, in any case (:func:`canonical_host`); the file's
            ``host`` is the canonical name.
        project: the workspace (absolute).
        home: the user's home directory.
        user: the user-level file instead of the workspace's.

    Raises:
        ConfigError: ``invalid_config`` (field ``host``) for another host, or (field ``user``)
            a user-level file for Claude Code.
    """
    host = canonical_host(host)
    if host == "claude-desktop":
        return HostConfigFile("claude-desktop", _user_file("claude-desktop", home), "mcpServers", False, "user")
    if host == "claude-code":
        if user:
            raise ConfigError(
                "user", "Claude Code keeps user-level servers in its own state file: run `claude mcp add` there"
            )
        return HostConfigFile("claude-code", project / ".mcp.json", "mcpServers", True, "project")
    if host == "cursor":
        path = home / ".cursor" / "mcp.json" if user else project / ".cursor" / "mcp.json"
        return HostConfigFile("cursor", path, "mcpServers", False, "user" if user else "project")
    path = _user_file("vscode", home) if user else project / ".vscode" / "mcp.json"
    return HostConfigFile("vscode", path, "servers", True, "user" if user else "project")


def gateway_entry(
    file: HostConfigFile,
    command: Sequence[str],
    *,
    project: Path,
    mode: str = "auto",
    data_home: Path | None = None,
) -> dict[str, Any]:
    """The host entry that spawns the gateway for ``project``.

    Args:
        file: the host's file (:func:`host_config_file`).
        command: how to run ``patchbay`` (``["/venv/bin/patchbay"]``): absolute, since a host
            spawns it without the user's shell or virtualenv.
        project: the workspace served; a user-level Cursor/VS Code entry serves the open one.
        mode: the gateway's ``--mode`` (``auto``, ``proxy``, ``direct``).
        data_home: a data home other than the default, passed as ``--home``.
    """
    served = WORKSPACE_FOLDER if file.scope == "user" and file.host in ("cursor", "vscode") else str(project)
    args = [*command[1:]]
    if data_home is not None:
        args += ["--home", str(data_home)]
    args += ["gateway", "--stdio", "--project", served]
    if mode != "auto":
        args += ["--mode", mode]
    entry: dict[str, Any] = {"type": "stdio"} if file.typed else {}
    entry.update({"command": command[0], "args": args})
    return entry


def _read(path: Path) -> str | None:
    try:
        data = read_bounded(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError("file", f"{path} cannot be read: {exc}", details={"path": str(path)}) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("file", f"{path} is not UTF-8 text", details={"path": str(path)}) from None


def _through_links(file: HostConfigFile) -> HostConfigFile:
    """``file`` at the path its symlinks lead to: a host file kept by a dotfile manager is a link,
    and the edit belongs in the file it points at, not in a new file replacing the link."""
    return dataclasses.replace(file, path=Path(os.path.realpath(file.path)))


def plan_install(file: HostConfigFile, entry: dict[str, Any], *, name: str = "patchbay") -> InstallPlan:
    """The change that writes ``entry`` as ``name`` into ``file`` (nothing is written here); a
    symlinked file is planned at its target.

    Raises:
        ConfigError, MalformedConfigError: ``invalid_config`` (field ``file``) for a file that
            cannot be read, is not JSONC, or whose servers key is not an object.
    """
    file = _through_links(file)
    before = _read(file.path)
    text = before or ""
    current = read_entry(text, file.root_key, name, path=str(file.path))
    if current == entry:
        return InstallPlan(file, name, "unchanged", before, None, None)
    after = set_entry(text, file.root_key, name, entry, path=str(file.path))
    return InstallPlan(file, name, "add" if current is None else "replace", before, after, entry)


def plan_uninstall(file: HostConfigFile, *, name: str = "patchbay") -> InstallPlan:
    """The change that removes entry ``name`` from ``file`` (``unchanged`` when it has none).

    Raises:
        ConfigError, MalformedConfigError: as :func:`plan_install`.
    """
    file = _through_links(file)
    before = _read(file.path)
    if before is None or read_entry(before, file.root_key, name, path=str(file.path)) is None:
        return InstallPlan(file, name, "unchanged", before, None, None)
    after = remove_entry(before, file.root_key, name, path=str(file.path))
    return InstallPlan(file, name, "remove", before, after, None)


_BACKUP_INFIX = ".patchbay-backup-"


def backups_of(file: HostConfigFile) -> list[Path]:
    """The backups :func:`apply_plan` kept of ``file`` (beside it, at its symlink's target),
    oldest first; empty when there are none or the directory cannot be read."""
    path = _through_links(file).path
    prefix = path.name + _BACKUP_INFIX

    def order(backup: Path) -> tuple[str, int]:
        stamp, _, attempt = backup.name.removeprefix(prefix).partition("-")
        return stamp, int(attempt) if attempt.isdigit() else 0

    try:
        found = [p for p in path.parent.iterdir() if p.name.startswith(prefix) and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=order)


def plan_restore(file: HostConfigFile, backup: Path | None = None) -> InstallPlan:
    """The change that puts a backup of ``file`` back: ``backup``, or the newest one
    (:func:`backups_of`). The whole file becomes the backup's text (edits made since that backup
    are undone: the diff shows them); :func:`apply_plan` backs the current file up first, so a
    restore can itself be restored. ``unchanged`` when the file already has that text.

    Raises:
        NotFoundError: ``not_found`` when ``file`` has no backup.
        ConfigError: ``invalid_config``: field ``backup`` for a path that is not one of ``file``'s
            backups; field ``file`` for a file or backup that cannot be read.
    """
    file = _through_links(file)
    known = backups_of(file)
    if backup is None:
        if not known:
            raise NotFoundError(
                f"{file.path} has no backup (a backup is kept beside the file when install or uninstall replaces it)",
                details={"path": str(file.path)},
            )
        source = known[-1]
    else:
        source = Path(os.path.realpath(backup))
        if source not in known:
            raise ConfigError(
                "backup",
                f"{backup} is not a backup of {file.path} (its backups: {', '.join(p.name for p in known) or 'none'})",
                details={"path": str(file.path)},
            )
    before = _read(file.path)
    after = _read(source)
    if after is None:  # removed since it was listed
        raise ConfigError("backup", f"{source} cannot be read", details={"path": str(file.path)})
    if after == before:
        return InstallPlan(file, "", "unchanged", before, None, None, source)
    return InstallPlan(file, "", "restore", before, after, None, source)


def _write_backup(dir_fd: int, path: Path, data: bytes, mode: int, stamp: str) -> Path:
    for attempt in range(100):
        backup = path.with_name(f"{path.name}{_BACKUP_INFIX}{stamp}" + (f"-{attempt}" if attempt else ""))
        try:
            write_new(dir_fd, backup.name, data, mode)
        except FileExistsError:
            continue
        return backup
    raise FileExistsError(f"no free backup name beside {path}")


def apply_plan(plan: InstallPlan, *, now: datetime | None = None) -> Path | None:
    """Write ``plan``: back the file up beside it (``<name>.patchbay-backup-<UTC time>``), then
    replace it atomically, keeping its permission bits (a new file: ``0600``, its directory
    created). Refuses when the file changed since the plan was made.

    Returns:
        The backup's path; None when the file did not exist or nothing was written.

    Raises:
        ConfigError: ``invalid_config`` (field ``file``) when the file changed since the plan,
            or cannot be written (the message says why; the file is then unchanged).
    """
    if plan.after is None:
        return None
    path = plan.file.path
    if _read(path) != plan.before:
        raise ConfigError(
            "file", f"{path} changed since the preview; run the command again", details={"path": str(path)}
        )
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            backup: Path | None = None
            mode = 0o600
            if plan.before is not None:
                mode = stat.S_IMODE(os.stat(path).st_mode)
                backup = _write_backup(dir_fd, path, plan.before.encode("utf-8"), mode, stamp)
            replace_file(dir_fd, path.name, plan.after.encode("utf-8"), mode)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise ConfigError(
            "file", f"{path} cannot be written: {exc.strerror or exc}", details={"path": str(path)}
        ) from None
    except UnicodeEncodeError:
        raise ConfigError("file", f"{path}: the new text is not valid UTF-8", details={"path": str(path)}) from None
    return backup
