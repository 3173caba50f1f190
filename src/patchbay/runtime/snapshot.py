"""The workspace runtime snapshot: its schema and the only way a runtime loads its servers.

The control plane (:mod:`patchbay.control.projection`) writes
``<workspace>/.patchbay/mcp-runtime.json``; a runtime (in this process or another one) reads it with
:func:`load_snapshot` and nothing else: no ``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``
or host file can add a server.

The file (version 1; shown indented, written as compact JSON)::

    {
      "version": 1,
      "project_id": "prj_0123456789abcdef",
      "generated_at": 1757000000000,                 # Unix time, milliseconds
      "state_version": 42,                           # the store's change counter it was projected at
      "servers": {
        "<connector name>": {
          "connector_id": "...", "revision": 3, "settings_revision": 2,
          "target": {"transport": "stdio", "command": "...", "args": [...], "cwd": ""},
          "lifecycle": "lazy",                        # default lazy
          "runtime_config": {...},                    # other non-secret runtime options
          "bindings": [{"ref": "cred_...", "delivery": "env", "name": "API_KEY"}],
          "include_tools": ["get_*"],                 # the connector's globs
          "exclude_tools": ["drop_*", "purge"],       # its globs + every explicit Deny, escaped exact
          "approval_mode": "allow_all",
          "approve_tools": ["send_mail"],             # true for ask/custom; exact Ask names for allow_all
          "allowed_tools": ["get_issue"],             # exact explicit Allow names (global or project)
          "project_overrides": ["get_issue"],         # which explicit entries came from the project
          "tools": [{"name": "get_issue", "annotations": {"readOnlyHint": true}}, {"name": "send_mail"}]
                                                      # the visible cached tools: name, risk hint
        }
      },
      "mac": "hmac-sha256:<64 hex digits>"           # always the last member
    }

**Authenticated.** Whatever can write the workspace (every stdio server runs there, so does an
agent's file tool) could rewrite this file between the control plane's write and a runtime's
load. So the control plane seals it (:func:`seal_snapshot`): ``mac`` is HMAC-SHA-256 over the
exact bytes of the document before it, bound to the project id and the canonical workspace path,
with the data home's key (:mod:`patchbay.adapters.snapshot_key`, 0600, never in the workspace).
:func:`load_snapshot` verifies it before it parses anything; an unsigned, changed or foreign
snapshot (another workspace, project or data home) is refused with ``invalid_config`` and
nothing in it starts. ``state_version`` is inside the sealed bytes, so the MAC binds it too: the
control plane records, per project in the data home, the counter of the newest snapshot it wrote or
tried to write (:func:`~patchbay.adapters.snapshot_key.record_generation`), and the loader refuses
a sealed file older than that record (an older file put back, e.g. from before a deny). Runtimes hosted by the control plane itself need no file: they use the
projection in memory (:func:`snapshot_config`); the file is for runtimes in other processes.

One entry that no longer passes the runtime's checks (:func:`runtime_server`) is left out and
reported in :attr:`RuntimeConfig.rejected`; the others still run. A file that fails as a whole
(unsigned, changed, foreign, stale, malformed) still fails as a whole.

It holds no secret value: targets were checked to carry none when they were stored and credentials
appear as bindings (references), resolved by the runtime when it starts a connector.

How the runtime decides from it (:func:`runtime_server`): a tool matched by ``exclude_tools`` or
not matched by a non-empty ``include_tools`` is invisible (so an explicitly denied tool is never
listed nor sent); a name in ``allowed_tools`` is allowed; a name in the ``approve_tools`` list is
asked; otherwise ``approval_mode`` decides (``ask``/``custom`` ask; ``allow_all`` allows, except
tools annotated ``destructiveHint``, which ask — DESIGN.md "Permissions" step 4). Names are exact:
no pattern in a grant list is ever expanded.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import logging
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from patchbay.adapters.snapshot_key import load_generation, load_key
from patchbay.core.credentials import CredentialBinding, check_bindings
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.models import (
    ApprovalMode,
    ConnectorSettings,
    ConnectorTarget,
    GrantDecision,
    HttpTarget,
    Lifecycle,
    RejectedServer,
    RuntimeConfig,
    RuntimeOptions,
    RuntimeServer,
    SocketTarget,
    ToolSummary,
)
from patchbay.core.names import validate_connector_name
from patchbay.core.oauth import oauth_from_config
from patchbay.core.policy import risk_of
from patchbay.core.validation import validate_http_target, validate_socket_path, validate_stdio_target

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "SNAPSHOT_DIR",
    "SNAPSHOT_FILE",
    "SNAPSHOT_VERSION",
    "RuntimeSnapshot",
    "SnapshotServer",
    "check_server",
    "load_snapshot",
    "parse_snapshot",
    "runtime_server",
    "seal_snapshot",
    "seal_snapshot_parts",
    "snapshot_config",
    "snapshot_path",
    "snapshot_tool",
    "verify_snapshot",
]

SNAPSHOT_VERSION: Final = 1
SNAPSHOT_DIR = ".patchbay"
"""The directory inside a workspace that holds the snapshot (DESIGN.md "Layers")."""
SNAPSHOT_FILE = "mcp-runtime.json"
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""Largest snapshot :func:`load_snapshot` reads (bytes): 32 connectors whose catalogs use the full
``probe_max_metadata_bytes`` (2 MiB each) fit."""

logger = logging.getLogger(__name__)

_ToolName = Annotated[str, StringConstraints(min_length=1, max_length=512)]
_Pattern = Annotated[str, StringConstraints(min_length=1, max_length=1024)]


def snapshot_path(workspace: Path | str) -> Path:
    """``<workspace>/.patchbay/mcp-runtime.json`` (the path is not resolved or checked)."""
    return Path(workspace) / SNAPSHOT_DIR / SNAPSHOT_FILE


_RISK_HINTS: Final[dict[str, dict[str, Any]]] = {
    "read": {"readOnlyHint": True},
    "destructive": {"destructiveHint": True},
}


_KEPT_FIELDS: Final = frozenset({"name", "annotations"})


def snapshot_tool(tool: ToolSummary) -> ToolSummary:
    """What a snapshot keeps of a cached tool: its name (bare names route before the server is
    connected) and the one annotation that sets its risk, if any.

    The runtime reads a cached tool's annotations only through
    :func:`~patchbay.core.policy.risk_of`, so ``risk_of(snapshot_tool(t).annotations) ==
    risk_of(t.annotations)`` and every decision from the snapshot is the same; a tool whose
    annotations claim nothing keeps none (``annotations`` None).
    """
    hints = _RISK_HINTS.get(risk_of(tool.annotations))
    if tool.annotations == hints and tool.model_fields_set <= _KEPT_FIELDS:
        return tool  # already what a snapshot keeps (a projection reduces each catalog once)
    return ToolSummary(name=tool.name, annotations=dict(hints) if hints is not None else None)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SnapshotServer(_Strict):
    """One projected connector; the connector's name is its key in ``servers``."""

    connector_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    revision: int = Field(ge=1)
    """The connector revision it was projected from."""
    settings_revision: int = Field(ge=1)
    """The settings revision it was projected from."""
    target: ConnectorTarget
    lifecycle: Lifecycle
    """``lazy`` unless the connector says otherwise."""
    runtime_config: dict[str, Any]
    """The connector's other runtime options (no ``lifecycle``, no ``bindings``); checked with
    :meth:`RuntimeOptions.parse_strict`."""
    bindings: tuple[CredentialBinding, ...]
    """Credential references; never a value."""
    include_tools: tuple[_Pattern, ...]
    """The connector's ``include_tools`` globs."""
    exclude_tools: tuple[_Pattern, ...]
    """The connector's ``exclude_tools`` globs plus every explicitly denied tool as an escaped,
    exact pattern (``a*`` is written ``a[*]``)."""
    approval_mode: ApprovalMode
    approve_tools: Literal[True] | tuple[_ToolName, ...]
    """``true`` for ``ask``/``custom`` (every tool not in ``allowed_tools`` asks); for
    ``allow_all`` the exact names that ask because of an explicit Ask."""
    allowed_tools: tuple[_ToolName, ...]
    """Exact names of explicitly allowed tools (global or project grants)."""
    project_overrides: tuple[_ToolName, ...]
    """Names in ``allowed_tools``/``approve_tools`` whose decision comes from the project's grant
    rather than a global one; attribution for events only, it grants nothing."""
    tools: tuple[ToolSummary, ...]
    """The cached catalog's visible tools as :func:`snapshot_tool` keeps them: names route bare
    tool names before the server is connected, the risk hint feeds risk and the destructive rule."""
    global_resource_grant: GrantDecision | None = None
    """The connector's resource-read grants, global and the project's, as stored: resource reads
    are their own key space, so they are never spelled as a tool name in the lists above."""
    project_resource_grant: GrantDecision | None = None
    global_prompt_grants: dict[_ToolName, Literal["allow", "deny"]] = Field(default_factory=dict)
    """Prompt grants by prompt name (``*``: every prompt), global and the project's, as stored."""
    project_prompt_grants: dict[_ToolName, Literal["allow", "deny"]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> SnapshotServer:
        asks = self.approve_tools if isinstance(self.approve_tools, tuple) else ()
        if (self.approval_mode == "allow_all") != isinstance(self.approve_tools, tuple):
            raise ValueError("approve_tools must be true for approval_mode ask/custom and a list for allow_all")
        for field, names in (("allowed_tools", self.allowed_tools), ("approve_tools", asks)):
            if len(set(names)) != len(names):
                raise ValueError(f"{field} lists a tool twice")
        if set(asks) & set(self.allowed_tools):
            raise ValueError("a tool is in both allowed_tools and approve_tools")
        if not set(self.project_overrides) <= set(asks) | set(self.allowed_tools):
            raise ValueError("project_overrides names a tool that is neither allowed nor asked")
        if "lifecycle" in self.runtime_config or "bindings" in self.runtime_config:
            raise ValueError("runtime_config must not repeat lifecycle or bindings")
        return self


class RuntimeSnapshot(_Strict):
    """The whole file (``McpRuntimeSnapshot``)."""

    version: Literal[1]
    project_id: Annotated[str, StringConstraints(pattern=r"^prj_[0-9a-f]{16}$")]
    generated_at: int = Field(ge=0)
    """Unix time in milliseconds."""
    servers: dict[str, SnapshotServer]
    state_version: int = Field(default=0, ge=0)
    """The store's change counter read before the state this snapshot was projected from."""


def runtime_server(name: str, server: SnapshotServer) -> RuntimeServer:
    """The :class:`RuntimeServer` a runtime uses for one snapshot entry.

    The connector's settings carry the snapshot's include/exclude patterns (denies included) and
    approval mode; explicit allow and ask names become grants (project ones where
    ``project_overrides`` says so, for ``sourcedFrom``), so :class:`PermissionEngine` decides
    exactly as the module docstring says. The target is checked again as when it was stored.

    Raises:
        ConfigError: ``invalid_config``; ``details["field"]`` is ``servers.<name>.<field>``.
    """
    field = f"servers.{name}"
    try:
        validate_connector_name(name)
        target = server.target
        if isinstance(target, HttpTarget):
            validate_http_target(target.url, target.transport)
        elif isinstance(target, SocketTarget):
            if validate_socket_path(target.path).path != target.path:
                raise ConfigError("socket_path", "must be absolute and normalised")
        else:
            checked = validate_stdio_target(target.command, target.args, target.cwd)
            if checked.cwd != target.cwd:
                raise ConfigError("cwd", "must be a normalised path inside the workspace")
        check_bindings(server.bindings, target.transport)
        # OAuth settings ride along in runtime_config (references only); they are checked by their
        # own model, the rest as runtime options.
        if oauth_from_config(server.runtime_config) is not None and target.transport not in ("streamable_http", "sse"):
            raise ConfigError("oauth", "OAuth is for remote (Streamable HTTP or SSE) connectors")
        options = dict(server.runtime_config)
        plain = {k: v for k, v in options.items() if k != "oauth"}
        RuntimeOptions.parse_strict({**plain, "lifecycle": server.lifecycle}, transport=target.transport)
    except ConfigError as exc:
        raise ConfigError(f"{field}.{exc.field}", exc.message.partition(": ")[2] or exc.message) from None
    asks = server.approve_tools if isinstance(server.approve_tools, tuple) else ()
    explicit: dict[str, GrantDecision] = {tool: "allow" for tool in server.allowed_tools}
    explicit.update({tool: "ask" for tool in asks})
    overrides = set(server.project_overrides)
    return RuntimeServer(
        connector_id=server.connector_id,
        name=name,
        target=target,
        settings=ConnectorSettings(
            enabled=True,
            include_tools=server.include_tools,
            exclude_tools=server.exclude_tools,
            approval_mode=server.approval_mode,
            revision=server.settings_revision,
        ),
        global_grants={tool: d for tool, d in explicit.items() if tool not in overrides},
        project_grants={tool: d for tool, d in explicit.items() if tool in overrides},
        tools=server.tools,
        # The lifecycle travels beside the other options in the file; the runtime reads it from
        # the options, so it goes back in here (or every connector would run lazy).
        runtime_config={**options, "lifecycle": server.lifecycle},
        bindings=server.bindings,
        global_resource_grant=server.global_resource_grant,
        project_resource_grant=server.project_resource_grant,
        global_prompt_grants=dict(server.global_prompt_grants),
        project_prompt_grants=dict(server.project_prompt_grants),
    )


def check_server(name: str, server: SnapshotServer) -> RuntimeServer | RejectedServer:
    """:func:`runtime_server`, or the :class:`RejectedServer` that says why the entry is left out
    (logged as a warning; the message names the field and the rule, never the value)."""
    try:
        return runtime_server(name, server)
    except ConfigError as exc:
        logger.warning("snapshot entry %r left out: %s", name, exc.message)
        return RejectedServer(name=name, field=exc.field, message=exc.message.partition(": ")[2] or exc.message)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:80]!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


_MAC_SCHEME = "hmac-sha256"
_MAC_CONTEXT = "patchbay-snapshot-mac/1"
_BODY_END = b"\n}\n"
_TRAILER = re.compile(rb',\n  "mac": "hmac-sha256:([0-9a-f]{64})"\n}\n\Z')


def _mac(parts: Iterable[bytes], *, key: bytes, project_id: str, workspace: str) -> str:
    # The project and the canonical workspace path are bound in, as a JSON array (unambiguous
    # whatever characters the path holds): a signed snapshot copied into another workspace, or
    # signed for another project, does not verify there.
    context = json.dumps([_MAC_CONTEXT, project_id, workspace], ensure_ascii=True).encode("ascii") + b"\n"
    mac = hmac.new(key, context, hashlib.sha256)
    for part in parts:
        mac.update(part)
    return mac.hexdigest()


def seal_snapshot(body: bytes, *, key: bytes, project_id: str, workspace: str) -> bytes:
    """The file's bytes: ``body`` with a last member ``"mac": "hmac-sha256:<hex>"`` appended.

    The MAC is HMAC-SHA-256 with ``key`` over ``body``'s exact bytes, bound to ``project_id`` and
    ``workspace``; the file stays one JSON object (``mac`` is its last member), which
    :func:`verify_snapshot` strips before anything in it is parsed.

    Args:
        body: the snapshot document as JSON (the control plane writes it compact) whose closing
            brace stands on its own line (so it ends with ``"\\n}\\n"``).
        key: the data home's snapshot key (:func:`patchbay.adapters.snapshot_key.load_or_create_key`).
        project_id: the project the snapshot is for.
        workspace: the workspace's canonical path.

    Raises:
        ValueError: ``body`` is not laid out that way (a programming error, not user input).
    """
    return b"".join(seal_snapshot_parts((body,), key=key, project_id=project_id, workspace=workspace))


def seal_snapshot_parts(parts: Sequence[bytes], *, key: bytes, project_id: str, workspace: str) -> list[bytes]:
    """:func:`seal_snapshot` of ``b"".join(parts)``, left in parts: the same file bytes, never
    joined, for a writer that writes them one after another (a snapshot of many connectors is
    megabytes; each copy of it costs as much as its MAC).

    Args:
        parts: the body in pieces; the last one holds the whole closing ``"\\n}\\n"``.
        key / project_id / workspace: as for :func:`seal_snapshot`.

    Returns:
        ``parts`` with the last one replaced by its sealed end (the other parts are the same objects).

    Raises:
        ValueError: the last part does not end the body that way (or there is none).
    """
    if not parts or not parts[-1].endswith(_BODY_END):
        raise ValueError("a snapshot body must end with a closing brace on its own line")
    mac = _mac(parts, key=key, project_id=project_id, workspace=workspace)
    end = parts[-1][: -len(_BODY_END)] + f',\n  "mac": "{_MAC_SCHEME}:{mac}"\n}}\n'.encode("ascii")
    return [*parts[:-1], end]


def verify_snapshot(data: bytes, *, key: bytes, project_id: str, workspace: str) -> bytes:
    """The signed body of a sealed snapshot file, once its MAC verified (:func:`seal_snapshot`).

    Nothing of the document is parsed before the MAC matched, compared in constant time.

    Raises:
        ConfigError: ``invalid_config`` (field ``snapshot``): the file carries no MAC (unsigned),
            or its MAC does not match (changed after the control plane wrote it, or written for
            another workspace, project or data home).
    """
    found = _TRAILER.search(data)
    if found is None:
        raise ConfigError(
            "snapshot",
            "is not signed by this data home's control plane; refusing it (re-project the workspace)",
        )
    body = data[: found.start()] + _BODY_END
    expected = _mac((body,), key=key, project_id=project_id, workspace=workspace).encode("ascii")
    if not hmac.compare_digest(expected, found.group(1)):
        raise ConfigError(
            "snapshot",
            "does not verify: it was changed after the control plane wrote it, or was written for "
            "another workspace or data home; refusing it and everything in it (re-project the workspace)",
        )
    return body


def parse_snapshot(data: bytes | str, *, project_id: str) -> RuntimeSnapshot:
    """Check a snapshot document: version, then project, then schema.

    Args:
        data: the file's bytes (UTF-8 JSON).
        project_id: the project the caller runs for; a snapshot written for another is refused.

    Raises:
        ConfigError: ``invalid_config`` with ``details["field"]``: ``snapshot`` (not JSON, duplicate
            keys, not an object), ``version`` (missing or not 1), ``project_id`` (written for another
            project; ``details`` also has ``expected`` and ``found``), or the dotted path of the first
            schema error (``servers.time.approve_tools``).
    """
    try:
        document = json.loads(data, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ConfigError("snapshot", f"is not a valid JSON document ({str(exc)[:200]})") from None
    if not isinstance(document, dict):
        raise ConfigError("snapshot", "must be a JSON object")
    version = document.get("version")
    if type(version) is not int or version != SNAPSHOT_VERSION:
        raise ConfigError("version", f"unsupported snapshot version {str(version)[:40]!r}; this runtime reads 1")
    found = document.get("project_id")
    if found != project_id:
        raise ConfigError(
            "project_id",
            f"the snapshot was written for project {str(found)[:40]!r}, not {project_id!r}; "
            "refusing it (re-project this workspace)",
            details={"expected": project_id, "found": found if isinstance(found, str) else None},
        )
    try:
        return RuntimeSnapshot.model_validate_json(data, strict=True)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "snapshot"
        raise ConfigError(where, first["msg"][:300]) from None


def _read(root: Path) -> bytes:
    """The snapshot's bytes, opened without following a symlink at ``.patchbay`` or the file.

    Raises:
        NotFoundError: ``not_found`` when there is no snapshot.
        ConfigError: ``invalid_config`` (field ``snapshot``) for a symlink, a non-regular file, an
            over-large or unreadable file.
    """
    where = snapshot_path(root)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(root / SNAPSHOT_DIR, flags | os.O_DIRECTORY)
    except FileNotFoundError:
        raise NotFoundError(
            f"no runtime snapshot at {where}; project the workspace first", details={"path": str(where)}
        ) from None
    except OSError as exc:
        raise ConfigError("snapshot", f"{root / SNAPSHOT_DIR} cannot be opened ({_why(exc)})") from None
    try:
        try:
            fd = os.open(SNAPSHOT_FILE, flags | os.O_NONBLOCK, dir_fd=dir_fd)
        except FileNotFoundError:
            raise NotFoundError(
                f"no runtime snapshot at {where}; project the workspace first", details={"path": str(where)}
            ) from None
        except OSError as exc:
            raise ConfigError("snapshot", f"{where} cannot be opened ({_why(exc)})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError("snapshot", f"{where} is not a regular file")
            if info.st_size > MAX_SNAPSHOT_BYTES:
                raise ConfigError("snapshot", f"{where} is larger than {MAX_SNAPSHOT_BYTES} bytes")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(MAX_SNAPSHOT_BYTES + 1)
        except OSError as exc:
            raise ConfigError("snapshot", f"{where} cannot be read ({_why(exc)})") from None
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise ConfigError("snapshot", f"{where} is larger than {MAX_SNAPSHOT_BYTES} bytes")
    return data


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link"
    return exc.strerror or type(exc).__name__


def snapshot_config(snapshot: RuntimeSnapshot, workspace: str) -> RuntimeConfig:
    """The :class:`RuntimeConfig` a runtime uses for ``snapshot`` of canonical ``workspace``.

    Every entry goes through :func:`check_server` (targets and options checked again), whether
    the snapshot came from a verified file or was built in memory by the control plane; one that
    fails is left out and listed in ``rejected``, never failing the others.
    """
    # Names are lower case (validated per entry) and JSON keys are unique, so no two entries clash.
    checked = [check_server(name, server) for name, server in snapshot.servers.items()]
    return RuntimeConfig(
        project_id=snapshot.project_id,
        workspace=workspace,
        servers=tuple(s for s in checked if isinstance(s, RuntimeServer)),
        rejected=tuple(s for s in checked if isinstance(s, RejectedServer)),
    )


def load_snapshot(workspace: Path | str, *, project_id: str, home: Path | str) -> RuntimeConfig:
    """The :class:`RuntimeConfig` of ``workspace``, from its projected snapshot and nothing else.

    The file must verify (:func:`verify_snapshot`) with the snapshot key of data home ``home``, for
    ``project_id`` and the workspace's canonical path, before anything in it is used; then version,
    ``project_id`` and schema are checked, and the file must be no older than the projection
    generation ``home`` recorded for the project (a sealed file put back is refused). An entry that
    fails its own checks is left out (``rejected``). No ambient MCP file is read. Neither
    ``.patchbay`` nor the file may be a symlink.

    Args:
        workspace: the workspace directory (symlinks resolved here).
        project_id: the caller's project (``ConnectorService.queries.project(workspace).project_id``).
        home: the data home whose control plane wrote the snapshot (``Settings.home``); its
            ``snapshot.key`` is read, never created.

    Raises:
        NotFoundError: ``not_found`` when the workspace has no snapshot.
        ConfigError: ``invalid_config``: field ``workspace`` (not a directory), ``snapshot_key``
            (no key in ``home``, a symlink or a corrupt key or generation record), ``snapshot``
            (unreadable, unsigned, tampered, foreign, or older than the last projection),
            ``version``, ``project_id`` or ``servers.<name>...`` (a schema error).
    """
    try:
        root = Path(os.path.realpath(workspace))
        if not root.is_dir():
            raise ConfigError("workspace", f"{str(workspace)[:200]!r} is not a directory")
    except (OSError, ValueError) as exc:
        raise ConfigError("workspace", f"{str(workspace)[:200]!r} cannot be used ({exc})") from None
    data = _read(root)
    body = verify_snapshot(data, key=load_key(home), project_id=project_id, workspace=str(root))
    snapshot = parse_snapshot(body, project_id=project_id)
    expected = load_generation(home, project_id)
    if snapshot.state_version < expected:
        raise ConfigError(
            "snapshot",
            f"is older than the last projection of this workspace (state {snapshot.state_version}, "
            f"expected at least {expected}): an earlier file was put back, or the last write failed; "
            "refusing it and everything in it (re-project the workspace)",
            details={"expected": expected, "found": snapshot.state_version},
        )
    return snapshot_config(snapshot, str(root))
