"""genomes: the built-in connector for Ensembl REST (3 read-only tools).

* ``lookup_feature``: one gene, transcript or other feature by stable id (``/lookup/id/{id}``) or a
  gene by symbol in a species (``/lookup/symbol/{species}/{symbol}``).
* ``predict_variant_effect``: VEP for one variant, as HGVS (``/vep/{species}/hgvs/{hgvs}``) or as a
  region and allele (``/vep/{species}/region/{chr}:{start}-{end}:{strand}/{allele}``); transcript
  consequences cut to a stated count.
* ``region_overlap``: the features of one kind overlapping a region
  (``/overlap/region/{species}/{chr}:{start}-{end}?feature=``); the interval is bounded per kind and
  the answer paged by the connector.

Ensembl's limit of 15 requests per second is kept. Run: ``python -I -m patchbay.connectors.genomes``.

Design: docs/builtins.md
"""

from __future__ import annotations

import urllib.parse
from typing import Annotated, Any, Literal

import pydantic
from pydantic import Field

from patchbay.connectors._arrays import json_array, page_of
from patchbay.connectors._http import Origin, SourceClient, json_object
from patchbay.connectors._records import as_int, clip
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance

__all__ = ["MAX_INTERVAL", "NAME", "ORIGINS", "TOOLS"]

NAME = "genomes"
SOURCE = "Ensembl REST"
ORIGINS = {"ensembl": Origin(SOURCE, "https://rest.ensembl.org", per_second=15)}
JSON = {"content-type": "application/json"}
"""Ensembl answers JSON when asked by this parameter."""
MAX_INTERVAL = {"gene": 5_000_000, "transcript": 5_000_000, "regulatory": 1_000_000, "variation": 100_000}
"""The longest region (bp) ``region_overlap`` asks for, per feature kind."""

Species = Annotated[
    str, Field(default="homo_sapiens", pattern=r"^[a-z][a-z0-9_]{2,59}$", description="Ensembl species name.")
]
Chromosome = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]{1,40}$", description="Sequence region name (17, X, MT).")]
Position = Annotated[int, Field(ge=1, le=3_000_000_000, description="1-based position (bp).")]


def _feature(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item.get("id"),
        "name": clip(item.get("display_name") or item.get("external_name"), 80) or None,
        "type": item.get("object_type") or item.get("feature_type"),
        "biotype": item.get("biotype"),
        "species": item.get("species"),
        "assembly": item.get("assembly_name"),
        "chromosome": item.get("seq_region_name"),
        "start": as_int(item.get("start")),
        "end": as_int(item.get("end")),
        "strand": item.get("strand"),
        "description": clip(item.get("description"), 300) or None,
    }


class Lookup(Arguments):
    id: str | None = Field(
        default=None,
        pattern=r"^ENS[A-Z]{0,6}[GTPER][0-9]{11}(\.[0-9]{1,3})?$",
        description="An Ensembl stable id (ENSG00000141510, ENST00000269305); give id or symbol.",
    )
    symbol: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$", description="A gene symbol (TP53)."
    )
    species: Species

    @pydantic.model_validator(mode="after")
    def _one(self) -> Lookup:
        if (self.id is None) == (self.symbol is None):
            raise ValueError("give exactly one of id and symbol")
        return self


async def lookup_feature(args: Lookup, http: SourceClient) -> dict[str, Any]:
    if args.id is not None:
        path = f"/lookup/id/{args.id}"
        request: dict[str, str | int] = {"id": args.id}
    else:
        path = f"/lookup/symbol/{args.species}/{urllib.parse.quote(args.symbol or '')}"
        request = {"symbol": args.symbol or "", "species": args.species}
    fetched = await http.get("ensembl", path, JSON)
    item = json_object(fetched, SOURCE)
    record = _feature(item)
    record["canonical_transcript"] = item.get("canonical_transcript")
    record["version"] = as_int(item.get("version"))
    return {"provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, request), "record": record}


class Variant(Arguments):
    hgvs: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.]{1,40}:[cgmnpr]\.[A-Za-z0-9_.()*=>+-]{1,120}$",
        description="An HGVS notation (ENST00000366667:c.803C>T, 9:g.22125504G>C); or give region fields.",
    )
    chromosome: Chromosome | None = None
    start: Position | None = None
    end: Position | None = None
    strand: Literal[1, -1] = Field(default=1, description="Strand of the allele.")
    allele: str | None = Field(
        default=None, pattern=r"^([ACGTN]{1,200}|-)$", description="The alternate allele (C, or - for a deletion)."
    )
    species: Species
    max_consequences: int = Field(default=10, ge=1, le=50, description="Transcript consequences kept.")

    @pydantic.model_validator(mode="after")
    def _one(self) -> Variant:
        region = (self.chromosome, self.start, self.end, self.allele)
        if self.hgvs is not None:
            if any(part is not None for part in region):
                raise ValueError("give hgvs or the region fields, not both")
            return self
        if any(part is None for part in region):
            raise ValueError("give hgvs, or chromosome, start, end and allele")
        if (self.end or 0) < (self.start or 0) - 1 or (self.end or 0) - (self.start or 0) > 10_000:
            raise ValueError("end must be at least start - 1 (an insertion) and the variant at most 10 kb")
        return self


def _consequence(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "gene_id": item.get("gene_id"),
        "gene_symbol": item.get("gene_symbol"),
        "transcript_id": item.get("transcript_id"),
        "canonical": bool(item.get("canonical")),
        "terms": [term for term in item.get("consequence_terms") or [] if isinstance(term, str)][:10],
        "impact": item.get("impact"),
        "biotype": item.get("biotype"),
        "amino_acids": item.get("amino_acids"),
        "protein_start": as_int(item.get("protein_start")),
        "sift": item.get("sift_prediction"),
        "polyphen": item.get("polyphen_prediction"),
    }


async def predict_variant_effect(args: Variant, http: SourceClient) -> dict[str, Any]:
    if args.hgvs is not None:
        path = f"/vep/{args.species}/hgvs/{urllib.parse.quote(args.hgvs, safe=':')}"
        request: dict[str, str | int] = {"hgvs": args.hgvs, "species": args.species}
    else:
        region = f"{args.chromosome}:{args.start}-{args.end}:{args.strand}"
        path = f"/vep/{args.species}/region/{region}/{args.allele}"
        request = {"region": region, "allele": args.allele or "", "species": args.species}
    fetched = await http.get("ensembl", path, {**JSON, "canonical": 1})
    records = []
    for item in json_array(fetched, SOURCE)[:5]:
        consequences = [entry for entry in item.get("transcript_consequences") or [] if isinstance(entry, dict)]
        consequences.sort(key=lambda entry: not entry.get("canonical"))  # the canonical transcript first
        colocated = [entry.get("id") for entry in item.get("colocated_variants") or [] if isinstance(entry, dict)]
        records.append(
            {
                "input": clip(item.get("input"), 200),
                "most_severe_consequence": item.get("most_severe_consequence"),
                "assembly": item.get("assembly_name"),
                "chromosome": item.get("seq_region_name"),
                "start": as_int(item.get("start")),
                "end": as_int(item.get("end")),
                "allele_string": clip(item.get("allele_string"), 100),
                "colocated_variants": [name for name in colocated if isinstance(name, str)][:10],
                "consequences": [_consequence(entry) for entry in consequences[: args.max_consequences]],
                "consequences_total": len(consequences),
            }
        )
    return {"provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, request), "records": records}


class Overlap(Arguments):
    chromosome: Chromosome
    start: Position
    end: Position
    feature: Literal["gene", "transcript", "regulatory", "variation"] = Field(
        default="gene",
        description="The kind of feature (region at most 5 Mb for genes and transcripts, "
        "1 Mb for regulatory features, 100 kb for variants).",
    )
    species: Species
    page_size: int = Field(default=25, ge=1, le=100, description="Features per page.")
    offset: int = Field(default=0, ge=0, le=100_000, description="next_offset of the previous page.")

    @pydantic.model_validator(mode="after")
    def _interval(self) -> Overlap:
        if self.end < self.start:
            raise ValueError("end is before start")
        if self.end - self.start + 1 > MAX_INTERVAL[self.feature]:
            raise ValueError(f"the region is longer than {MAX_INTERVAL[self.feature]} bp for {self.feature}")
        return self


async def region_overlap(args: Overlap, http: SourceClient) -> dict[str, Any]:
    region = f"{args.chromosome}:{args.start}-{args.end}"
    request: dict[str, str | int] = {"region": region, "feature": args.feature, "species": args.species}
    fetched = await http.get("ensembl", f"/overlap/region/{args.species}/{region}", {**JSON, "feature": args.feature})
    items = json_array(fetched, SOURCE)
    page, following = page_of(items, args.offset, args.page_size)
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, request),
        "total": len(items),
        "records": [_feature(item) for item in page],
        "next_offset": following,
    }


TOOLS = (
    BuiltinTool(
        "lookup_feature",
        "Look up a gene or feature (Ensembl)",
        "One Ensembl feature by stable id, or a gene by symbol in a species: location, biotype, "
        "canonical transcript, description.",
        Lookup,
        lookup_feature,
    ),
    BuiltinTool(
        "predict_variant_effect",
        "Variant effect (Ensembl VEP)",
        "Ensembl VEP for one variant given as HGVS or as region and allele: most severe consequence, "
        "co-located variants, transcript consequences (canonical first, cut to max_consequences).",
        Variant,
        predict_variant_effect,
    ),
    BuiltinTool(
        "region_overlap",
        "Features in a region (Ensembl)",
        "Genes, transcripts, regulatory features or variants overlapping a bounded region; page with next_offset.",
        Overlap,
        region_overlap,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, ORIGINS)
