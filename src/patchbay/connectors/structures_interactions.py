"""structures-interactions: the built-in connector for RCSB PDB and AlphaFold DB (3 read-only tools).

* ``search_structures``: PDB entries matching a full-text search (RCSB Search API v2,
  ``search.rcsb.org/rcsbsearch/v2/query``), optionally by experimental method and a resolution
  bound; offset paging. The search request is one JSON document whose shape is fixed in this
  module: the model's text and the typed options only fill its values (``json.dumps``, never
  string splicing), so no other service, operator or field can be asked for.
* ``get_entry``: one PDB entry by its id (RCSB Data API ``data.rcsb.org/rest/v1/core/entry/{id}``):
  title, method, resolution, dates, counts, primary citation.
* ``get_alphafold_prediction``: the AlphaFold DB models of a UniProt accession
  (``alphafold.ebi.ac.uk/api/prediction/{accession}``): model id, version, mean pLDDT, files.

Rate: 5 requests/s to each host. Run: ``python -I -m patchbay.connectors.structures_interactions``.

Design: docs/builtins.md
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from patchbay.connectors._http import Origin, SourceClient, json_object
from patchbay.connectors._records import as_int, authors, clip
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance
from patchbay.core.errors import ErrorCode, SourceError

__all__ = ["NAME", "ORIGINS", "TOOLS"]

NAME = "structures-interactions"
RCSB = "RCSB PDB"
ALPHAFOLD = "AlphaFold DB"
ORIGINS = {
    "rcsb_search": Origin(RCSB, "https://search.rcsb.org", per_second=5),
    "rcsb_data": Origin(RCSB, "https://data.rcsb.org", per_second=5),
    "alphafold": Origin(ALPHAFOLD, "https://alphafold.ebi.ac.uk", per_second=5),
}
SEARCH_PATH = "/rcsbsearch/v2/query"
MAX_START = 9_975
"""The largest offset a search page may start at."""
METHODS = {
    "xray": "X-RAY DIFFRACTION",
    "em": "ELECTRON MICROSCOPY",
    "nmr": "SOLUTION NMR",
}
PdbId = Field(pattern=r"^[0-9][A-Za-z0-9]{3}$", description="A four-character PDB id, e.g. 4HHB.")


def _terminal(attribute: str, operator: str, value: str | float) -> dict[str, Any]:
    return {
        "type": "terminal",
        "service": "text",
        "parameters": {"attribute": attribute, "operator": operator, "value": value},
    }


class StructureSearch(Arguments):
    query: str = Field(min_length=1, max_length=300, description="Full-text search terms.")
    method: Literal["xray", "em", "nmr"] | None = Field(default=None, description="Experimental method.")
    max_resolution: float | None = Field(
        default=None, gt=0, le=50, description="Keep entries with a resolution at or below this (Å)."
    )
    page_size: int = Field(default=10, ge=1, le=50, description="Entries per page.")
    cursor: int | None = Field(default=None, ge=0, le=MAX_START, description="next_cursor of the previous page.")


def search_document(args: StructureSearch) -> dict[str, Any]:
    """The RCSB search request for ``args``: a fixed shape whose values are ``args``' values.

    Args:
        args: validated search arguments.

    Returns:
        The JSON document (a dict) sent as the ``json`` query parameter.
    """
    nodes: list[dict[str, Any]] = [{"type": "terminal", "service": "full_text", "parameters": {"value": args.query}}]
    if args.method is not None:
        nodes.append(_terminal("exptl.method", "exact_match", METHODS[args.method]))
    if args.max_resolution is not None:
        nodes.append(_terminal("rcsb_entry_info.resolution_combined", "less_or_equal", args.max_resolution))
    query = nodes[0] if len(nodes) == 1 else {"type": "group", "logical_operator": "and", "nodes": nodes}
    return {
        "query": query,
        "return_type": "entry",
        "request_options": {
            "paginate": {"start": args.cursor or 0, "rows": args.page_size},
            "results_content_type": ["experimental"],
            "sort": [{"sort_by": "score", "direction": "desc"}],
        },
    }


async def search_structures(args: StructureSearch, http: SourceClient) -> dict[str, Any]:
    document = search_document(args)
    fetched = await http.get("rcsb_search", SEARCH_PATH, {"json": json.dumps(document, separators=(",", ":"))})
    request = {
        "query": args.query,
        "method": METHODS[args.method] if args.method else None,
        "max_resolution": args.max_resolution,
        "start": args.cursor or 0,
        "rows": args.page_size,
    }
    base = provenance(RCSB, fetched.endpoint, fetched.retrieved_at, request)
    if fetched.status == 204 or not fetched.body.strip():  # RCSB answers 204 when nothing matches
        return {"provenance": base, "total": 0, "records": [], "next_cursor": None}
    data = json_object(fetched, RCSB)
    records = [
        {"pdb_id": item.get("identifier"), "score": item.get("score")}
        for item in data.get("result_set") or []
        if isinstance(item, dict) and isinstance(item.get("identifier"), str)
    ]
    total = as_int(data.get("total_count")) or 0
    following = (args.cursor or 0) + len(records)
    more = records and len(records) >= args.page_size and following < total and following <= MAX_START
    return {"provenance": base, "total": total, "records": records, "next_cursor": following if more else None}


class EntryDetail(Arguments):
    pdb_id: str = PdbId


def _first(value: object) -> dict[str, Any]:
    return value[0] if isinstance(value, list) and value and isinstance(value[0], dict) else {}


def _citation(item: dict[str, Any]) -> dict[str, Any] | None:
    citation = item.get("rcsb_primary_citation")
    if not isinstance(citation, dict):
        citation = next(
            (c for c in item.get("citation") or [] if isinstance(c, dict) and c.get("id") == "primary"), None
        )
    if not isinstance(citation, dict):
        return None
    names = citation.get("rcsb_authors") or []
    return {
        "title": clip(citation.get("title"), 300),
        "authors": authors([name for name in names if isinstance(name, str)]) if isinstance(names, list) else "",
        "journal": clip(citation.get("journal_abbrev") or citation.get("rcsb_journal_abbrev"), 200) or None,
        "year": as_int(citation.get("year")),
        "doi": citation.get("pdbx_database_id_DOI"),
        "pubmed_id": as_int(citation.get("pdbx_database_id_PubMed")),
    }


async def get_entry(args: EntryDetail, http: SourceClient) -> dict[str, Any]:
    pdb_id = args.pdb_id.upper()
    fetched = await http.get("rcsb_data", f"/rest/v1/core/entry/{pdb_id}")
    item = json_object(fetched, RCSB)
    info = item.get("rcsb_entry_info") or {}
    accession = item.get("rcsb_accession_info") or {}
    resolution = info.get("resolution_combined")
    methods = [entry.get("method") for entry in item.get("exptl") or [] if isinstance(entry, dict)]
    record = {
        "pdb_id": item.get("rcsb_id") or pdb_id,
        "title": clip((item.get("struct") or {}).get("title"), 400),
        "keywords": clip((item.get("struct_keywords") or {}).get("pdbx_keywords"), 200) or None,
        "methods": [method for method in methods if isinstance(method, str)],
        "resolution": resolution[0] if isinstance(resolution, list) and resolution else None,
        "deposited": accession.get("deposit_date"),
        "released": accession.get("initial_release_date"),
        "polymer_entities": as_int(info.get("polymer_entity_count")),
        "nonpolymer_entities": as_int(info.get("nonpolymer_entity_count")),
        "chains": as_int(info.get("deposited_polymer_entity_instance_count")),
        "molecular_weight_kda": info.get("molecular_weight"),
        "citation": _citation(item),
    }
    return {
        "provenance": provenance(RCSB, fetched.endpoint, fetched.retrieved_at, {"pdb_id": pdb_id}),
        "record": record,
    }


class Prediction(Arguments):
    uniprot_accession: str = Field(
        pattern=r"^([OPQ][0-9][A-Z0-9]{3}[0-9]|[A-NR-Z][0-9]([A-Z][A-Z0-9]{2}[0-9]){1,2})$",
        description="A UniProt accession, e.g. P69905.",
    )


def _model(item: dict[str, Any]) -> dict[str, Any]:
    sequence = item.get("uniprotSequence")
    return {
        "model_id": item.get("entryId"),
        "version": as_int(item.get("latestVersion")),
        "created": item.get("modelCreatedDate"),
        "uniprot_accession": item.get("uniprotAccession"),
        "uniprot_id": item.get("uniprotId"),
        "description": clip(item.get("uniprotDescription"), 300),
        "gene": item.get("gene"),
        "organism": clip(item.get("organismScientificName"), 200) or None,
        "tax_id": as_int(item.get("taxId")),
        "residues": [as_int(item.get("uniprotStart")), as_int(item.get("uniprotEnd"))],
        "sequence_length": len(sequence) if isinstance(sequence, str) else None,
        "mean_plddt": item.get("globalMetricValue"),
        "pdb_url": item.get("pdbUrl"),
        "cif_url": item.get("cifUrl"),
        "pae_image_url": item.get("paeImageUrl"),
    }


async def get_alphafold_prediction(args: Prediction, http: SourceClient) -> dict[str, Any]:
    request = {"uniprot_accession": args.uniprot_accession}
    path = f"/api/prediction/{args.uniprot_accession}"
    try:
        fetched = await http.get("alphafold", path)
    except SourceError as exc:
        if exc.code != ErrorCode.SOURCE_BAD_RESPONSE or exc.details.get("status") != 404:
            raise
        # AlphaFold DB answers 404 for an accession it has no model of: an empty result.
        endpoint = http.base_of("alphafold") + path
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {"provenance": provenance(ALPHAFOLD, endpoint, now, request), "records": []}
    try:
        data = json.loads(fetched.body)
    except ValueError:
        data = None
    if not isinstance(data, list):
        json_object(fetched, ALPHAFOLD)  # raises source_bad_response for anything but an object
        data = [data]
    return {
        "provenance": provenance(ALPHAFOLD, fetched.endpoint, fetched.retrieved_at, request),
        "records": [_model(item) for item in data[:10] if isinstance(item, dict)],
    }


TOOLS = (
    BuiltinTool(
        "search_structures",
        "Search structures (RCSB PDB)",
        "Full-text search of experimental PDB entries, optionally by method (xray, em, nmr) and maximum "
        "resolution in Å; returns PDB ids by relevance; page with next_cursor (an offset).",
        StructureSearch,
        search_structures,
    ),
    BuiltinTool(
        "get_entry",
        "PDB entry detail (RCSB PDB)",
        "One PDB entry by id: title, methods, resolution, dates, entity and chain counts, primary citation.",
        EntryDetail,
        get_entry,
    ),
    BuiltinTool(
        "get_alphafold_prediction",
        "AlphaFold prediction (AlphaFold DB)",
        "The AlphaFold DB models of a UniProt accession: model id, version, mean pLDDT, residue range and "
        "file URLs; an empty list when there is none.",
        Prediction,
        get_alphafold_prediction,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, ORIGINS)
