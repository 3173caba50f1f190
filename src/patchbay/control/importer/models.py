"""What an import preview and an import commit report.

These are the public shapes (CLI ``--json``, later the API): no field ever carries a secret value. A
plaintext value shows only as ``configured: true``, a ``!command`` helper only by the program it
would run (``run: false``), a URL with a secret in it redacted.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field

__all__ = [
    "BindingView",
    "CandidateView",
    "ConflictView",
    "FileView",
    "HelperView",
    "ImportCandidates",
    "ImportPreview",
    "ImportResult",
    "ImportedConnector",
    "InputView",
    "Issue",
    "PathView",
    "PreviewEntry",
    "SecretView",
    "SourceView",
]


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Issue(_View):
    """A loss (imported, but not exactly as the host ran it) or a problem (not importable)."""

    field: str
    """Where, e.g. ``env.GITHUB_TOKEN``, ``type``, ``args[2]``."""
    code: str
    """Stable: e.g. ``default_dropped``, ``needs_input``, ``helper_not_run``, ``cwd_outside_workspace``."""
    message: str
    """One sentence; never quotes a value."""


class SourceView(_View):
    """Where a definition was read, and its precedence (1 wins over 2, ...)."""

    path: str
    label: str
    host: str
    origin: Literal["standard", "named", "pasted"]
    scope: str
    """``file``; for Claude Code's ``~/.claude.json``: ``local``, ``user`` or ``project:<path>``."""
    root_key: str
    precedence: int


class BindingView(_View):
    """One environment variable or header the connector will get, without its value."""

    field: str
    delivery: Literal["env", "header", "bearer"]
    name: str
    source: Literal["environment", "managed", "plain", "input", "helper", "unresolved"]
    """``environment``: a reference to Patchbay's ``$variable`` (no value stored); ``managed``: a
    plaintext value that commit stores as a managed credential; ``plain``: a setting that is not a
    secret, kept in the connector's config (``NODE_ENV=production``); ``input``/``helper``/
    ``unresolved``: cannot be imported as written. Literal values are classified by name and value
    (a secret-looking one is ``managed``, the rest ``plain``); ``classify`` overrides it."""
    variable: str | None = None
    configured: bool = True
    sensitive: bool = False
    """A suspected secret: its name or shape looks like one (``*_TOKEN``, ``Authorization``, ``ghp_…``)."""
    has_default: bool = False
    """An environment reference with a default (``${VAR:-x}``, ``${VAR-x}``): kept with the reference."""
    default_mode: Literal["unset", "unset_or_empty"] | None = None
    """When the default applies: ``unset_or_empty`` (``${VAR:-x}``) or ``unset`` (``${VAR-x}``)."""
    plain: str | None = None
    """A ``plain`` setting's value (not a secret, so it is shown); else None."""
    default: str | None = None
    """An environment reference's default when it is not a secret; else None."""


class SecretView(_View):
    """A suspected plaintext secret: shown only as configured."""

    field: str
    configured: Literal[True] = True


class HelperView(_View):
    """A ``!command`` helper; it was not run, and never is."""

    field: str
    program: str
    run: Literal[False] = False


class InputView(_View):
    """A VS Code ``${input:id}``: the host would prompt the user for it."""

    field: str
    id: str
    masked: bool
    """The host prompts for it as a hidden value (VS Code ``"password": true``): likely a secret."""
    defined: bool
    """Whether the file's ``inputs`` define it."""
    mapped_to: str | None = None
    """The environment variable ``--input ID=VAR`` maps it to, if any."""


class PathView(_View):
    field: str
    path: str


class ConflictView(_View):
    """An existing connector with the same name (case-insensitive)."""

    connector: str
    connector_id: str
    same_target: bool


class PreviewEntry(_View):
    """One server definition, normalised."""

    name: str
    """The name in the file."""
    import_name: str | None
    """The connector name it would get (normalised, or from ``--rename``); None if none fits."""
    source: SourceView
    effective: bool
    """False when a definition of higher precedence has the same import name."""
    shadowed_by: SourceView | None = None
    transport: str | None
    transport_spelling: str | None
    """How the file said it: ``type: "streamableHttp"``, ``inferred from url (/sse)`` ..."""
    target: dict[str, Any] | None
    """``command``/``args``/``cwd``, ``url`` or ``socket_path``, secrets redacted."""
    enabled: bool
    bindings: list[BindingView]
    plaintext: list[SecretView]
    """Suspected plaintext secrets (the key is named so that output redaction leaves the list visible)."""
    helpers: list[HelperView]
    inputs: list[InputView]
    needs_input: bool
    conflict: ConflictView | None = None
    outside_workspace: list[PathView]
    lossless: bool
    losses: list[Issue]
    problems: list[Issue]
    importable: bool
    """No problem, no conflict, effective: ``commit --select`` accepts it."""
    diff: list[str]
    """A unified diff from the (masked) definition to the connector Patchbay would store."""


class FileView(_View):
    path: str
    label: str
    host: str
    origin: Literal["standard", "named", "pasted"]
    status: Literal["ok", "absent", "missing", "malformed", "invalid", "unreadable"]
    error: dict[str, Any] | None = None
    """``{"code", "message", "details"}``; for ``malformed`` the details hold ``line`` and ``column``."""
    warnings: list[str] = []
    entries: int = 0


class ImportPreview(_View):
    """The result of a preview: every file looked at, every definition found."""

    workspace: str
    files: list[FileView]
    entries: list[PreviewEntry]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """Whether every file could be read (absent standard files are fine)."""
        return all(f.status in ("ok", "absent") for f in self.files)


class ImportedConnector(_View):
    name: str
    """The name in the file."""
    connector: str
    connector_id: str
    transport: str
    source: str
    bindings: list[dict[str, Any]]
    """As ``patchbay connector show --json`` lists them (references, never values)."""


class ImportResult(_View):
    imported: list[ImportedConnector]


class CandidateView(_View):
    """A file an import can read (:func:`~patchbay.control.importer.sources.list_sources`)."""

    path: str
    label: str
    """``workspace .mcp.json``, ``~/.config/mcp/mcp.json``; a host file's keyword (``claude-code``)."""
    host: str
    kind: Literal["standard", "host"]
    """``standard``: read by a preview that names no file; ``host``: read only when named."""
    select: str
    """What to name in ``paths`` to read it: the absolute path, or the host keyword."""
    exists: bool
    """Whether it is a regular file now (it was not read)."""


class ImportCandidates(_View):
    """The files an import of ``workspace`` can read, standard locations first."""

    workspace: str
    files: list[CandidateView]
