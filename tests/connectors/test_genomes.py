"""genomes end to end: the real connector process over stdio under a governed Runtime, answering
from Ensembl REST-shaped fixtures served by a fake origin on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeServer, Settings
from tests.support.recording import config
from tests.support.science import FakeOrigin, Reply, builtin_server, call_each

pytestmark = pytest.mark.anyio

OVERLAP = "/overlap/region/homo_sapiens/17:7650000-7700000"


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def server(origin: FakeOrigin, approval: str = "allow_all") -> RuntimeServer:
    return builtin_server("genomes", origin, approval)


async def calls(tmp_path: Path, origin: FakeOrigin, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run each ``(tool, arguments)``; a result's record, or the ToolCallError's error record."""
    return await call_each(tmp_path, server(origin), *steps)


async def test_the_three_tools_are_read_only_default_ask_with_bounded_schemas(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    with anyio.fail_after(30):
        async with Runtime(
            config(tmp_path, server(origin, approval="ask")), settings=Settings(home=tmp_path / "h")
        ) as runtime:
            tools = {tool.tool: tool for tool in await runtime.list_tools()}
    assert sorted(tools) == ["lookup_feature", "predict_variant_effect", "region_overlap"]
    for tool in tools.values():
        assert (tool.risk, tool.decision) == ("read", "ask")
        assert tool.input_schema["additionalProperties"] is False
    assert tools["region_overlap"].input_schema["properties"]["page_size"]["maximum"] == 100


async def test_lookup_by_id_and_by_symbol(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/lookup/id/ENSG00000141510", Reply.file("genomes/lookup_gene.json"))
    origin.route("/lookup/symbol/homo_sapiens/TP53", Reply.file("genomes/lookup_gene.json"))
    by_id, by_symbol = await calls(
        tmp_path,
        origin,
        ("lookup_feature", {"id": "ENSG00000141510"}),
        ("lookup_feature", {"symbol": "TP53"}),
    )
    assert by_id["record"] == {
        "id": "ENSG00000141510",
        "name": "TP53",
        "type": "Gene",
        "biotype": "protein_coding",
        "species": "homo_sapiens",
        "assembly": "GRCh38",
        "chromosome": "17",
        "start": 7661779,
        "end": 7687538,
        "strand": -1,
        "description": "tumor protein p53 [Source:HGNC Symbol;Acc:HGNC:11998]",
        "canonical_transcript": "ENST00000269305.9",
        "version": 19,
    }
    assert by_symbol["record"] == by_id["record"]
    assert by_symbol["provenance"]["request"] == {"symbol": "TP53", "species": "homo_sapiens"}
    assert by_symbol["provenance"]["source"] == "Ensembl REST"
    assert {seen.query["content-type"] for seen in origin.requests} == {"application/json"}


async def test_vep_by_hgvs_and_by_region_keeps_the_canonical_transcript_first(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    origin.route("/vep/homo_sapiens/hgvs/9:g.22125504G%3EC", Reply.file("genomes/vep.json"))
    origin.route("/vep/homo_sapiens/region/9:22125504-22125504:1/C", Reply.file("genomes/vep.json"))
    by_hgvs, by_region = await calls(
        tmp_path,
        origin,
        ("predict_variant_effect", {"hgvs": "9:g.22125504G>C", "max_consequences": 2}),
        ("predict_variant_effect", {"chromosome": "9", "start": 22125504, "end": 22125504, "allele": "C"}),
    )
    variant = by_hgvs["records"][0]
    assert (variant["most_severe_consequence"], variant["colocated_variants"]) == ("intron_variant", ["rs1333049"])
    assert variant["consequences_total"] == 3
    assert [entry["transcript_id"] for entry in variant["consequences"]] == ["ENST00000428597", "ENST00000422420"]
    assert variant["consequences"][0]["canonical"] is True
    assert len(by_region["records"][0]["consequences"]) == 3
    assert by_region["provenance"]["request"] == {
        "region": "9:22125504-22125504:1",
        "allele": "C",
        "species": "homo_sapiens",
    }
    assert origin.requests[0].query["canonical"] == "1"


async def test_region_overlap_pages_and_bounds_the_interval(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(OVERLAP, Reply.file("genomes/overlap_genes.json"))
    origin.route("/overlap/region/homo_sapiens/1:100-200", Reply(200, b"[]", {"Content-Type": "application/json"}))
    region = {"chromosome": "17", "start": 7650000, "end": 7700000, "page_size": 2}
    first, last, empty, too_long, unknown, mixed = await calls(
        tmp_path,
        origin,
        ("region_overlap", region),
        ("region_overlap", {**region, "offset": 2}),
        ("region_overlap", {"chromosome": "1", "start": 100, "end": 200, "feature": "variation"}),
        ("region_overlap", {"chromosome": "1", "start": 1, "end": 200_000, "feature": "variation"}),
        ("lookup_feature", {"id": "ENSG00000141510", "expand": 1}),
        ("predict_variant_effect", {"hgvs": "9:g.22125504G>C", "allele": "C"}),
    )
    assert (first["total"], first["next_offset"]) == (3, 2)
    assert [record["name"] for record in first["records"]] == ["TP53", "ATP1B2"]
    assert first["records"][0]["type"] == "gene"
    assert ([record["name"] for record in last["records"]], last["next_offset"]) == (["WRAP53"], None)
    assert (empty["total"], empty["records"], empty["next_offset"]) == (0, [], None)
    assert too_long["code"] == mixed["code"] == "validation_error"
    assert unknown["details"]["errors"] == [{"field": "expand", "problem": "extra_forbidden"}]
    assert [seen.query.get("feature") for seen in origin.requests] == ["gene", "gene", "variation"]


async def test_a_429_with_retry_after_then_success_and_5xx_exhaustion(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.queue("/lookup/symbol/homo_sapiens/TP53", Reply(429, headers={"Retry-After": "0"}))
    origin.route("/lookup/symbol/homo_sapiens/TP53", Reply.file("genomes/lookup_gene.json"))
    origin.route(OVERLAP, Reply(503, headers={"Retry-After": "3600"}))
    origin.route("/lookup/id/ENSG00000141510", Reply(500))
    retried, limited, failed = await calls(
        tmp_path,
        origin,
        ("lookup_feature", {"symbol": "TP53"}),
        ("region_overlap", {"chromosome": "17", "start": 7650000, "end": 7700000}),
        ("lookup_feature", {"id": "ENSG00000141510"}),
    )
    assert retried["record"]["id"] == "ENSG00000141510"
    assert origin.paths().count("/lookup/symbol/homo_sapiens/TP53") == 2
    assert limited["code"] == "source_rate_limited"
    assert limited["details"] == {"source": "Ensembl REST", "status": 503, "retry_after": 3600}
    assert origin.paths().count(OVERLAP) == 1  # a wait past the limit gives up at once
    assert failed["code"] == "source_unavailable"
    assert failed["details"] == {"source": "Ensembl REST", "status": 500}
    assert origin.paths().count("/lookup/id/ENSG00000141510") == 3
