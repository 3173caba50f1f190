"""literature-graph end to end: the real connector process over stdio under a governed Runtime,
answering from OpenAlex-shaped fixtures served by a fake origin on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchbay import RuntimeServer
from tests.support.science import FakeOrigin, Reply, builtin_server, call_each

pytestmark = pytest.mark.anyio

NEXT = "IlsxMDAuMCwgJ2h0dHBzOi8vb3BlbmFsZXgub3JnL1cyNzQxODA5ODA3J10i"


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def server(origin: FakeOrigin, **env: str) -> RuntimeServer:
    return builtin_server("literature-graph", origin, **env)


async def calls(tmp_path: Path, origin: FakeOrigin, *steps: tuple[str, dict[str, Any]], **env: str) -> list[Any]:
    """Run each ``(tool, arguments)``; a result's record, or the ToolCallError's error record."""
    return await call_each(tmp_path, server(origin, **env), *steps)


async def test_works_search_detail_references_and_authors(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/works?search=open access", Reply.file("literature_graph/works_search.json"))
    origin.route("/works/W2741809807", Reply.file("literature_graph/work_detail.json"))
    origin.route("/works/doi:10.7717/peerj.4375", Reply.file("literature_graph/work_detail.json"))
    origin.route("/works?filter=cited_by:W2741809807", Reply.file("literature_graph/references.json"))
    origin.route("/authors", Reply.file("literature_graph/authors.json"))
    search, detail, by_doi, references, people = await calls(
        tmp_path,
        origin,
        ("search_works", {"query": "open access", "page_size": 2, "from_year": 2015, "to_year": 2020}),
        ("get_work", {"work": "W2741809807"}),
        ("get_work", {"work": "10.7717/peerj.4375"}),
        ("get_references", {"work": "W2741809807"}),
        ("search_authors", {"query": "Piwowar"}),
        OPENALEX_API_KEY="oa-key-0123456789",
        PATCHBAY_SCIENCE_CONTACT="lab@example.org",
    )
    assert (search["total"], search["next_cursor"]) == (3, NEXT)
    first = search["records"][0]
    assert first["id"] == "W2741809807"
    assert first["authors"] == "Heather Piwowar, Jason Priem, Vincent Larivière, et al. (4 authors)"
    assert (first["venue"], first["open_access"], first["references_count"]) == ("PeerJ", True, 2)
    assert (
        search["provenance"]["request"]["filter"] == "from_publication_date:2015-01-01,to_publication_date:2020-12-31"
    )
    assert detail["record"]["abstract"] == "Despite growing interest in Open Access"
    assert by_doi["record"] == detail["record"]
    assert [record["id"] for record in references["records"]] == ["W1", "W2"]
    assert references["next_cursor"] is None  # fewer records than a page: the last one
    assert people["records"][0] == {
        "id": "A5023888391",
        "name": "Heather Piwowar",
        "orcid": "https://orcid.org/0000-0003-1613-5981",
        "works_count": 120,
        "cited_by_count": 5000,
        "h_index": 25,
        "institutions": "OurResearch",
    }
    assert {seen.query.get("api_key") for seen in origin.requests} == {"oa-key-0123456789"}
    assert {seen.query.get("mailto") for seen in origin.requests} == {"lab@example.org"}
    assert "oa-key-0123456789" not in json.dumps([search, detail, by_doi, references, people])


async def test_empty_results_and_refused_arguments(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/works", Reply.file("literature_graph/empty.json"))
    empty, unknown, bad_id, backwards = await calls(
        tmp_path,
        origin,
        ("search_works", {"query": "zzzxqj"}),
        ("search_authors", {"query": "x", "filter": "raw:injection"}),
        ("get_references", {"work": "https://evil.example/W1"}),
        ("search_works", {"query": "x", "from_year": 2020, "to_year": 2010}),
    )
    assert (empty["total"], empty["records"], empty["next_cursor"]) == (0, [], None)
    assert unknown["details"]["errors"] == [{"field": "filter", "problem": "extra_forbidden"}]
    assert bad_id["code"] == backwards["code"] == "validation_error"
    assert origin.paths() == ["/works"]
