"""genes-ontologies: the built-in connector for genes, ontology terms and pathways (3 read-only tools).

* ``search_genes``: MyGene.info: genes matching a query (``/v3/query``, offset paging), or one gene's
  detail by Entrez or Ensembl id (``/v3/gene/{id}``, summary cut).
* ``search_ontology_terms``: EBI OLS4 term search (``/ols4/api/search``), optionally in one
  ontology, offset paging.
* ``gene_pathways``: Reactome Content Service: the pathways a UniProt or Ensembl identifier maps to
  (``/ContentService/data/mapping/{resource}/{id}/pathways``), paged by the connector.

Run: ``python -I -m patchbay.connectors.genes_ontologies``.

Design: docs/builtins.md
"""

from __future__ import annotations

import urllib.parse
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import pydantic
from pydantic import Field

from patchbay.connectors._arrays import json_array, page_of
from patchbay.connectors._http import Origin, SourceClient, json_object
from patchbay.connectors._records import as_int, clip
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance
from patchbay.core.errors import ErrorCode, SourceError

__all__ = ["NAME", "ORIGINS", "TOOLS"]

NAME = "genes-ontologies"
MYGENE = "MyGene.info"
OLS = "EBI OLS"
REACTOME = "Reactome"
ORIGINS = {
    "mygene": Origin(MYGENE, "https://mygene.info", per_second=5),
    "ols": Origin(OLS, "https://www.ebi.ac.uk", per_second=5),
    "reactome": Origin(REACTOME, "https://reactome.org", per_second=5),
}
SUMMARY_CHARS = 800
"""Characters of a gene summary or a term description a record keeps."""
ALIASES_KEPT = 8
"""Aliases a gene detail keeps."""
_HIT_FIELDS = "symbol,name,taxid,entrezgene,ensembl.gene,type_of_gene"
_DETAIL_FIELDS = (
    "symbol,name,taxid,entrezgene,ensembl.gene,type_of_gene,alias,summary,genomic_pos,uniprot.Swiss-Prot,HGNC,MIM"
)

Offset = Annotated[
    int, Field(default=0, ge=0, le=10_000, description="Index of the first record; next_offset of the previous page.")
]
Taxon = Annotated[int, Field(default=9606, ge=1, le=10_000_000, description="NCBI taxonomy id (9606: human).")]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _first(value: object) -> object:
    """The first item of a list (MyGene answers one or many), else the value."""
    return value[0] if isinstance(value, list) and value else value


def _ensembl(value: object) -> str | None:
    gene = _first(value)
    found = gene.get("gene") if isinstance(gene, dict) else None
    return found if isinstance(found, str) else None


def _gene(item: dict[str, Any], *, detail: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": str(item.get("_id") or item.get("entrezgene") or "") or None,
        "symbol": clip(item.get("symbol"), 60) or None,
        "name": clip(item.get("name"), 200) or None,
        "taxid": as_int(item.get("taxid")),
        "entrez": str(item["entrezgene"]) if item.get("entrezgene") is not None else None,
        "ensembl": _ensembl(item.get("ensembl")),
        "type": item.get("type_of_gene") if isinstance(item.get("type_of_gene"), str) else None,
    }
    if detail:
        aliases = item.get("alias")
        names = [aliases] if isinstance(aliases, str) else [a for a in aliases or [] if isinstance(a, str)]
        position = _first(item.get("genomic_pos"))
        uniprot = (item.get("uniprot") or {}).get("Swiss-Prot") if isinstance(item.get("uniprot"), dict) else None
        record |= {
            "aliases": [clip(name, 40) for name in names[:ALIASES_KEPT]],
            "summary": clip(item.get("summary"), SUMMARY_CHARS),
            "location": {
                "chromosome": position.get("chr"),
                "start": as_int(position.get("start")),
                "end": as_int(position.get("end")),
                "strand": position.get("strand"),
            }
            if isinstance(position, dict)
            else None,
            "uniprot": _first(uniprot) if isinstance(_first(uniprot), str) else None,
            "hgnc": str(item["HGNC"]) if item.get("HGNC") is not None else None,
            "mim": str(item["MIM"]) if item.get("MIM") is not None else None,
        }
    return record


class GeneSearch(Arguments):
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Search terms (a symbol such as TP53, a name, or words); give query or gene.",
    )
    gene: str | None = Field(
        default=None,
        pattern=r"^([0-9]{1,12}|ENS[A-Z]{0,6}G[0-9]{11})$",
        description="One gene by Entrez id (7157) or Ensembl gene id (ENSG00000141510): its detail.",
    )
    species: Taxon
    page_size: int = Field(default=10, ge=1, le=50, description="Records per page (query only).")
    offset: Offset

    @pydantic.model_validator(mode="after")
    def _one(self) -> GeneSearch:
        if (self.query is None) == (self.gene is None):
            raise ValueError("give exactly one of query and gene")
        return self


async def search_genes(args: GeneSearch, http: SourceClient) -> dict[str, Any]:
    if args.gene is not None:
        request: dict[str, str | int] = {"gene": args.gene, "fields": _DETAIL_FIELDS}
        fetched = await http.get("mygene", f"/v3/gene/{args.gene}", {"fields": _DETAIL_FIELDS})
        return {
            "provenance": provenance(MYGENE, fetched.endpoint, fetched.retrieved_at, request),
            "record": _gene(json_object(fetched, MYGENE), detail=True),
        }
    params: dict[str, str | int] = {
        "q": args.query or "",
        "species": args.species,
        "fields": _HIT_FIELDS,
        "size": args.page_size,
        "from": args.offset,
    }
    fetched = await http.get("mygene", "/v3/query", params)
    data = json_object(fetched, MYGENE)
    records = [_gene(item) for item in data.get("hits") or [] if isinstance(item, dict)]
    total = as_int(data.get("total")) or 0
    following = args.offset + len(records)
    return {
        "provenance": provenance(MYGENE, fetched.endpoint, fetched.retrieved_at, params),
        "total": total,
        "records": records,
        "next_offset": following if records and following < total and following <= 10_000 else None,
    }


class TermSearch(Arguments):
    query: str = Field(min_length=1, max_length=200, description="Words of a term label or synonym.")
    ontology: str | None = Field(
        default=None, pattern=r"^[a-z][a-z0-9_]{1,29}$", description="One OLS ontology id (go, hp, mondo, efo...)."
    )
    exact: bool = Field(default=False, description="Match the whole label exactly.")
    page_size: int = Field(default=10, ge=1, le=50, description="Records per page.")
    offset: Offset


def _term(item: dict[str, Any]) -> dict[str, Any]:
    description = item.get("description")
    text = _first(description) if isinstance(description, list) else description
    return {
        "id": item.get("obo_id") or item.get("short_form"),
        "label": clip(item.get("label"), 200),
        "ontology": item.get("ontology_name") or item.get("ontology_prefix"),
        "type": item.get("type"),
        "iri": item.get("iri"),
        "description": clip(text, SUMMARY_CHARS),
    }


async def search_ontology_terms(args: TermSearch, http: SourceClient) -> dict[str, Any]:
    params: dict[str, str | int] = {"q": args.query, "rows": args.page_size, "start": args.offset}
    if args.ontology:
        params["ontology"] = args.ontology
    if args.exact:
        params["exact"] = "true"
    fetched = await http.get("ols", "/ols4/api/search", params)
    data = json_object(fetched, OLS)
    found = data.get("response")
    response: dict[str, Any] = found if isinstance(found, dict) else {}
    records = [_term(item) for item in response.get("docs") or [] if isinstance(item, dict)]
    total = as_int(response.get("numFound")) or 0
    following = args.offset + len(records)
    return {
        "provenance": provenance(OLS, fetched.endpoint, fetched.retrieved_at, params),
        "total": total,
        "records": records,
        "next_offset": following if records and following < total and following <= 10_000 else None,
    }


class Pathways(Arguments):
    resource: Literal["UniProt", "ENSEMBL"] = Field(
        default="UniProt", description="What identifier is: a UniProt accession or an Ensembl gene id."
    )
    identifier: str = Field(
        pattern=r"^([OPQ][0-9][A-Z0-9]{3}[0-9]|[A-NR-Z][0-9]([A-Z][A-Z0-9]{2}[0-9]){1,2}|ENS[A-Z]{0,6}G[0-9]{11})$",
        description="A UniProt accession (P04637) or an Ensembl gene id (ENSG00000141510).",
    )
    species: Taxon
    page_size: int = Field(default=20, ge=1, le=50, description="Pathways per page.")
    offset: Offset


async def gene_pathways(args: Pathways, http: SourceClient) -> dict[str, Any]:
    request: dict[str, str | int] = {"resource": args.resource, "identifier": args.identifier, "species": args.species}
    path = f"/ContentService/data/mapping/{args.resource}/{urllib.parse.quote(args.identifier)}/pathways"
    try:
        fetched = await http.get("reactome", path, {"species": args.species})
    except SourceError as exc:
        if exc.code is ErrorCode.SOURCE_BAD_RESPONSE and exc.details.get("status") == 404:  # no mapping
            return {
                "provenance": provenance(REACTOME, f"{http.base_of('reactome')}{path}", _now(), request),
                "total": 0,
                "records": [],
                "next_offset": None,
            }
        raise
    items = json_array(fetched, REACTOME)
    page, following = page_of(items, args.offset, args.page_size)
    records = [
        {
            "id": item.get("stId"),
            "name": clip(item.get("displayName"), 200),
            "species": item.get("speciesName"),
            "disease": bool(item.get("isInDisease")),
            "has_diagram": bool(item.get("hasDiagram")),
        }
        for item in page
    ]
    return {
        "provenance": provenance(REACTOME, fetched.endpoint, fetched.retrieved_at, request),
        "total": len(items),
        "records": records,
        "next_offset": following,
    }


TOOLS = (
    BuiltinTool(
        "search_genes",
        "Search genes (MyGene.info)",
        "MyGene.info: genes matching a query in one species (page with next_offset), or one gene's detail "
        "(aliases, summary cut, location, UniProt, HGNC) by Entrez or Ensembl id.",
        GeneSearch,
        search_genes,
    ),
    BuiltinTool(
        "search_ontology_terms",
        "Search ontology terms (EBI OLS)",
        "EBI Ontology Lookup Service term search (GO, HPO, MONDO, EFO...), optionally in one ontology; "
        "page with next_offset.",
        TermSearch,
        search_ontology_terms,
    ),
    BuiltinTool(
        "gene_pathways",
        "Pathways of a gene (Reactome)",
        "Reactome pathways a UniProt accession or Ensembl gene id maps to, in one species; page with next_offset.",
        Pathways,
        gene_pathways,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, ORIGINS)
