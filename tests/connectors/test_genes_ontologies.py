"""genes-ontologies end to end: the real connector process over stdio under a governed Runtime,
answering from MyGene.info-, OLS- and Reactome-shaped fixtures served by a fake origin on 127.0.0.1."""

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

REACTOME = "/ContentService/data/mapping/UniProt/P04637/pathways"


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def server(origin: FakeOrigin, approval: str = "allow_all") -> RuntimeServer:
    return builtin_server("genes-ontologies", origin, approval)


async def calls(tmp_path: Path, origin: FakeOrigin, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run each ``(tool, arguments)``; a result's record, or the ToolCallError's error record."""
    return await call_each(tmp_path, server(origin), *steps)


async def test_the_three_tools_are_read_only_default_ask_with_strict_schemas(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    with anyio.fail_after(30):
        async with Runtime(
            config(tmp_path, server(origin, approval="ask")), settings=Settings(home=tmp_path / "h")
        ) as runtime:
            tools = {tool.tool: tool for tool in await runtime.list_tools()}
    assert sorted(tools) == ["gene_pathways", "search_genes", "search_ontology_terms"]
    for tool in tools.values():
        assert (tool.risk, tool.decision) == ("read", "ask")
        assert tool.input_schema["additionalProperties"] is False
    assert tools["search_ontology_terms"].input_schema["properties"]["page_size"]["maximum"] == 50


async def test_gene_search_pages_and_gene_detail(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/v3/query", Reply.file("genes_ontologies/mygene_query.json"))
    origin.route("/v3/gene/7157", Reply.file("genes_ontologies/mygene_gene.json"))
    search, detail = await calls(
        tmp_path,
        origin,
        ("search_genes", {"query": "TP53", "page_size": 2}),
        ("search_genes", {"gene": "7157"}),
    )
    assert (search["total"], search["next_offset"]) == (3, 2)
    assert search["records"][1] == {
        "id": "8626",
        "symbol": "TP63",
        "name": "tumor protein p63",
        "taxid": 9606,
        "entrez": "8626",
        "ensembl": "ENSG00000073282",
        "type": "protein-coding",
    }
    assert search["provenance"]["source"] == "MyGene.info"
    assert search["provenance"]["request"] | {"fields": ""} == {
        "q": "TP53",
        "species": 9606,
        "fields": "",
        "size": 2,
        "from": 0,
    }
    record = detail["record"]
    assert (record["symbol"], record["uniprot"], record["hgnc"]) == ("TP53", "P04637", "11998")
    assert record["location"] == {"chromosome": "17", "start": 7661779, "end": 7687490, "strand": -1}
    assert record["aliases"][:2] == ["BCC7", "BMFS5"]
    assert record["summary"].startswith("This gene encodes a tumor suppressor")
    assert origin.requests[0].query["from"] == "0"


async def test_ontology_terms_and_pathways_page_to_the_end(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/ols4/api/search", Reply.file("genes_ontologies/ols_search.json"))
    origin.route(REACTOME, Reply.file("genes_ontologies/reactome_pathways.json"))
    terms, first, last = await calls(
        tmp_path,
        origin,
        ("search_ontology_terms", {"query": "apoptosis", "ontology": "go", "exact": True}),
        ("gene_pathways", {"identifier": "P04637", "page_size": 2}),
        ("gene_pathways", {"identifier": "P04637", "page_size": 2, "offset": 2}),
    )
    assert (terms["total"], terms["next_offset"]) == (2, None)
    assert terms["records"][0]["id"] == "GO:0006915"
    assert terms["records"][0]["label"] == "apoptotic process"
    assert terms["records"][0]["description"].startswith("A programmed cell death")
    assert origin.requests[0].query == {"q": "apoptosis", "rows": "10", "start": "0", "ontology": "go", "exact": "true"}
    assert (first["total"], first["next_offset"]) == (3, 2)
    assert [record["id"] for record in first["records"]] == ["R-HSA-69541", "R-HSA-5633007"]
    assert last["records"] == [
        {
            "id": "R-HSA-3642278",
            "name": "Loss of Function of TP53 in Cancer",
            "species": "Homo sapiens",
            "disease": True,
            "has_diagram": False,
        }
    ]
    assert last["next_offset"] is None
    assert origin.requests[1].query == {"species": "9606"}


async def test_empty_results_and_refused_arguments(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/v3/query", Reply.file("genes_ontologies/mygene_empty.json"))
    empty, unmapped, unknown, both, bad_id, raw = await calls(
        tmp_path,
        origin,
        ("search_genes", {"query": "zzzxqj"}),
        ("gene_pathways", {"identifier": "Q9Y6Y9"}),  # unrouted: Reactome's 404 means no mapping
        ("search_ontology_terms", {"query": "x", "fq": "ontology_name:*"}),
        ("search_genes", {"query": "TP53", "gene": "7157"}),
        ("gene_pathways", {"identifier": "../../evil"}),
        ("search_ontology_terms", {"query": "x", "ontology": "go&rows=100000"}),
    )
    assert (empty["total"], empty["records"], empty["next_offset"]) == (0, [], None)
    assert (unmapped["total"], unmapped["records"], unmapped["next_offset"]) == (0, [], None)
    assert unknown["details"]["errors"] == [{"field": "fq", "problem": "extra_forbidden"}]
    assert both["code"] == bad_id["code"] == raw["code"] == "validation_error"
    assert origin.paths() == ["/v3/query", "/ContentService/data/mapping/UniProt/Q9Y6Y9/pathways"]


async def test_a_429_with_retry_after_then_success_and_5xx_exhaustion(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.queue("/ols4/api/search", Reply(429, headers={"Retry-After": "0"}))
    origin.route("/ols4/api/search", Reply.file("genes_ontologies/ols_search.json"))
    origin.route(REACTOME, Reply(502))
    retried, failed = await calls(
        tmp_path,
        origin,
        ("search_ontology_terms", {"query": "apoptosis"}),
        ("gene_pathways", {"identifier": "P04637"}),
    )
    assert retried["total"] == 2
    assert origin.paths().count("/ols4/api/search") == 2
    assert origin.paths().count(REACTOME) == 3  # bounded: three attempts
    assert failed["code"] == "source_unavailable"
    assert failed["details"] == {"source": "Reactome", "status": 502}
