"""structures-interactions end to end: the real connector process over stdio under a governed
Runtime, answering from RCSB- and AlphaFold-DB-shaped fixtures served by a fake origin on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeServer, Settings
from tests.support.recording import config
from tests.support.science import FakeOrigin, Reply, builtin_server, call_each

pytestmark = pytest.mark.anyio

SEARCH = "/rcsbsearch/v2/query"
ENTRY = "/rest/v1/core/entry"
PREDICTION = "/api/prediction"


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def server(origin: FakeOrigin) -> RuntimeServer:
    return builtin_server("structures-interactions", origin)


async def calls(tmp_path: Path, origin: FakeOrigin, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run each ``(tool, arguments)``; a result's record, or the ToolCallError's error record."""
    return await call_each(tmp_path, server(origin), *steps)


async def test_search_sends_the_fixed_document_and_pages_by_offset(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(SEARCH, Reply.file("structures_interactions/search.json"))
    first, last = await calls(
        tmp_path,
        origin,
        ("search_structures", {"query": "hemoglobin", "method": "xray", "max_resolution": 2.0, "page_size": 2}),
        ("search_structures", {"query": 'hemoglobin"}, "service": "sequence', "page_size": 2, "cursor": 2}),
    )
    assert first["records"] == [{"pdb_id": "4HHB", "score": 1.0}, {"pdb_id": "2HHB", "score": 0.93}]
    assert (first["total"], first["next_cursor"]) == (3, 2)
    assert first["provenance"]["source"] == "RCSB PDB"
    assert first["provenance"]["request"] == {
        "query": "hemoglobin",
        "method": "X-RAY DIFFRACTION",
        "max_resolution": 2.0,
        "start": 0,
        "rows": 2,
    }
    assert last["next_cursor"] is None  # 2 + 2 records reach the total of 3
    sent = [json.loads(seen.query["json"]) for seen in origin.requests]
    assert sent[0]["query"]["nodes"] == [
        {"type": "terminal", "service": "full_text", "parameters": {"value": "hemoglobin"}},
        {
            "type": "terminal",
            "service": "text",
            "parameters": {"attribute": "exptl.method", "operator": "exact_match", "value": "X-RAY DIFFRACTION"},
        },
        {
            "type": "terminal",
            "service": "text",
            "parameters": {
                "attribute": "rcsb_entry_info.resolution_combined",
                "operator": "less_or_equal",
                "value": 2.0,
            },
        },
    ]
    # Model text is a value of the fixed document, never part of its structure.
    assert sent[1]["query"] == {
        "type": "terminal",
        "service": "full_text",
        "parameters": {"value": 'hemoglobin"}, "service": "sequence'},
    }
    assert sent[1]["request_options"]["paginate"] == {"start": 2, "rows": 2}


async def test_entry_detail_and_alphafold_prediction(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{ENTRY}/4HHB", Reply.file("structures_interactions/entry_4hhb.json"))
    origin.route(f"{PREDICTION}/P69905", Reply.file("structures_interactions/alphafold_p69905.json"))
    entry, model = await calls(
        tmp_path,
        origin,
        ("get_entry", {"pdb_id": "4hhb"}),
        ("get_alphafold_prediction", {"uniprot_accession": "P69905"}),
    )
    assert entry["record"] == {
        "pdb_id": "4HHB",
        "title": "THE CRYSTAL STRUCTURE OF HUMAN DEOXYHAEMOGLOBIN AT 1.74 ANGSTROMS RESOLUTION",
        "keywords": "OXYGEN TRANSPORT",
        "methods": ["X-RAY DIFFRACTION"],
        "resolution": 1.74,
        "deposited": "1984-03-07T00:00:00+0000",
        "released": "1984-07-17T00:00:00+0000",
        "polymer_entities": 2,
        "nonpolymer_entities": 2,
        "chains": 4,
        "molecular_weight_kda": 64.74,
        "citation": {
            "title": "The crystal structure of human deoxyhaemoglobin at 1.74 A resolution",
            "authors": "Fermi, G., Perutz, M.F., Shaanan, B., et al. (4 authors)",
            "journal": "J Mol Biol",
            "year": 1984,
            "doi": "10.1016/0022-2836(84)90472-8",
            "pubmed_id": 6726807,
        },
    }
    assert entry["provenance"]["request"] == {"pdb_id": "4HHB"}
    (record,) = model["records"]
    assert (record["model_id"], record["version"], record["mean_plddt"]) == ("AF-P69905-F1", 4, 94.06)
    assert (record["residues"], record["sequence_length"], record["gene"]) == ([1, 142], 142, "HBA1")
    assert "uniprotSequence" not in json.dumps(model) and "MVLSPADK" not in json.dumps(model)
    assert model["provenance"]["source"] == "AlphaFold DB"


async def test_empty_results_and_refused_arguments(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(SEARCH, Reply(204))
    origin.route(f"{PREDICTION}/Q9ZZZ9", Reply(404, b'{"detail": "not found"}', {"Content-Type": "application/json"}))
    empty, no_model, unknown, bad_id, bad_accession, deep = await calls(
        tmp_path,
        origin,
        ("search_structures", {"query": "zzzxqj"}),
        ("get_alphafold_prediction", {"uniprot_accession": "Q9ZZZ9"}),
        ("search_structures", {"query": "x", "return_type": "polymer_entity"}),
        ("get_entry", {"pdb_id": "../../graphql"}),
        ("get_alphafold_prediction", {"uniprot_accession": "p69905; drop"}),
        ("search_structures", {"query": "x", "cursor": 100_000}),
    )
    assert (empty["total"], empty["records"], empty["next_cursor"]) == (0, [], None)
    assert no_model["records"] == []
    assert unknown["details"]["errors"] == [{"field": "return_type", "problem": "extra_forbidden"}]
    assert {bad_id["code"], bad_accession["code"], deep["code"]} == {"validation_error"}
    assert origin.paths() == [SEARCH, f"{PREDICTION}/Q9ZZZ9"]


async def test_a_long_retry_after_is_rate_limited_and_a_5xx_is_retried_then_fails(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    origin.route(SEARCH, Reply(429, headers={"Retry-After": "120"}))
    origin.route(f"{ENTRY}/1ABC", Reply(503))
    origin.route(f"{PREDICTION}/P69905", Reply(500))
    limited, unavailable, failed = await calls(
        tmp_path,
        origin,
        ("search_structures", {"query": "kinase"}),
        ("get_entry", {"pdb_id": "1ABC"}),
        ("get_alphafold_prediction", {"uniprot_accession": "P69905"}),
    )
    assert limited["code"] == "source_rate_limited"
    assert limited["details"] == {"source": "RCSB PDB", "status": 429, "retry_after": 120}
    assert origin.paths().count(SEARCH) == 1  # a wait past the bound is not retried
    assert unavailable["code"] == "source_rate_limited"  # 503 without Retry-After: backed off, then given up
    assert failed["code"] == "source_unavailable"
    assert failed["details"] == {"source": "AlphaFold DB", "status": 500}
    assert origin.paths().count(f"{PREDICTION}/P69905") == 3


async def test_the_tools_are_strict_read_only_and_bounded(tmp_path: Path, origin: FakeOrigin) -> None:
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server(origin)), settings=Settings(home=tmp_path / "h")) as runtime:
            tools = {tool.name.rsplit(".", 1)[-1]: tool for tool in await runtime.list_tools()}
    assert sorted(tools) == ["get_alphafold_prediction", "get_entry", "search_structures"]
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        assert tool.annotations["readOnlyHint"] is True
    search = tools["search_structures"].input_schema["properties"]
    assert (search["query"]["maxLength"], search["page_size"]["maximum"]) == (300, 50)
    assert search["method"]["anyOf"][0]["enum"] == ["xray", "em", "nmr"]
    assert tools["get_entry"].input_schema["properties"]["pdb_id"]["pattern"] == "^[0-9][A-Za-z0-9]{3}$"
