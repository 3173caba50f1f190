"""cellguide: the built-in connector for CZ CELLxGENE CellGuide (3 read-only tools).

CellGuide publishes versioned static JSON on one public origin: ``/latest_snapshot_identifier``
names the current snapshot, and every file lives under ``/<snapshot>/``:

* ``search_cell_types``: cell types whose name, synonym or Cell Ontology id matches a query, from
  the snapshot's ``celltype_metadata.json`` (offset paging with ``next_cursor``).
* ``get_cell_type``: one cell type by Cell Ontology id (``CL:0000540``): name, synonyms, the
  ontology description (cut) and the CellGuide page.
* ``get_marker_genes``: a cell type's marker genes, computational (``computational_marker_genes``,
  ranked by marker score, optionally one organism or tissue) or canonical (``canonical_marker_genes``,
  curated from the literature, with publication counts); offset paging.

The snapshot identifier and the cell type metadata are cached inside the server process for one
hour (:data:`METADATA_TTL`), so a session's searches fetch them once. Run: ``python -I -m
patchbay.connectors.cellguide``.

Design: docs/builtins.md
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from patchbay.connectors._http import Fetched, Origin, SourceClient, json_object
from patchbay.connectors._records import clip
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance
from patchbay.core.errors import ErrorCode, SourceError

__all__ = ["METADATA_TTL", "NAME", "ORIGINS", "TOOLS"]

NAME = "cellguide"
SOURCE = "CELLxGENE CellGuide"
ORIGINS = {"cellguide": Origin(SOURCE, "https://cellguide.cellxgene.cziscience.com", per_second=5)}
PAGE_URL = "https://cellxgene.cziscience.com/cellguide/"
METADATA_TTL = 3600.0
"""Seconds the snapshot identifier and the cell type metadata are reused in one server process."""
_SNAPSHOT = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_MAX_OFFSET = 10_000

CellTypeId = Annotated[
    str, Field(pattern=r"^CL:[0-9]{7}$", description="A Cell Ontology id, e.g. CL:0000540 (neuron).")
]
Offset = Annotated[
    int | None,
    Field(default=None, ge=0, le=_MAX_OFFSET, description="next_cursor of the previous page; omit for the first page."),
]


@dataclass(frozen=True, slots=True)
class _Metadata:
    snapshot: str
    cell_types: dict[str, dict[str, Any]]
    endpoint: str
    retrieved_at: str
    loaded: float


_snapshots: dict[str, tuple[str, float]] = {}
_metadata_cache: dict[str, _Metadata] = {}


async def _snapshot(http: SourceClient) -> str:
    """The current CellGuide snapshot id, from the process cache when younger than an hour."""
    key = http.base_of("cellguide")
    cached = _snapshots.get(key)
    if cached is not None and time.monotonic() - cached[1] < METADATA_TTL:
        return cached[0]
    fetched = await http.get("cellguide", "/latest_snapshot_identifier")
    snapshot = fetched.body.decode("utf-8", "replace").strip()
    if not _SNAPSHOT.fullmatch(snapshot):
        raise SourceError(
            f"{SOURCE} answered with a snapshot identifier it does not document",
            code=ErrorCode.SOURCE_BAD_RESPONSE,
            details={"source": SOURCE, "status": fetched.status},
        )
    _snapshots[key] = (snapshot, time.monotonic())
    return snapshot


async def _metadata(http: SourceClient) -> _Metadata:
    """The current snapshot's cell type metadata, from the process cache when younger than an hour."""
    snapshot = await _snapshot(http)
    key = http.base_of("cellguide")
    cached = _metadata_cache.get(key)
    if cached is not None and cached.snapshot == snapshot and time.monotonic() - cached.loaded < METADATA_TTL:
        return cached
    fetched = await http.get("cellguide", f"/{snapshot}/celltype_metadata.json")
    data = json_object(fetched, SOURCE)
    cell_types = {
        term: entry
        for term, entry in data.items()
        if isinstance(term, str) and term.startswith("CL:") and isinstance(entry, dict)
    }
    loaded = _Metadata(snapshot, cell_types, fetched.endpoint, fetched.retrieved_at, time.monotonic())
    _metadata_cache[key] = loaded
    return loaded


def _synonyms(entry: dict[str, Any]) -> list[str]:
    return [clip(name, 120) for name in entry.get("synonyms") or [] if isinstance(name, str) and name.strip()]


def _cell_type(term: str, entry: dict[str, Any], *, description: int) -> dict[str, Any]:
    synonyms = _synonyms(entry)
    return {
        "id": term,
        "name": clip(entry.get("name"), 200),
        "synonyms": synonyms[:5],
        "synonyms_total": len(synonyms),
        "description": clip(entry.get("clDescription"), description),
        "url": PAGE_URL + term.replace(":", "_"),
    }


def _rank(term: str, entry: dict[str, Any], needle: str) -> int | None:
    """0 (best) to 4 for a match of ``needle`` (lowercased); None for no match."""
    name = str(entry.get("name") or "").lower()
    synonyms = [name.lower() for name in _synonyms(entry)]
    if needle in (term.lower(), name):
        return 0
    if needle in synonyms:
        return 1
    if name.startswith(needle):
        return 2
    if needle in name:
        return 3
    if any(needle in synonym for synonym in synonyms):
        return 4
    return None


def _following(offset: int, shown: int, total: int) -> int | None:
    after = offset + shown
    return after if shown and after < total and after <= _MAX_OFFSET else None


class CellTypeSearch(Arguments):
    query: str = Field(min_length=1, max_length=200, description="A cell type name, synonym or CL id.")
    page_size: int = Field(default=10, ge=1, le=25, description="Records per page.")
    cursor: Offset


async def search_cell_types(args: CellTypeSearch, http: SourceClient) -> dict[str, Any]:
    metadata = await _metadata(http)
    needle = " ".join(args.query.lower().split())
    ranked = sorted(
        (rank, str(entry.get("name") or "").lower(), term)
        for term, entry in metadata.cell_types.items()
        if (rank := _rank(term, entry, needle)) is not None
    )
    offset = args.cursor or 0
    page = ranked[offset : offset + args.page_size]
    records = [_cell_type(term, metadata.cell_types[term], description=300) for _, _, term in page]
    request = {"query": args.query, "page_size": args.page_size, "offset": offset, "snapshot": metadata.snapshot}
    return {
        "provenance": provenance(SOURCE, metadata.endpoint, metadata.retrieved_at, request),
        "total": len(ranked),
        "records": records,
        "next_cursor": _following(offset, len(records), len(ranked)),
    }


class CellTypeDetail(Arguments):
    cell_type: CellTypeId


async def get_cell_type(args: CellTypeDetail, http: SourceClient) -> dict[str, Any]:
    metadata = await _metadata(http)
    entry = metadata.cell_types.get(args.cell_type)
    request = {"cell_type": args.cell_type, "snapshot": metadata.snapshot}
    return {
        "provenance": provenance(SOURCE, metadata.endpoint, metadata.retrieved_at, request),
        "found": entry is not None,
        "record": None if entry is None else _cell_type(args.cell_type, entry, description=1200),
    }


class MarkerGenes(Arguments):
    cell_type: CellTypeId
    kind: Literal["computational", "canonical"] = Field(
        default="computational",
        description="computational: ranked from CELLxGENE data; canonical: curated from publications.",
    )
    organism: Literal["Homo sapiens", "Mus musculus"] | None = Field(
        default=None, description="computational only: keep one organism."
    )
    tissue: str | None = Field(
        default=None, min_length=1, max_length=100, description="Keep markers of this tissue (exact label, any case)."
    )
    page_size: int = Field(default=20, ge=1, le=50, description="Records per page.")
    cursor: Offset


def _computational(item: dict[str, Any]) -> dict[str, Any]:
    dims = item.get("groupby_dims") or {}
    return {
        "symbol": clip(item.get("symbol"), 40),
        "name": clip(item.get("name"), 200),
        "gene_id": clip(item.get("gene_ontology_term_id"), 40) or None,
        "marker_score": _number(item.get("marker_score")),
        "specificity": _number(item.get("specificity")),
        "mean_expression": _number(item.get("me")),
        "percent_cells": _number(item.get("pc")),
        "organism": clip(dims.get("organism_ontology_term_label"), 100) or None,
        "tissue": clip(dims.get("tissue_ontology_term_label"), 100) or None,
    }


def _canonical(item: dict[str, Any]) -> dict[str, Any]:
    publications = _joined(item.get("publication"))
    titles = _joined(item.get("publication_titles"))
    return {
        "symbol": clip(item.get("symbol"), 40),
        "name": clip(item.get("name"), 200),
        "tissue": clip(item.get("tissue"), 100) or None,
        "publications": [clip(ref, 120) for ref in publications[:3]],
        "publications_total": len(publications),
        "publication_titles": [clip(title, 200) for title in titles[:2]],
    }


def _joined(value: object) -> list[str]:
    """CellGuide joins a marker's publications (and their titles) with ``;;``."""
    parts = value if isinstance(value, list) else str(value or "").split(";;")
    return [part.strip() for part in parts if isinstance(part, str) and part.strip()]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(float(value), 4)


async def get_marker_genes(args: MarkerGenes, http: SourceClient) -> dict[str, Any]:
    snapshot = await _snapshot(http)
    folder = f"{args.kind}_marker_genes"
    try:
        fetched = await http.get("cellguide", f"/{snapshot}/{folder}/{args.cell_type.replace(':', '_')}.json")
    except SourceError as exc:
        # CellGuide has no file for a cell type without markers: the static host answers 403/404.
        if exc.code != ErrorCode.SOURCE_BAD_RESPONSE or (exc.details or {}).get("status") not in (403, 404):
            raise
        items: list[Any] = []
        endpoint, retrieved_at = http.base_of("cellguide") + f"/{snapshot}/{folder}/", _now()
    else:
        items = _json_list(fetched)
        endpoint, retrieved_at = fetched.endpoint, fetched.retrieved_at
    shape = _computational if args.kind == "computational" else _canonical
    records = [shape(item) for item in items if isinstance(item, dict)]
    if args.organism and args.kind == "computational":
        records = [record for record in records if record["organism"] == args.organism]
    if args.tissue:
        wanted = args.tissue.strip().lower()
        records = [record for record in records if (record["tissue"] or "").lower() == wanted]
    if args.kind == "computational":
        records.sort(key=lambda record: -(record["marker_score"] or 0.0))
    offset = args.cursor or 0
    page = records[offset : offset + args.page_size]
    request: dict[str, Any] = {
        "cell_type": args.cell_type,
        "kind": args.kind,
        "page_size": args.page_size,
        "offset": offset,
        "snapshot": snapshot,
    }
    request.update({name: value for name, value in (("organism", args.organism), ("tissue", args.tissue)) if value})
    return {
        "provenance": provenance(SOURCE, endpoint, retrieved_at, request),
        "cell_type": args.cell_type,
        "total": len(records),
        "records": page,
        "next_cursor": _following(offset, len(page), len(records)),
    }


def _json_list(fetched: Fetched) -> list[Any]:
    """``fetched``'s body as a JSON list (a marker file is one)."""
    try:
        data = json.loads(fetched.body)
    except ValueError:
        data = None
    if not isinstance(data, list):
        raise SourceError(
            f"{SOURCE} answered with something that is not a JSON list",
            code=ErrorCode.SOURCE_BAD_RESPONSE,
            details={"source": SOURCE, "status": fetched.status},
        )
    return data


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


TOOLS = (
    BuiltinTool(
        "search_cell_types",
        "Search cell types (CellGuide)",
        "Search CELLxGENE CellGuide cell types by name, synonym or Cell Ontology id; page with next_cursor.",
        CellTypeSearch,
        search_cell_types,
    ),
    BuiltinTool(
        "get_cell_type",
        "Cell type detail (CellGuide)",
        "One CellGuide cell type by Cell Ontology id (CL:0000540): name, synonyms, description (cut), page link.",
        CellTypeDetail,
        get_cell_type,
    ),
    BuiltinTool(
        "get_marker_genes",
        "Marker genes of a cell type (CellGuide)",
        "Marker genes of a cell type: computational (ranked by marker score, by organism/tissue) or canonical "
        "(curated, with publications); page with next_cursor.",
        MarkerGenes,
        get_marker_genes,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, ORIGINS)
