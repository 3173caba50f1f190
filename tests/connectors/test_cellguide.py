"""cellguide end to end: the real connector process over stdio under a governed Runtime, answering
from CellGuide-shaped fixtures (a snapshot identifier and the snapshot's static JSON) served by a
fake origin on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchbay import RuntimeServer
from tests.support.science import FakeOrigin, Reply, builtin_server, call_each

pytestmark = pytest.mark.anyio

SNAP = "/1716401368"
MARKERS = f"{SNAP}/computational_marker_genes/CL_0000540.json"
CANONICAL = f"{SNAP}/canonical_marker_genes/CL_0000540.json"


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        fake.route("/latest_snapshot_identifier", Reply.file("cellguide/latest_snapshot_identifier", "text/plain"))
        fake.route(f"{SNAP}/celltype_metadata.json", Reply.file("cellguide/celltype_metadata.json"))
        fake.route(MARKERS, Reply.file("cellguide/computational_CL_0000540.json"))
        fake.route(CANONICAL, Reply.file("cellguide/canonical_CL_0000540.json"))
        yield fake


def server(origin: FakeOrigin) -> RuntimeServer:
    return builtin_server("cellguide", origin)


async def calls(tmp_path: Path, origin: FakeOrigin, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run each ``(tool, arguments)``; a result's record, or the ToolCallError's error record."""
    return await call_each(tmp_path, server(origin), *steps)


async def test_search_pages_ranked_matches_and_the_metadata_is_fetched_once(tmp_path: Path, origin: FakeOrigin) -> None:
    first, second, by_synonym, detail = await calls(
        tmp_path,
        origin,
        ("search_cell_types", {"query": "Neuron", "page_size": 1}),
        ("search_cell_types", {"query": "neuron", "page_size": 1, "cursor": 1}),
        ("search_cell_types", {"query": "astroglia"}),
        ("get_cell_type", {"cell_type": "CL:0000540"}),
    )
    assert (first["total"], first["next_cursor"]) == (2, 1)
    assert first["records"][0] == {
        "id": "CL:0000540",
        "name": "neuron",
        "synonyms": ["nerve cell"],
        "synonyms_total": 1,
        "description": first["records"][0]["description"],
        "url": "https://cellxgene.cziscience.com/cellguide/CL_0000540",
    }
    assert first["records"][0]["description"].startswith("The basic cellular unit of nervous tissue.")
    assert [record["id"] for record in second["records"]] == ["CL:0000100"]
    assert second["next_cursor"] is None
    assert [record["id"] for record in by_synonym["records"]] == ["CL:0000127"]
    assert first["provenance"]["source"] == "CELLxGENE CellGuide"
    assert first["provenance"]["request"] == {"query": "Neuron", "page_size": 1, "offset": 0, "snapshot": "1716401368"}
    assert first["provenance"]["endpoint"].endswith(f"{SNAP}/celltype_metadata.json")
    assert detail["found"] is True
    assert detail["record"]["name"] == "neuron"
    # the versioned metadata is cached in the server process: one fetch for four calls
    assert origin.paths() == ["/latest_snapshot_identifier", f"{SNAP}/celltype_metadata.json"]


async def test_computational_and_canonical_markers(tmp_path: Path, origin: FakeOrigin) -> None:
    ranked, human_brain, canonical = await calls(
        tmp_path,
        origin,
        ("get_marker_genes", {"cell_type": "CL:0000540", "page_size": 2}),
        ("get_marker_genes", {"cell_type": "CL:0000540", "organism": "Homo sapiens", "tissue": "Brain", "cursor": 1}),
        ("get_marker_genes", {"cell_type": "CL:0000540", "kind": "canonical"}),
    )
    assert [record["symbol"] for record in ranked["records"]] == ["SNAP25", "STMN2"]
    assert (ranked["total"], ranked["next_cursor"]) == (4, 2)
    assert ranked["records"][0] == {
        "symbol": "SNAP25",
        "name": "synaptosome associated protein 25",
        "gene_id": "ENSG00000132639",
        "marker_score": 2.41,
        "specificity": 0.93,
        "mean_expression": 2.42,
        "percent_cells": 0.71,
        "organism": "Homo sapiens",
        "tissue": "brain",
    }
    assert [record["symbol"] for record in human_brain["records"]] == ["STMN2"]
    assert (human_brain["total"], human_brain["next_cursor"]) == (2, None)
    assert human_brain["provenance"]["request"]["organism"] == "Homo sapiens"
    assert canonical["records"][0] == {
        "symbol": "RBFOX3",
        "name": "RNA binding fox-1 homolog 3",
        "tissue": "brain",
        "publications": ["DOI:10.1038/s41586-019-1654-9", "DOI:10.1126/science.aad7038"],
        "publications_total": 2,
        "publication_titles": [
            "Single-cell transcriptomics of the human brain",
            "Adult mouse cortical cell taxonomy revealed by single cell transcriptomics",
        ],
    }
    assert canonical["provenance"]["endpoint"].endswith(CANONICAL)


async def test_empty_results_unknown_cell_types_and_refused_arguments(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{SNAP}/canonical_marker_genes/CL_0000084.json", Reply.file("cellguide/empty_list.json"))
    nothing, missing, no_file, empty, unknown, bad_id, too_big = await calls(
        tmp_path,
        origin,
        ("search_cell_types", {"query": "zzzxqj"}),
        ("get_cell_type", {"cell_type": "CL:9999999"}),
        ("get_marker_genes", {"cell_type": "CL:0000236"}),  # no file for it: the fake answers 404
        ("get_marker_genes", {"cell_type": "CL:0000084", "kind": "canonical"}),
        ("get_marker_genes", {"cell_type": "CL:0000540", "path": "../../etc"}),
        ("get_cell_type", {"cell_type": "CL_0000540/../x"}),
        ("search_cell_types", {"query": "x", "page_size": 26}),
    )
    assert (nothing["total"], nothing["records"], nothing["next_cursor"]) == (0, [], None)
    assert (missing["found"], missing["record"]) == (False, None)
    assert (no_file["total"], no_file["records"], no_file["next_cursor"]) == (0, [], None)
    assert (empty["total"], empty["records"]) == (0, [])
    assert unknown["details"]["errors"] == [{"field": "path", "problem": "extra_forbidden"}]
    assert bad_id["code"] == too_big["code"] == "validation_error"
    assert f"{SNAP}/computational_marker_genes/CL_0000540.json" not in origin.paths()


async def test_a_429_with_retry_after_is_retried_and_a_5xx_fails_with_its_code(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    origin.queue("/latest_snapshot_identifier", Reply(429, headers={"Retry-After": "0"}))
    origin.route(MARKERS, Reply(502))
    retried, failed = await calls(
        tmp_path,
        origin,
        ("search_cell_types", {"query": "B cell"}),
        ("get_marker_genes", {"cell_type": "CL:0000540"}),
    )
    assert [record["id"] for record in retried["records"]] == ["CL:0000236"]
    assert origin.paths().count("/latest_snapshot_identifier") == 2  # 429, then the answer (cached after)
    assert origin.paths().count(MARKERS) == 3  # bounded: three attempts
    assert failed["code"] == "source_unavailable"
    assert failed["details"] == {"source": "CELLxGENE CellGuide", "status": 502}
