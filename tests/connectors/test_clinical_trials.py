"""clinical-trials end to end: the real connector process over stdio under a governed Runtime,
answering from ClinicalTrials.gov-v2-shaped fixtures served by a fake origin on 127.0.0.1."""

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

STUDIES = "/api/v2/studies"


@pytest.fixture
def origin() -> Iterator[FakeOrigin]:
    with FakeOrigin() as fake:
        yield fake


def server(origin: FakeOrigin) -> RuntimeServer:
    return builtin_server("clinical-trials", origin)


async def calls(tmp_path: Path, origin: FakeOrigin, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run each ``(tool, arguments)``; a result's record, or the ToolCallError's error record."""
    return await call_each(tmp_path, server(origin), *steps)


async def test_the_tools_are_strict_read_only_and_ask_by_default(tmp_path: Path, origin: FakeOrigin) -> None:
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server(origin)), settings=Settings(home=tmp_path / "h")) as runtime:
            tools = {tool.name: tool for tool in await runtime.list_tools()}
    assert sorted(tools) == [
        "mcp.clinical-trials.get_study",
        "mcp.clinical-trials.search_eligibility",
        "mcp.clinical-trials.search_studies",
    ]
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        assert tool.annotations["readOnlyHint"] is True
    search = tools["mcp.clinical-trials.search_studies"].input_schema["properties"]
    assert (search["page_size"]["maximum"], search["query"]["anyOf"][0]["maxLength"]) == (50, 300)


async def test_search_pages_with_the_next_page_token(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.queue(f"{STUDIES}?query.term=remdesivir", Reply.file("clinical_trials/search_page1.json"))
    origin.route(f"{STUDIES}?query.term=remdesivir", Reply.file("clinical_trials/empty.json"))
    first, following = await calls(
        tmp_path,
        origin,
        ("search_studies", {"query": "remdesivir", "statuses": ["COMPLETED"], "page_size": 2}),
        ("search_studies", {"query": "remdesivir", "page_size": 2, "cursor": "NF0g5JGBlPMuwQY"}),
    )
    assert (first["total"], first["next_cursor"]) == (3, "NF0g5JGBlPMuwQY")
    assert first["records"][0] == {
        "nct_id": "NCT04280705",
        "title": "Adaptive COVID-19 Treatment Trial (ACTT)",
        "status": "COMPLETED",
        "phases": ["PHASE3"],
        "study_type": "INTERVENTIONAL",
        "conditions": ["COVID-19"],
        "interventions": ["Remdesivir", "Placebo"],
        "sponsor": "National Institute of Allergy and Infectious Diseases (NIAID)",
        "enrollment": 1062,
        "start_date": "2020-02-21",
        "primary_completion_date": "2020-04-19",
        "has_results": True,
    }
    assert first["records"][1]["conditions"] == ["COVID-19", "SARS-CoV-2", "Severe Pneumonia", "Respiratory Failure"]
    assert first["records"][1]["enrollment"] == 4891
    assert first["provenance"]["source"] == "ClinicalTrials.gov"
    assert first["provenance"]["request"]["filter.overallStatus"] == "COMPLETED"
    assert (following["total"], following["records"], following["next_cursor"]) == (0, [], None)
    sent = origin.requests
    assert (sent[0].query["pageSize"], sent[0].query["countTotal"]) == ("2", "true")
    assert "pageToken" not in sent[0].query and sent[1].query["pageToken"] == "NF0g5JGBlPMuwQY"


async def test_study_detail_and_eligibility_search(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.route(f"{STUDIES}/NCT04280705", Reply.file("clinical_trials/study_detail.json"))
    origin.route(STUDIES, Reply.file("clinical_trials/eligibility.json"))
    detail, eligible = await calls(
        tmp_path,
        origin,
        ("get_study", {"nct_id": "NCT04280705"}),
        ("search_eligibility", {"condition": "breast cancer", "age_years": 45, "sex": "FEMALE", "page_size": 5}),
    )
    record = detail["record"]
    assert record["summary"].startswith("This study is an adaptive, randomized, double-blind, placebo-controlled")
    assert record["arms"] == [
        {"label": "Remdesivir", "type": "EXPERIMENTAL"},
        {"label": "Placebo", "type": "PLACEBO_COMPARATOR"},
    ]
    assert record["primary_outcomes"] == [{"measure": "Time to recovery", "time_frame": "Day 1 through Day 29"}]
    assert record["eligibility"]["minimum_age"] == "18 Years"
    assert record["eligibility"]["criteria"].startswith("Inclusion Criteria: * Admitted to a hospital")
    assert detail["provenance"]["request"] == {"nct_id": "NCT04280705"}
    assert eligible["records"] == [
        {
            "nct_id": "NCT05000001",
            "title": "Metformin in Early Breast Cancer",
            "status": "RECRUITING",
            "phases": ["PHASE2"],
            "conditions": ["Breast Cancer"],
            "eligibility": {
                "criteria": "Inclusion Criteria: * Women aged 18 to 70 with stage I-III breast cancer.",
                "sex": "FEMALE",
                "minimum_age": "18 Years",
                "maximum_age": "70 Years",
                "healthy_volunteers": False,
                "age_groups": ["ADULT", "OLDER_ADULT"],
            },
        }
    ]
    assert eligible["next_cursor"] is None
    sent = origin.requests[1].query
    assert sent["query.cond"] == "breast cancer"
    assert sent["filter.overallStatus"] == "RECRUITING,NOT_YET_RECRUITING"
    assert sent["filter.advanced"] == (
        "AREA[MinimumAge]RANGE[MIN, 45 years] AND AREA[MaximumAge]RANGE[45 years, MAX]"
        " AND (AREA[Sex]ALL OR AREA[Sex]FEMALE)"
    )


async def test_unknown_fields_and_bad_values_are_refused_before_any_request(tmp_path: Path, origin: FakeOrigin) -> None:
    unknown, raw, bad_id, nothing, too_old = await calls(
        tmp_path,
        origin,
        ("search_studies", {"query": "x", "filter.advanced": "AREA[Phase]PHASE1"}),
        ("search_eligibility", {"condition": "x", "sex": "AREA[Sex]ALL"}),
        ("get_study", {"nct_id": "../studies?x=1"}),
        ("search_studies", {}),
        ("search_eligibility", {"condition": "x", "age_years": 500}),
    )
    assert unknown["details"]["errors"] == [{"field": "filter.advanced", "problem": "extra_forbidden"}]
    assert {raw["code"], bad_id["code"], nothing["code"], too_old["code"]} == {"validation_error"}
    assert "AREA" not in json.dumps(raw)
    assert origin.paths() == []


async def test_a_429_with_retry_after_then_success_and_5xx_exhaustion(tmp_path: Path, origin: FakeOrigin) -> None:
    origin.queue(STUDIES, Reply(429, headers={"Retry-After": "1"}))
    origin.route(STUDIES, Reply.file("clinical_trials/empty.json"))
    origin.route(f"{STUDIES}/NCT00000001", Reply(502))
    retried, failed = await calls(
        tmp_path,
        origin,
        ("search_studies", {"condition": "asthma"}),
        ("get_study", {"nct_id": "NCT00000001"}),
    )
    assert (retried["total"], retried["records"]) == (0, [])
    assert origin.paths().count(STUDIES) == 2
    assert failed["code"] == "source_unavailable"
    assert failed["details"] == {"source": "ClinicalTrials.gov", "status": 502}
    assert origin.paths().count(f"{STUDIES}/NCT00000001") == 3
