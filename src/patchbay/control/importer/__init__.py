"""Legacy MCP config import (seed 003 §12): discover host files, preview, commit.

Modules, by concept:

* :mod:`.discovery` — the standard locations, named host files, bounded reading;
* :mod:`.jsonc` — JSONC parsing with line/column errors;
* :mod:`.placeholders` — ``${VAR}``, ``${env:VAR}``, ``$env:VAR``, ``${input:id}``, ``!command``…;
* :mod:`.normalise` — one host definition → the connector Patchbay would store;
* :mod:`.values` — the draft it produces, and how single values (env, headers, paths) are read;
* :mod:`.envfile` — VS Code/Cursor ``envFile`` reading;
* :mod:`.preview` — the per-entry report and normalised diff;
* :mod:`.commit` — the one-transaction import of selected entries;
* :mod:`.models` — the public report shapes (no secret values).

Usage::

    service = ConnectorService(open_store(settings), settings)
    report = preview_import(service, workspace=Path("."), home=Path.home())
    commit_import(service, select=["github"], workspace=Path("."), home=Path.home())
"""

from patchbay.control.importer.commit import commit_import
from patchbay.control.importer.discovery import HOST_KEYWORDS
from patchbay.control.importer.jsonc import parse_jsonc
from patchbay.control.importer.models import ImportedConnector, ImportPreview, ImportResult, PreviewEntry
from patchbay.control.importer.preview import preview_import

__all__ = [
    "HOST_KEYWORDS",
    "ImportPreview",
    "ImportResult",
    "ImportedConnector",
    "PreviewEntry",
    "commit_import",
    "parse_jsonc",
    "preview_import",
]
