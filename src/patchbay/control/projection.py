"""Runtime projection: canonical state → ``<workspace>/.patchbay/mcp-runtime.json``.

The control plane is the only writer of the snapshot a workspace runtime loads
(:func:`patchbay.runtime.snapshot.load_snapshot`); its schema is
:class:`~patchbay.runtime.snapshot.RuntimeSnapshot`. Rules per connector, derived from the control
plane's own decision function (:func:`patchbay.core.policy.decide`, DESIGN.md "Permissions") so both
sides cannot drift:

* only globally enabled connectors are written; ``lifecycle`` defaults to ``lazy``;
* ``include_tools``/``exclude_tools`` are copied; every tool whose explicit decision is Deny (a
  global deny, which nothing lifts, or the project's deny) is merged into ``exclude_tools`` as an
  escaped exact pattern, so it is never listed nor sent;
* ``approval_mode`` ``ask``/``custom`` → ``approve_tools: true``; ``allow_all`` → approval only for
  the exact names with an explicit Ask (tools annotated ``destructiveHint`` still ask through
  their annotations, DESIGN.md step 4);
* explicit Allow (global or project) → the exact ``allowed_tools`` list; a project grant wins over
  a global allow/ask but never over a global deny;
* grant names are exact: a grant called ``get_*`` or ``*`` covers no other tool (wildcards never
  expand grants), and a tool missing from the cached catalog gets nothing beyond its own exact
  grants and the approval mode (no extra authorization);
* resource-read and prompt grants are their own key spaces and are copied as stored (the runtime
  decides them with :func:`~patchbay.core.policy.decide_resource_read` and
  :func:`~patchbay.core.policy.decide_prompt`); no tool name can reach them;
* no secret value: targets carry none and credentials are bindings (references).

Writing is atomic and ordered: under an exclusive ``flock`` of ``.patchbay/mcp-runtime.lock`` the
state is read, a temporary file in ``.patchbay`` is written, fsynced and renamed over the snapshot,
and the directory is fsynced; so a reader sees the old or the new file, and the last writer to take
the lock wrote the newest committed state. Neither ``.patchbay`` nor any file in it is followed
through a symlink.

**Sealed**: the bytes written are signed with the data home's snapshot key
(:func:`~patchbay.runtime.snapshot.seal_snapshot`, :mod:`patchbay.adapters.snapshot_key`), bound to
the project and the canonical workspace path, so a runtime in another process can tell the
control plane's file from one rewritten by anything else that can write the workspace. Runtimes
in this process skip the file: :meth:`Projector.runtime_config` gives the same config in memory.

**Mode 0600** (directory 0700): the snapshot holds no secret, but it does hold the user's commands,
URLs (possibly internal hosts), credential reference ids and tool catalogs; only runtimes of the
same user read it, as with ``credentials.json``. A ``.gitignore`` of ``*`` is written when the
directory is created, so the per-user state is not committed by accident.

**A failed write invalidates.** When a workspace's snapshot cannot be written (a planted symlink,
an unusable key, a full disk), the older sealed file would still verify; so the projection
records the store's current change counter as the project's generation in the data home (the
loader refuses any file older than it) and removes the old file, then reports the failure.

Re-projection after a mutation (the reload of live runtimes is not here): a global change
re-projects every known workspace (the projects table), a project grant only its own; a workspace
that no longer exists, or cannot be written, is skipped and reported (:class:`ProjectionReport`),
never a failure of the committed mutation.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic

from patchbay.adapters.atomic import lock_exclusive, replace_file, write_new
from patchbay.adapters.snapshot_key import load_or_create_key, record_generation
from patchbay.control.queries import ConnectorQueries, ScopeGrants, catalog_fingerprint, runtime_server
from patchbay.core.credentials import BINDINGS_KEY
from patchbay.core.errors import ConfigError, NotFoundError, PatchbayError
from patchbay.core.models import (
    Connector,
    GrantDecision,
    Project,
    RejectedServer,
    RuntimeConfig,
    RuntimeOptions,
    RuntimeServer,
    ToolSummary,
)
from patchbay.core.policy import decide, is_visible
from patchbay.runtime.snapshot import (
    MAX_SNAPSHOT_BYTES,
    SNAPSHOT_DIR,
    SNAPSHOT_FILE,
    SNAPSHOT_VERSION,
    RuntimeSnapshot,
    SnapshotServer,
    check_server,
    seal_snapshot_parts,
    snapshot_path,
    snapshot_tool,
)

__all__ = [
    "LOCK_FILE",
    "LOCK_TIMEOUT",
    "SNAPSHOT_MODE",
    "ProjectionReport",
    "Projector",
    "WorkspaceProjection",
    "build_snapshot",
    "exact_pattern",
    "project_server",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

SNAPSHOT_MODE = 0o600
"""File mode of the snapshot (see the module docstring for why not 0644)."""
LOCK_FILE = "mcp-runtime.lock"
LOCK_TIMEOUT = 10.0
"""Seconds a projection waits for another writer of the same workspace before giving up."""
_GITIGNORE = b"# Written by Patchbay: per-user runtime state, not for version control.\n*\n"


def exact_pattern(name: str) -> str:
    """``name`` as an ``fnmatch`` pattern that matches exactly ``name`` (``a*`` → ``a[*]``)."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in name)


def project_server(server: RuntimeServer) -> tuple[str, SnapshotServer]:
    """One enabled connector's snapshot entry, keyed by its name (rules in the module docstring).

    Args:
        server: the connector with its raw global and project grants and cached catalog, as
            :meth:`ConnectorQueries.runtime_config` builds it.
    """
    settings = server.settings
    denied: list[str] = []
    allowed: list[str] = []
    asked: list[str] = []
    overrides: list[str] = []
    for tool in sorted(set(server.global_grants) | set(server.project_grants)):
        verdict = decide(
            tool,
            include_tools=settings.include_tools,
            exclude_tools=settings.exclude_tools,
            approval_mode=settings.approval_mode,
            global_grant=server.global_grants.get(tool),
            project_grant=server.project_grants.get(tool),
        )
        if not verdict.visible or verdict.source not in ("global_deny", "project_grant", "global_grant"):
            continue  # hidden by include/exclude anyway
        if verdict.decision == "deny":
            denied.append(tool)
            continue
        if verdict.decision == "allow":
            allowed.append(tool)
        elif settings.approval_mode == "allow_all":
            asked.append(tool)
        else:
            continue  # ask/custom: every tool not allowed asks already
        if verdict.source == "project_grant":
            overrides.append(tool)
    exclude = tuple(dict.fromkeys((*settings.exclude_tools, *map(exact_pattern, denied))))
    options = {k: v for k, v in server.runtime_config.items() if k != BINDINGS_KEY}
    lifecycle = RuntimeOptions.model_validate(options).lifecycle
    options.pop("lifecycle", None)
    return server.name, SnapshotServer(
        connector_id=server.connector_id,
        revision=server.revision,
        settings_revision=settings.revision,
        target=server.target,
        lifecycle=lifecycle,
        runtime_config=options,
        bindings=server.bindings,
        include_tools=settings.include_tools,
        exclude_tools=exclude,
        approval_mode=settings.approval_mode,
        approve_tools=True if settings.approval_mode != "allow_all" else tuple(asked),
        allowed_tools=tuple(allowed),
        project_overrides=tuple(overrides),
        tools=tuple(snapshot_tool(t) for t in server.tools if is_visible(t.name, settings.include_tools, exclude)),
        global_resource_grant=server.global_resource_grant,
        project_resource_grant=server.project_resource_grant,
        global_prompt_grants=_prompt_grants(server.global_prompt_grants),
        project_prompt_grants=_prompt_grants(server.project_prompt_grants),
    )


def _prompt_grants(grants: dict[str, GrantDecision]) -> dict[str, Literal["allow", "deny"]]:
    # The store refuses a prompt "ask"; should one appear, it is projected as the deny it means.
    return {name: "allow" if d == "allow" else "deny" for name, d in grants.items()}


def build_snapshot(config: RuntimeConfig, *, generated_at: int) -> RuntimeSnapshot:
    """The snapshot of one workspace: its enabled connectors, by name.

    Args:
        config: :meth:`ConnectorQueries.runtime_config` of the workspace.
        generated_at: Unix time in milliseconds.
    """
    servers = dict(project_server(s) for s in sorted(config.servers, key=lambda s: s.name) if s.settings.enabled)
    return RuntimeSnapshot(
        version=SNAPSHOT_VERSION, project_id=config.project_id, generated_at=generated_at, servers=servers
    )


_TOOLS = pydantic.TypeAdapter(tuple[ToolSummary, ...])
_TOOL_DEFAULTS = {"__all__": {"title", "description", "input_schema", "output_schema"}}
"""Tool fields a snapshot leaves out: always their defaults there (:func:`project_server` keeps a
tool's name and risk hint, all a runtime reads before it connects; :func:`snapshot_tool`)."""


def _fragment(name: str, server: SnapshotServer) -> bytes:
    """One ``"name":{...}`` member of ``servers``, compact JSON; a tool without annotations is
    written as ``{"name": ...}`` alone (most tools, and a catalog is most of a snapshot)."""
    entry = server.model_dump_json(exclude={"tools"}).encode("utf-8")
    tools = _TOOLS.dump_json(server.tools, exclude=_TOOL_DEFAULTS, exclude_none=True)
    return json.dumps(name, ensure_ascii=False).encode("utf-8") + b":" + entry[:-1] + b',"tools":' + tools + b"}"


def _body(project_id: str, generated_at: int, state_version: int, fragments: Iterable[bytes]) -> list[bytes]:
    """The snapshot document (compact JSON) in parts, from its ``servers`` members, laid out as
    :func:`~patchbay.runtime.snapshot.seal_snapshot_parts` takes it (closing brace on its own line)."""
    head = json.dumps(
        {
            "version": SNAPSHOT_VERSION,
            "project_id": project_id,
            "generated_at": generated_at,
            "state_version": state_version,
        },
        separators=(",", ":"),
    )
    parts = [head[:-1].encode("utf-8") + b',"servers":{']
    for fragment in fragments:
        if len(parts) > 1:
            parts.append(b",")
        parts.append(fragment)
    parts.append(b"}\n}\n")
    return parts


def _sealed(body: list[bytes], *, project_id: str, home: Path, workspace: Path) -> list[bytes]:
    data = seal_snapshot_parts(body, key=load_or_create_key(home), project_id=project_id, workspace=str(workspace))
    if sum(map(len, data)) > MAX_SNAPSHOT_BYTES:
        raise ConfigError("snapshot", f"the projection is larger than {MAX_SNAPSHOT_BYTES} bytes; not written")
    return data


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "it is a symbolic link or not a directory"
    return exc.strerror or type(exc).__name__


class _Locked(ConfigError):
    """The workspace stayed locked by another projection (which is writing it now)."""


@contextlib.contextmanager
def _snapshot_dir(root: Path) -> Iterator[int]:
    """An fd of ``<root>/.patchbay`` (created 0700 with a ``.gitignore``), under the workspace lock.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot``): ``.patchbay`` is a symlink or no
            directory, cannot be created, or stays locked for :data:`LOCK_TIMEOUT` seconds.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        root_fd = os.open(root, flags)
    except OSError as exc:
        raise ConfigError("snapshot", f"the workspace {root} cannot be opened ({_why(exc)})") from None
    try:
        created = False
        try:
            os.mkdir(SNAPSHOT_DIR, 0o700, dir_fd=root_fd)
            created = True
        except FileExistsError:
            pass
        dir_fd = os.open(SNAPSHOT_DIR, flags, dir_fd=root_fd)
    except OSError as exc:
        raise ConfigError("snapshot", f"{root / SNAPSHOT_DIR} cannot be used ({_why(exc)})") from None
    finally:
        os.close(root_fd)
    try:
        if created:
            with contextlib.suppress(OSError):
                write_new(dir_fd, ".gitignore", _GITIGNORE, 0o644)
        try:
            lock_fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        except OSError as exc:
            raise ConfigError("snapshot", f"{root / SNAPSHOT_DIR / LOCK_FILE} cannot be opened ({_why(exc)})") from None
        try:
            if not lock_exclusive(lock_fd, LOCK_TIMEOUT):  # another projection holds it
                raise _Locked("snapshot", f"{root / SNAPSHOT_DIR} stayed locked for {LOCK_TIMEOUT:g}s")
            yield dir_fd
        finally:
            os.close(lock_fd)  # releases the lock
    finally:
        os.close(dir_fd)


def _locked_write(root: Path, project_id: str, make: Callable[[], tuple[int, list[bytes]]], *, home: Path) -> Path:
    """Under the workspace lock, build the snapshot document with ``make()`` (its state version and
    body) and replace the file with it, sealed with ``home``'s snapshot key for ``project_id`` and
    the canonical workspace ``root``; then raise the project's generation to that state version."""
    with _snapshot_dir(root) as dir_fd:
        version, body = make()
        data = _sealed(body, project_id=project_id, home=home, workspace=root)
        try:
            replace_file(dir_fd, SNAPSHOT_FILE, data, SNAPSHOT_MODE)
        except OSError as exc:
            raise ConfigError("snapshot", f"{snapshot_path(root)} cannot be written ({_why(exc)})") from None
        record_generation(home, project_id, version)
    return snapshot_path(root)


def _remove_stale(root: Path) -> str:
    """Remove ``<root>/.patchbay/mcp-runtime.json`` without following a symlink; says what happened."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        root_fd = os.open(root, flags)
        try:
            dir_fd = os.open(SNAPSHOT_DIR, flags, dir_fd=root_fd)
        finally:
            os.close(root_fd)
        try:
            os.unlink(SNAPSHOT_FILE, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except FileNotFoundError:
        return "no older snapshot was left"
    except OSError as exc:
        return f"the older snapshot could not be removed ({_why(exc)})"
    return "the older snapshot was removed"


def write_snapshot(workspace: Path | str, snapshot: RuntimeSnapshot, *, home: Path | str) -> Path:
    """Write ``snapshot`` atomically as ``<workspace>/.patchbay/mcp-runtime.json`` (mode 0600),
    sealed with the snapshot key of data home ``home`` (created on first use).

    :meth:`Projector.project` projects from canonical state; this writes a snapshot already built.
    ``workspace`` must be the canonical path: the seal binds it.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot``) when it cannot be written (read-only
            or missing workspace, a workspace path that is itself a symlink — pass the canonical
            path —, ``.patchbay`` is a symlink or a file, disk full, over
            :data:`~patchbay.runtime.snapshot.MAX_SNAPSHOT_BYTES`); a previous snapshot is left as
            it was; field ``snapshot_key`` when the key cannot be created or read.
    """
    fragments = [_fragment(name, server) for name, server in snapshot.servers.items()]
    body = _body(snapshot.project_id, snapshot.generated_at, snapshot.state_version, fragments)
    return _locked_write(Path(workspace), snapshot.project_id, lambda: (snapshot.state_version, body), home=Path(home))


@dataclass(frozen=True, slots=True)
class WorkspaceProjection:
    """What happened to one workspace.

    Attributes:
        project_id / workspace: the project and its canonical path.
        status: ``written``; ``missing`` (the directory is gone, or its path no longer resolves to
            itself); ``failed`` (it exists but the snapshot could not be written).
        code: the stable error code when ``failed`` (``invalid_config``), else None.
        message: why it was skipped; empty when written.
    """

    project_id: str
    workspace: str
    status: Literal["written", "missing", "failed"]
    code: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class ProjectionReport:
    """The outcome of one re-projection.

    Attributes:
        workspaces: one entry per workspace that was considered.
        error: ``{"code", "message", "details"}`` when the projects could not even be listed
            (e.g. ``canonical_state_unavailable``); the committed mutation stands either way.
    """

    workspaces: tuple[WorkspaceProjection, ...] = ()
    error: dict[str, Any] | None = None

    @property
    def written(self) -> tuple[WorkspaceProjection, ...]:
        return tuple(w for w in self.workspaces if w.status == "written")

    @property
    def skipped(self) -> tuple[WorkspaceProjection, ...]:
        return tuple(w for w in self.workspaces if w.status != "written")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (paths and ids only; nothing secret)."""
        return {
            "written": [w.workspace for w in self.written],
            "skipped": [
                {
                    "project_id": w.project_id,
                    "workspace": w.workspace,
                    "status": w.status,
                    "code": w.code,
                    "message": w.message,
                }
                for w in self.skipped
            ],
            "error": self.error,
        }


_Stamp = tuple[int, str, int, int]
_BULK_READ = 32
"""Above this many connectors changed since the last projection (and a quarter of them all),
they are read in one query rather than one by one."""


@dataclass(slots=True)
class _Piece:
    """One connector's projected entry for one project, and what it was projected from."""

    key: tuple[Connector, ScopeGrants, _Stamp | None]
    name: str
    server: SnapshotServer
    fragment: bytes
    runtime: RuntimeServer | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


class Projector:
    """Projects canonical state into workspace snapshots, re-encoding only what changed.

    Usage::

        projector = Projector(service.queries, home=settings.home)
        projector.project(service.queries.project(Path("~/work/repo").expanduser()))  # one, raising
        report = projector.reproject()                  # every known workspace, never raising
        report = projector.reproject("prj_0123456789abcdef")                   # only that one

    Each projection reads the connectors, the grants in the project's scope and the stamps of
    the cached catalogs (a few queries whatever their number; the connectors and stamps only when
    the store's change counter moved since they were last read); a connector whose row, grants and
    catalog stamp are what its last projection (of this project or another) saw keeps its encoded
    entry, and a catalog is parsed again only when its stamp changed. Writers in other processes are seen the same way,
    since everything is compared against the store as committed now.

    Args:
        queries: the read side whose state is projected.
        home: the data home (its snapshot key seals the files).
        clock: Unix time in milliseconds, for ``generated_at``.
    """

    def __init__(self, queries: ConnectorQueries, *, home: Path | str, clock: Callable[[], int] = _now_ms):
        self.queries = queries
        self.home = Path(home)
        self.clock = clock
        self._lock = threading.Lock()
        self._pieces: dict[str, dict[str, _Piece]] = {}
        """project id → connector id → its last projected entry."""
        self._catalogs: dict[str, tuple[_Stamp, tuple[ToolSummary, ...]]] = {}
        """connector id → (stamp, fresh catalog reduced to what a snapshot keeps)."""
        self._connectors: dict[str, tuple[tuple[int, int], Connector]] = {}
        """connector id → ((revision, settings revision), the connector as read then)."""
        self._alike: tuple[int, list[Connector], dict[str, _Stamp]] | None = None
        """(store change counter, enabled connectors, catalog stamps) as read at that count."""
        self._rejected: dict[tuple[str, str], tuple[_Piece, RejectedServer]] = {}
        """(project id, connector id) → the entry whose runtime checks failed, and why."""

    def _committed_alike(self) -> tuple[int, list[Connector], dict[str, _Stamp]]:
        """The store's change counter, then the enabled connectors (by name) and the catalog
        stamps as committed at or after it: what every project reads alike, so read again only
        once the counter moved (the projections of the workspaces after one global change read it once)."""
        repository = self.queries.repository
        version = repository.state_version()  # before the reads: a commit during them moves it
        with self._lock:
            alike = self._alike
        if alike is not None and alike[0] == version:
            return version, alike[1], alike[2]
        connectors = [c for c in self._current_connectors() if c.settings.enabled]
        stamps = repository.tool_cache.stamps()
        with self._lock:
            self._alike = (version, connectors, stamps)
        return version, connectors, stamps

    def _current_connectors(self) -> list[Connector]:
        """Every connector as committed now, by name; only those whose revisions moved are read
        (one by one, or all in one query when most did, as on a process's first projection)."""
        repository = self.queries.repository
        stamps = repository.connectors.stamps()
        with self._lock:
            known = dict(self._connectors)
        moved = [cid for cid, stamp in stamps.items() if (seen := known.get(cid)) is None or seen[0] != stamp]
        if len(moved) > max(_BULK_READ, len(stamps) // 4):
            # Stamped with what each row says, not the earlier stamps: a row changed in between
            # is then read again next time.
            current = {c.connector_id: ((c.revision, c.settings.revision), c) for c in repository.connectors.list_all()}
        else:
            current = {cid: known[cid] for cid in stamps if cid in known}
            for connector_id in moved:
                try:
                    connector = repository.connectors.get(connector_id)
                except NotFoundError:
                    current.pop(connector_id, None)
                    continue  # removed since the stamps were read
                current[connector_id] = ((connector.revision, connector.settings.revision), connector)
        with self._lock:
            self._connectors = current
        return sorted((c for _, c in current.values()), key=lambda c: c.name)

    def _tools(self, connector: Connector, stamp: _Stamp) -> tuple[ToolSummary, ...]:
        with self._lock:
            known = self._catalogs.get(connector.connector_id)
        if known is not None and known[0] == stamp:
            return known[1]
        entry = self.queries.repository.tool_cache.get(connector.connector_id)
        fresh = (
            entry is not None
            and entry.config_revision == connector.revision
            and entry.fingerprint == catalog_fingerprint(connector)
        )
        tools = tuple(map(snapshot_tool, entry.tools)) if fresh and entry else ()
        with self._lock:
            self._catalogs[connector.connector_id] = (stamp, tools)
        return tools

    def _pieces_of(self, project: Project) -> tuple[int, list[_Piece]]:
        """The store's change counter and ``project``'s entries as committed at or after it, by
        connector name; unchanged ones reused."""
        version, connectors, stamps = self._committed_alike()
        grants = self.queries.scope_grants(project)
        with self._lock:
            before = self._pieces.get(project.project_id, {})
            others = [known for prj, known in self._pieces.items() if prj != project.project_id]
        pieces: dict[str, _Piece] = {}
        for connector in connectors:
            cid = connector.connector_id
            stamp = stamps.get(cid)
            key = (connector, grants.get(cid, ()), stamp)
            piece = before.get(cid)
            if piece is None or piece.key != key:
                # A connector without project grants reads alike in every project: encode a global
                # change once, not once per workspace.
                piece = next((p for known in others if (p := known.get(cid)) is not None and p.key == key), None)
            if piece is None:
                fresh = (
                    stamp is not None and stamp[0] == connector.revision and stamp[1] == catalog_fingerprint(connector)
                )
                tools = self._tools(connector, stamp) if fresh and stamp is not None else ()
                name, server = project_server(runtime_server(connector, key[1], tools))
                piece = _Piece(key, name, server, _fragment(name, server))
            pieces[cid] = piece
        with self._lock:
            self._pieces[project.project_id] = pieces
            for gone in set(self._catalogs) - set(stamps):
                del self._catalogs[gone]
        return version, sorted(pieces.values(), key=lambda p: p.name)

    def project(self, project: Project) -> Path:
        """Write ``project``'s snapshot from the state committed now; returns its path.

        The state is read under the workspace's lock, so the last projection to finish wrote the
        newest state even when several processes project at once. When the write fails, the
        older file is invalidated (module docstring) and the error's message says so.

        Raises:
            ConfigError: ``invalid_config``: field ``project`` when the workspace is gone or its
                path no longer resolves to itself; field ``snapshot`` when it cannot be written;
                field ``snapshot_key`` when the key or the generation record is unusable.
            CanonicalStateUnavailable: the database cannot be read.
        """
        root = Path(project.path)
        if not root.is_dir() or os.path.realpath(root) != project.path:
            raise ConfigError("project", f"the workspace {project.path} no longer exists (or moved)")

        def body() -> tuple[int, list[bytes]]:
            version, pieces = self._pieces_of(project)
            return version, _body(project.project_id, self.clock(), version, (p.fragment for p in pieces))

        try:
            return _locked_write(root, project.project_id, body, home=self.home)
        except _Locked:
            raise  # the projection holding the lock writes it
        except ConfigError as exc:
            raise ConfigError(exc.field, f"{exc.message.partition(': ')[2]}; {self._invalidate(project)}") from None
        except PatchbayError as exc:  # e.g. the store became unreadable mid-projection
            logger.warning("runtime snapshot of %s not written: %s; %s", project.path, exc, self._invalidate(project))
            raise

    def _invalidate(self, project: Project) -> str:
        """Make every older sealed file of ``project`` unloadable after a failed write: the store's
        counter now becomes its generation (the loader refuses older files), and the file is removed.
        Best effort; returns what was done, for the failure's message."""
        done = []
        try:
            record_generation(self.home, project.project_id, self.queries.repository.state_version())
        except PatchbayError as exc:
            logger.warning("the projection generation of %s was not recorded: %s", project.path, exc.message)
            done.append("its generation could not be recorded")
        done.append(_remove_stale(Path(project.path)))
        return "; ".join(done)

    def runtime_config(self, project: Project) -> RuntimeConfig:
        """``project``'s runtime config as its snapshot would give it, built in memory from the
        state committed now; no file is written or read, so nothing that can write the workspace
        can change it. For runtimes hosted by the control plane's own process.

        A connector whose stored option or target no longer passes the runtime's checks is left
        out and listed in ``rejected`` (:func:`~patchbay.runtime.snapshot.check_server`).

        Raises:
            CanonicalStateUnavailable: the database cannot be read.
        """
        servers: list[RuntimeServer] = []
        rejected: list[RejectedServer] = []
        for piece in self._pieces_of(project)[1]:
            if piece.runtime is None:
                key = (project.project_id, piece.server.connector_id)
                with self._lock:
                    known = self._rejected.get(key)
                if known is not None and known[0] is piece:
                    rejected.append(known[1])
                    continue
                checked = check_server(piece.name, piece.server)
                if isinstance(checked, RejectedServer):
                    with self._lock:
                        self._rejected[key] = (piece, checked)
                    rejected.append(checked)
                    continue
                piece.runtime = checked
            servers.append(piece.runtime)
        return RuntimeConfig(
            project_id=project.project_id, workspace=project.path, servers=tuple(servers), rejected=tuple(rejected)
        )

    def reproject(self, project_id: str | None = None) -> ProjectionReport:
        """Re-project every known workspace, or only ``project_id``'s; never raises for a workspace.

        A workspace that no longer exists is reported ``missing``, one that cannot be written
        ``failed`` (both logged as warnings); the others are still written.
        """
        try:
            repository = self.queries.repository
            projects = repository.projects.list_all() if project_id is None else [repository.projects.get(project_id)]
        except PatchbayError as exc:
            logger.warning("runtime projection skipped: %s", exc)
            return ProjectionReport(error=exc.to_dict())
        results = []
        for project in projects:
            try:
                self.project(project)
            except PatchbayError as exc:
                missing = isinstance(exc, ConfigError) and exc.field == "project"
                status: Literal["missing", "failed"] = "missing" if missing else "failed"
                logger.warning("runtime snapshot of %s not written (%s): %s", project.path, status, exc.message)
                results.append(
                    WorkspaceProjection(
                        project.project_id, project.path, status, None if missing else str(exc.code), exc.message
                    )
                )
            else:
                results.append(WorkspaceProjection(project.project_id, project.path, "written"))
        return ProjectionReport(workspaces=tuple(results))
