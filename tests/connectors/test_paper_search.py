"""paper-search end to end: the real connector process over stdio (``python -I -m
patchbay.connectors.paper_search``), driven by a governed Runtime, answering from the committed
fixtures served by a fake origin on 127.0.0.1 (the loopback ``--base-url`` override)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeServer, Settings, ToolCallError
from patchbay.adapters.egress_audit import read_audit
from patchbay.core.credentials import CredentialBinding
from patchbay.core.errors import FailureReason
from patchbay.core.models import ConnectorSettings, StdioTarget
from patchbay.runtime import read_events
from tests.support.recording import config
from tests.support.science import FakeOrigin, Reply

pytestmark = pytest.mark.anyio

EPMC = "/europepmc/webservices/rest"
PAGE_2 = "AoIIP4AAACgyNjc0NTM4OQ=="


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def paper_search(
    origin: FakeOrigin, *, approval: str = "allow_all", audit: Path | None = None, **env: str
) -> RuntimeServer:
    audited = ("--audit-file", str(audit), "--connector-id", "id-paper-search") if audit else ()
    return RuntimeServer(
        connector_id="id-paper-search",
        name="paper-search",
        target=StdioTarget(
            command=sys.executable,
            args=("-I", "-m", "patchbay.connectors.paper_search", "--base-url", origin.url, *audited),
        ),
        settings=ConnectorSettings(approval_mode=approval),  # type: ignore[arg-type]
        bindings=tuple(CredentialBinding(delivery="env", name=name, value=value) for name, value in env.items()),
    )


@asynccontextmanager
async def running(tmp_path: Path, server: RuntimeServer) -> AsyncIterator[Runtime]:
    async with Runtime(config(tmp_path, server), settings=Settings(home=tmp_path / "home")) as runtime:
        yield runtime


async def call(runtime: Runtime, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await runtime.call(f"mcp.paper-search.{tool}", arguments)
    assert result.structured_content == json.loads(result.text)
    return dict(result.structured_content)


def error_of(info: pytest.ExceptionInfo[ToolCallError]) -> dict[str, Any]:
    assert info.value.reason is FailureReason.TOOL_ERROR
    return dict(json.loads(info.value.result.text))


async def test_the_four_tools_are_read_only_with_strict_schemas(tmp_path: Path, origin: FakeOrigin) -> None:
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin, approval="ask")) as runtime:
            tools = {tool.tool: tool for tool in await runtime.list_tools()}
    assert sorted(tools) == ["read_europepmc_fulltext", "search_europepmc", "search_preprints", "search_pubmed"]
    for tool in tools.values():
        assert tool.risk == "read"
        assert tool.decision == "ask"  # default Ask, even though every tool is read-only
        assert tool.input_schema["additionalProperties"] is False
    assert tools["search_pubmed"].input_schema["properties"]["query"]["maxLength"] == 500
    assert tools["search_europepmc"].input_schema["properties"]["page_size"]["maximum"] == 25


async def test_europepmc_search_pages_with_its_cursor(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{EPMC}/search?cursorMark=*", Reply.file("paper_search/epmc_search_page1.json"))
    origin.route(f"{EPMC}/search?cursorMark={PAGE_2}", Reply.file("paper_search/epmc_search_page2.json"))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            first = await call(runtime, "search_europepmc", {"query": "p53 apoptosis", "page_size": 2})
            second = await call(
                runtime, "search_europepmc", {"query": "p53 apoptosis", "page_size": 2, "cursor": first["next_cursor"]}
            )
    assert first["total"] == 3
    assert first["next_cursor"] == PAGE_2
    assert second["next_cursor"] is None
    assert [record["id"] for record in first["records"] + second["records"]] == ["38000001", "PPR000002", "37000003"]
    record = first["records"][0]
    assert record["authors"] == "Smith J, Doe A, Roe B, et al. (5 authors)"
    assert record["title"] == "p53 controls apoptosis in model cells."
    assert record["journal"] == "Journal of Examples"
    assert (record["year"], record["open_access"], record["full_text_available"]) == (2024, True, True)
    assert first["provenance"]["source"] == "Europe PMC"
    assert first["provenance"]["endpoint"] == f"{origin.url}{EPMC}/search"
    assert first["provenance"]["retrieved_at"].endswith("Z")
    assert first["provenance"]["request"] == {
        "query": "p53 apoptosis",
        "format": "json",
        "resultType": "core",
        "pageSize": 2,
        "cursorMark": "*",
    }
    assert origin.requests[0].query["resultType"] == "core"
    assert origin.requests[0].headers["user-agent"].startswith("patchbay/")


async def test_an_empty_search_has_no_records_and_no_cursor(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{EPMC}/search", Reply.file("paper_search/epmc_search_empty.json"))
    origin.route("/entrez/eutils/esearch.fcgi", Reply.file("paper_search/pubmed_esearch_empty.json"))
    origin.route("/details/medrxiv/2024-01-01/2024-01-02/0/json", Reply.file("paper_search/biorxiv_empty.json"))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            europe = await call(runtime, "search_europepmc", {"query": "zzzxqj"})
            pubmed = await call(runtime, "search_pubmed", {"query": "zzzxqj"})
            preprints = await call(
                runtime, "search_preprints", {"server": "medrxiv", "from_date": "2024-01-01", "to_date": "2024-01-02"}
            )
    for result in (europe, pubmed, preprints):
        assert (result["total"], result["records"], result["next_cursor"]) == (0, [], None)
    assert "/entrez/eutils/esummary.fcgi" not in origin.paths()  # nothing to summarise


async def test_unknown_fields_and_bad_values_are_refused_before_any_request(tmp_path: Path, origin: FakeOrigin) -> None:
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            with pytest.raises(ToolCallError) as unknown:
                await runtime.call("mcp.paper-search.search_pubmed", {"query": "p53", "sort": "date"})
            with pytest.raises(ToolCallError) as too_big:
                await runtime.call("mcp.paper-search.search_europepmc", {"query": "p53", "page_size": 1000})
            with pytest.raises(ToolCallError) as backwards:
                await runtime.call(
                    "mcp.paper-search.search_preprints",
                    {"server": "biorxiv", "from_date": "2024-02-01", "to_date": "2024-01-01"},
                )
    assert error_of(unknown)["code"] == "validation_error"
    assert error_of(unknown)["details"]["errors"] == [{"field": "sort", "problem": "extra_forbidden"}]
    assert error_of(too_big)["details"]["errors"][0]["field"] == "page_size"
    assert error_of(backwards)["code"] == "validation_error"
    assert origin.requests == []


async def test_the_full_text_is_read_in_capped_pieces(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{EPMC}/PMC10000001/fullTextXML", Reply.file("paper_search/epmc_fulltext.xml", "application/xml"))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            whole = await call(runtime, "read_europepmc_fulltext", {"pmcid": "PMC10000001"})
            piece = await call(runtime, "read_europepmc_fulltext", {"pmcid": "PMC10000001", "max_chars": 1000})
    assert whole["title"] == "p53 controls apoptosis in model cells"
    assert whole["text"].startswith("## Abstract\n\nThe p53 protein regulates apoptosis.")
    assert "## Results\n\nWe observed RESULTS.\n\nSecond paragraph." in whole["text"]
    assert (whole["truncated"], whole["next_offset"]) == (False, None)
    assert whole["total_chars"] == len(whole["text"]) == piece["total_chars"]
    assert piece["text"] == whole["text"][:1000]
    assert whole["provenance"]["request"] == {"pmcid": "PMC10000001", "max_chars": 20000, "offset": 0}


async def test_preprints_page_through_a_date_range(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/details/biorxiv/2024-01-01/2024-01-31/0/json", Reply.file("paper_search/biorxiv_details.json"))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            page = await call(
                runtime,
                "search_preprints",
                {
                    "server": "biorxiv",
                    "from_date": "2024-01-01",
                    "to_date": "2024-01-31",
                    "page_size": 2,
                    "category": "neuroscience",
                },
            )
    assert (page["total"], page["next_cursor"]) == (3, 2)
    assert [record["doi"] for record in page["records"]] == ["10.1101/2024.01.03.111111", "10.1101/2024.01.04.222222"]
    assert page["records"][0]["authors"] == "Alpha, A, Beta, B, Gamma, G, et al. (4 authors)"
    assert page["records"][0]["url"] == "https://doi.org/10.1101/2024.01.03.111111"
    assert page["provenance"]["source"] == "bioRxiv"
    assert origin.requests[0].query == {"category": "neuroscience"}


async def test_pubmed_uses_the_bound_api_key_and_never_shows_it(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route("/entrez/eutils/esearch.fcgi", Reply.file("paper_search/pubmed_esearch.json"))
    origin.route("/entrez/eutils/esummary.fcgi", Reply.file("paper_search/pubmed_esummary.json"))
    server = paper_search(origin, NCBI_API_KEY="k-0123456789abcdef", PATCHBAY_SCIENCE_CONTACT="lab@example.org")
    with anyio.fail_after(30):
        async with running(tmp_path, server) as runtime:
            page = await call(runtime, "search_pubmed", {"query": "p53 apoptosis", "page_size": 2})
            log = read_events(runtime.event_log_path)
    assert [record["pmid"] for record in page["records"]] == ["38000001", "37000003"]
    assert page["records"][0]["doi"] == "10.1000/example.1"
    assert page["records"][0]["authors"] == "Smith J, Doe A, Roe B, et al. (4 authors)"
    assert (page["total"], page["next_cursor"]) == (25, 2)
    assert page["provenance"]["api_key_used"] is True
    assert "k-0123456789abcdef" not in json.dumps(page) + json.dumps(log)
    assert [seen.query.get("api_key") for seen in origin.requests] == ["k-0123456789abcdef"] * 2
    assert origin.requests[1].query["id"] == "38000001,37000003"
    assert {seen.query["email"] for seen in origin.requests} == {"lab@example.org"}
    assert origin.requests[0].headers["user-agent"].endswith("mailto:lab@example.org)")


async def test_a_429_then_success_and_5xx_exhaustion_reach_the_caller_as_codes(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    origin.queue(f"{EPMC}/search", Reply(429, headers={"Retry-After": "0"}))
    origin.route(f"{EPMC}/search", Reply.file("paper_search/epmc_search_empty.json"))
    origin.route("/entrez/eutils/esearch.fcgi", Reply(500))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            retried = await call(runtime, "search_europepmc", {"query": "p53"})
            with pytest.raises(ToolCallError) as failed:
                await runtime.call("mcp.paper-search.search_pubmed", {"query": "p53"})
    assert retried["total"] == 0
    assert origin.paths().count(f"{EPMC}/search") == 2
    assert origin.paths().count("/entrez/eutils/esearch.fcgi") == 3  # bounded: three attempts
    assert error_of(failed)["code"] == "source_unavailable"
    assert error_of(failed)["details"] == {"source": "PubMed (NCBI E-utilities)", "status": 500}


async def test_an_oversized_body_and_a_cross_origin_redirect_are_refused(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{EPMC}/PMC1/fullTextXML", Reply(200, b"<a>" + b"x" * (5 * 1024 * 1024) + b"</a>"))
    origin.route(f"{EPMC}/search", Reply(302, headers={"Location": "https://evil.example.net/steal"}))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin)) as runtime:
            with pytest.raises(ToolCallError) as big:
                await runtime.call("mcp.paper-search.read_europepmc_fulltext", {"pmcid": "PMC1"})
            with pytest.raises(ToolCallError) as moved:
                await runtime.call("mcp.paper-search.search_europepmc", {"query": "p53"})
    assert error_of(big)["code"] == "source_response_too_large"
    assert error_of(moved)["code"] == "network_blocked"
    assert origin.paths().count(f"{EPMC}/search") == 1


async def test_a_headless_default_ask_call_never_reaches_the_source(tmp_path: Path, origin: FakeOrigin) -> None:
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin, approval="ask")) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.paper-search.search_pubmed", {"query": "p53"})
    assert info.value.reason is FailureReason.APPROVAL_UNAVAILABLE
    assert origin.requests == []


async def test_each_request_and_each_refusal_is_one_metadata_line_of_the_egress_audit(
    tmp_path: Path, origin: FakeOrigin
) -> None:
    audit = tmp_path / "home" / "egress-audit.jsonl"
    origin.route(f"{EPMC}/search", Reply(302, headers={"Location": "https://evil.example.net/steal?q=secret"}))
    origin.route("/entrez/eutils/esearch.fcgi", Reply.file("paper_search/pubmed_esearch_empty.json"))
    with anyio.fail_after(30):
        async with running(tmp_path, paper_search(origin, audit=audit, NCBI_API_KEY="k-0123456789abcdef")) as runtime:
            await call(runtime, "search_pubmed", {"query": "p53"})
            with pytest.raises(ToolCallError):
                await runtime.call("mcp.paper-search.search_europepmc", {"query": "p53"})
    lines = [entry for entry in read_audit(audit) if entry["note"] == "mcp_builtin_request"]
    assert [(entry["origin"], entry["approved"]) for entry in lines] == [(origin.url, True), (origin.url, False)]
    assert {entry["connector_id"] for entry in lines} == {"id-paper-search"}
    text = audit.read_text()
    assert "k-0123456789abcdef" not in text and "p53" not in text and "evil" not in text
