"""Legacy MCP config import: discover host files, preview, commit.

Modules, by concept:

* :mod:`.discovery` — the standard locations, named host files, bounded reading;
* :mod:`.jsonc` — JSONC parsing with line/column errors;
* :mod:`.placeholders` — ``${VAR}``, ``${env:VAR}``, ``$env:VAR``, ``${input:id}``, ``!command``…;
* :mod:`.normalise` — one host definition → the connector Patchbay would store;
* :mod:`.values` — the draft it produces, and how single values (env, headers, paths) are read;
* :mod:`.envfile` — VS Code/Cursor ``envFile`` reading;
* :mod:`.sources` — the files an import can read, listed for a picker;
* :mod:`.preview` — the per-entry report and normalised diff;
* :mod:`.commit` — the one-transaction import of selected entries;
* :mod:`.models` — the public report shapes (no secret values).

Usage::

    service = ConnectorService(open_store(settings), settings)
    report = preview_import(service, workspace=Path("."), home=Path.home())
    commit_import(service, select=["github"], workspace=Path("."), home=Path.home())

Design: docs/importer.md
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from patchbay.control.importer.discovery import HOST_KEYWORDS
from patchbay.control.importer.jsonc import parse_jsonc

if TYPE_CHECKING:
    from patchbay.control.importer.commit import commit_import
    from patchbay.control.importer.models import (
        ImportCandidates,
        ImportedConnector,
        ImportPreview,
        ImportResult,
        PreviewEntry,
    )
    from patchbay.control.importer.preview import preview_import
    from patchbay.control.importer.sources import list_sources

_MODELS = "patchbay.control.importer.models"
_LAZY = {
    "commit_import": "patchbay.control.importer.commit",
    "preview_import": "patchbay.control.importer.preview",
    "list_sources": "patchbay.control.importer.sources",
    "ImportCandidates": _MODELS,
    "ImportedConnector": _MODELS,
    "ImportPreview": _MODELS,
    "ImportResult": _MODELS,
    "PreviewEntry": _MODELS,
}
"""Imported on first use (PEP 562): the functions need the connector service, and the CLI, which
names :data:`HOST_KEYWORDS` in its help, must not load the store and the runtime behind them, nor
the report models, for commands that import nothing."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'patchbay.control.importer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "HOST_KEYWORDS",
    "ImportCandidates",
    "ImportPreview",
    "ImportResult",
    "ImportedConnector",
    "PreviewEntry",
    "commit_import",
    "list_sources",
    "parse_jsonc",
    "preview_import",
]
