"""Import commit: only the selected definitions, all or nothing.

Commit scans the files again (never trusting an earlier preview), refuses unless every selected
entry is importable, then stores the connectors (``source = "imported"``, references only) and
their new credentials in one transaction, and re-projects every known workspace.

Design: docs/importer.md
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Unpack

from patchbay.adapters.credentials import StoredCredential
from patchbay.control.connectors import ConnectorService
from patchbay.control.importer.models import ImportedConnector, ImportResult
from patchbay.control.importer.normalise import connector_name_for
from patchbay.control.importer.preview import ImportSources, Scan, ScannedEntry, scan
from patchbay.control.options import checked_options, merge_runtime_options
from patchbay.core.credentials import BINDINGS_KEY
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.models import ConnectorSettings

__all__ = ["commit_import"]


def _refuse(field: str, message: str, **details: Any) -> ConfigError:
    return ConfigError(field, message, details=details)


def _check_files(result: Scan) -> None:
    for item in result.loaded:
        if item.status not in ("ok", "absent") and item.error is not None:
            raise item.error


def _chosen(result: Scan, select: Sequence[str]) -> list[ScannedEntry]:
    chosen: list[ScannedEntry] = []
    for wanted in dict.fromkeys(select):
        matches = [
            e
            for e in result.entries
            if e.entry.effective and wanted in (e.entry.name, e.entry.import_name, connector_name_for(e.entry.name))
        ]
        if not matches:
            raise NotFoundError(f"no definition named {wanted!r} in the files scanned", details={"name": wanted})
        if len({id(m) for m in matches}) > 1:
            raise _refuse("select", f"{wanted!r} names more than one definition; select by the name in the file")
        entry = matches[0]
        if any(entry is c for c in chosen):
            continue
        view = entry.entry
        if view.conflict is not None:
            raise _refuse(
                "select",
                f"{view.name}: a connector named {view.conflict.connector!r} exists; import it under another "
                f"name with --rename {view.name}=NEW",
                entry=view.name,
                conflict=view.conflict.model_dump(),
            )
        if view.problems:
            first = view.problems[0]
            raise _refuse(
                "select",
                f"{view.name} cannot be imported: {first.field}: {first.message}",
                entry=view.name,
                problems=[p.model_dump() for p in view.problems],
            )
        chosen.append(entry)
    return chosen


def _display_name(name: str, fallback: str) -> str:
    return name if name.strip() and name.isprintable() and len(name) <= 200 else fallback


def commit_import(
    service: ConnectorService,
    *,
    select: Sequence[str],
    workspace: Path,
    home: Path,
    references_only: bool = False,
    enabled: bool | None = None,
    **sources: Unpack[ImportSources],
) -> ImportResult:
    """Import the selected definitions as connectors, in one transaction.

    Args:
        select: names of definitions (as in the file, or their connector name) to import.
        workspace, home: as for :func:`~patchbay.control.importer.preview.preview_import`.
        sources: ``paths``, ``cwd``, ``inputs``, ``renames``: see
            :class:`~patchbay.control.importer.preview.ImportSources`.
        references_only: refuse plaintext values instead of storing them as managed credentials.
        enabled: import enabled/disabled; None keeps what the file says (default enabled).

    Raises:
        ConfigError: ``invalid_config``: nothing selected (field ``select``); an entry that is not
            importable, conflicts with a connector or is ambiguous (``select``, with ``details``
            ``entry`` and ``problems``/``conflict``); plaintext values with ``references_only``
            (``references_only``, ``details["fields"]``); see :func:`scan`.
        MalformedConfigError: a scanned file is malformed (``invalid_config`` with line/column).
        NotFoundError: ``not_found``: a selected name is in no file, or a named file is missing.
        CanonicalStateUnavailable: the database or credential store cannot be written; nothing
            is kept.
    """
    if not select:
        raise ConfigError("select", "name at least one definition to import (--select NAME)")
    result = scan(service, workspace=workspace, home=home, **sources)
    _check_files(result)
    chosen = _chosen(result, select)
    if references_only:
        plain = {e.entry.name: [b.field for b in e.draft.bindings if b.source == "managed"] for e in chosen}
        plain = {name: fields for name, fields in plain.items() if fields}
        if plain:
            name, fields = next(iter(plain.items()))
            raise _refuse(
                "references_only",
                f"{name}: {', '.join(fields)} hold plaintext values; with --references-only only ${{VAR}} "
                "references are imported (replace them with ${VAR} in the file, or import without the flag "
                "to store them as managed credentials)",
                fields=plain,
            )
    items: list[dict[str, Any]] = []
    records: list[list[StoredCredential]] = []
    shown = {c.display_name.casefold() for c in service.list_connectors()}

    def shown_as(file_name: str, connector: str) -> str:
        # A display name another connector already shows (an entry renamed out of a conflict) is
        # not repeated: two rows reading the same would hide which is which.
        display = _display_name(file_name, connector)
        display = connector if display.casefold() in shown else display
        shown.add(display.casefold())
        return display

    for entry in chosen:
        draft, view = entry.draft, entry.entry
        assert draft.target is not None and draft.import_name is not None
        config = merge_runtime_options({}, draft.options)
        checked_options(config, draft.target)
        specs = [b.spec for b in draft.bindings if b.spec is not None]
        new_records, stored = service.credentials.prepare_new(draft.target.transport, specs)
        if stored:
            config[BINDINGS_KEY] = stored
        records.append(new_records)
        items.append(
            {
                "name": draft.import_name,
                "display_name": shown_as(draft.name, draft.import_name),
                "target": draft.target,
                "description": draft.description or f"imported from {view.source.path}"[:1000],
                "source": "imported",
                "runtime_config": config,
                "settings": ConnectorSettings(
                    enabled=draft.enabled if enabled is None else enabled,
                    include_tools=draft.include_tools,
                    exclude_tools=draft.exclude_tools,
                ),
            }
        )
    connectors = service.credentials.create_with(
        lambda before_commit: service.repository.connectors.create_many(items, before_commit=before_commit), records
    )
    return service._reprojected(  # a committed mutation re-projects every known workspace
        _result(service, chosen, connectors)
    )


def _result(service: ConnectorService, chosen: list[ScannedEntry], connectors: list[Any]) -> ImportResult:
    return ImportResult(
        imported=[
            ImportedConnector(
                name=entry.entry.name,
                connector=connector.name,
                connector_id=connector.connector_id,
                transport=connector.transport,
                source=entry.entry.source.path,
                bindings=service.credentials.binding_views(connector),
            )
            for entry, connector in zip(chosen, connectors, strict=True)
        ]
    )
