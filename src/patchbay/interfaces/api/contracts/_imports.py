"""Contracts of the legacy config import routes and of the deprecated compatibility projections."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from patchbay.control.importer.models import ImportResult
from patchbay.core.models import TransportKind
from patchbay.interfaces.api.contracts._base import RuntimeReload, _Request, _Response
from patchbay.interfaces.api.contracts._connectors import AuthState

__all__ = [
    "MAX_PASTED_CHARS",
    "ImportCommitRequest",
    "ImportCommitted",
    "ImportPreviewRequest",
    "LegacyCatalog",
    "LegacyCatalogServer",
    "LegacyServerSetting",
    "LegacySettings",
    "LegacyToggle",
    "LegacyToggled",
]

# -- legacy config import -------------------------------------------------
# The answers are the importer's own report shapes (ImportPreview, ImportResult, imported above),
# the ones ``patchbay import ... --json`` prints: no field carries a secret value.

_Mapping = Annotated[
    dict[Annotated[str, Field(max_length=200)], Annotated[str, Field(max_length=200)]], Field(max_length=64)
]
MAX_PASTED_CHARS = 1_000_000
"""Longest pasted document accepted (well under the API's body cap)."""

_Paths = Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(max_length=64)]


class ImportPreviewRequest(_Request):
    """``POST /api/mcp/import/preview[?cwd=]``: which files to read. Nothing is started, run or
    connected."""

    paths: _Paths = Field(default_factory=list)
    """Files (relative to the workspace) or host keywords (``claude-desktop``, ``claude-code``,
    ``cursor``, ``vscode``) to read instead of the standard locations."""
    text: Annotated[str, Field(max_length=MAX_PASTED_CHARS)] | None = None
    """A pasted document (JSONC: ``{"mcpServers": {...}}``, ``servers``, or the server map alone),
    read after ``paths``; when given, the standard locations are not read. Its entries' source
    is ``pasted``; a malformed text is a file ``malformed`` with its line and column."""
    inputs: _Mapping = Field(default_factory=dict)
    """VS Code input id → the environment variable that provides it."""
    renames: _Mapping = Field(default_factory=dict)
    """Name in the file → connector name."""
    classify: dict[Annotated[str, Field(min_length=1, max_length=400)], Literal["plain", "credential"]] = Field(
        default_factory=dict, max_length=256
    )
    """``FIELD`` or ``ENTRY:FIELD`` (``env.NODE_ENV``) → how its literal value is stored: ``plain``
    (a setting kept in the connector's config) or ``credential`` (a managed credential),
    overriding the classification by name and value that the preview shows."""


class ImportCommitRequest(ImportPreviewRequest):
    """``POST /api/mcp/import/commit[?cwd=]``: import only the selected definitions, all or none."""

    select: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(min_length=1, max_length=256)]
    """Names (as in the file, or their connector names) to import."""
    references_only: bool = False
    """Refuse plaintext values instead of storing them as managed credentials."""
    enabled: bool | None = None
    """Import enabled or disabled; null keeps what the file says."""


class ImportCommitted(ImportResult):
    """``POST /api/mcp/import/commit``: what was imported, and how the open sessions took it."""

    runtime_reload: RuntimeReload
    """How the open sessions took the change."""


# -- compatibility projections -------------------------------------------------


class LegacyCatalogServer(_Response):
    """One server in the shape of the old catalog (deprecated)."""

    id: str
    name: str
    description: str
    transport: TransportKind
    enabled: bool
    auth: AuthState
    data_egress: str
    tool_count: int
    tools: list[str]


class LegacyCatalog(_Response):
    servers: list[LegacyCatalogServer]


class LegacyServerSetting(_Response):
    server_id: str
    enabled: bool


class LegacyToggled(LegacyServerSetting):
    """The old toggle's answer, plus how the open sessions took the change."""

    runtime_reload: RuntimeReload


class LegacySettings(_Response):
    mcp_servers: list[LegacyServerSetting]


class LegacyToggle(_Request):
    enabled: bool
