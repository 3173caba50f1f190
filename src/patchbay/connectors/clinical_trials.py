"""clinical-trials: the built-in connector for ClinicalTrials.gov (API v2, 3 read-only tools).

* ``search_studies``: studies matching a search (``/api/v2/studies?query.term=``), optionally by
  condition, intervention and overall status; ``nextPageToken`` paging.
* ``get_study``: one study by NCT number (``/api/v2/studies/{NCT…}``): design, arms, outcomes,
  eligibility (cut).
* ``search_eligibility``: studies whose eligibility admits a participant described by typed
  fields (condition, age in years, sex, healthy volunteers); the connector builds the
  ``filter.advanced`` expression from those validated values only, never from model text.

Rate: ClinicalTrials.gov asks for about 50 requests per minute. Run: ``python -I -m
patchbay.connectors.clinical_trials``.

Design: docs/builtins.md
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from patchbay.connectors._http import Origin, SourceClient, json_object
from patchbay.connectors._records import ABSTRACT_CHARS, as_int, clip
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance
from patchbay.core.errors import ValidationError

__all__ = ["NAME", "ORIGINS", "TOOLS"]

NAME = "clinical-trials"
SOURCE = "ClinicalTrials.gov"
ORIGINS = {"ctgov": Origin(SOURCE, "https://clinicaltrials.gov", per_second=50 / 60)}
STUDIES = "/api/v2/studies"
CRITERIA_CHARS = 1_500
"""Characters of a study's eligibility criteria text a result keeps."""
_LIST_FIELDS = (
    "NCTId,BriefTitle,OverallStatus,Phase,StudyType,Condition,InterventionName,LeadSponsorName,"
    "EnrollmentCount,StartDate,PrimaryCompletionDate,HasResults"
)
_ELIGIBILITY_FIELDS = (
    "NCTId,BriefTitle,OverallStatus,Phase,Condition,EligibilityCriteria,Sex,MinimumAge,MaximumAge,"
    "HealthyVolunteers,StdAge"
)

Status = Literal[
    "RECRUITING",
    "NOT_YET_RECRUITING",
    "ACTIVE_NOT_RECRUITING",
    "ENROLLING_BY_INVITATION",
    "COMPLETED",
    "SUSPENDED",
    "TERMINATED",
    "WITHDRAWN",
    "UNKNOWN",
]
PageSize = Annotated[int, Field(default=10, ge=1, le=50, description="Studies per page.")]
Cursor = Annotated[
    str | None,
    Field(
        default=None,
        max_length=200,
        pattern=r"^[A-Za-z0-9+/=_-]+$",
        description="next_cursor of the previous page; omit for the first page.",
    ),
]
Statuses = Annotated[
    list[Status] | None,
    Field(default=None, min_length=1, max_length=9, description="Overall statuses to keep (any of them)."),
]


def _protocol(item: dict[str, Any]) -> dict[str, Any]:
    section = item.get("protocolSection")
    return section if isinstance(section, dict) else {}


def _module(protocol: dict[str, Any], name: str) -> dict[str, Any]:
    module = protocol.get(name)
    return module if isinstance(module, dict) else {}


def _strings(value: object, keep: int = 10) -> list[str]:
    """The first ``keep`` strings of a JSON list, each cut to 200 characters."""
    return [clip(entry, 200) for entry in value[:keep] if isinstance(entry, str)] if isinstance(value, list) else []


def _date(module: dict[str, Any], name: str) -> str | None:
    value = (module.get(name) or {}).get("date") if isinstance(module.get(name), dict) else None
    return value if isinstance(value, str) else None


def _summary(item: dict[str, Any]) -> dict[str, Any]:
    """The compact record of a study in a list."""
    protocol = _protocol(item)
    ident = _module(protocol, "identificationModule")
    status = _module(protocol, "statusModule")
    design = _module(protocol, "designModule")
    interventions = _module(protocol, "armsInterventionsModule").get("interventions") or []
    names = [entry.get("name", "") for entry in interventions if isinstance(entry, dict)]
    return {
        "nct_id": ident.get("nctId"),
        "title": clip(ident.get("briefTitle"), 300),
        "status": status.get("overallStatus"),
        "phases": _strings(design.get("phases")),
        "study_type": design.get("studyType"),
        "conditions": _strings(_module(protocol, "conditionsModule").get("conditions")),
        "interventions": _strings(list(dict.fromkeys(names))),
        "sponsor": clip((_module(protocol, "sponsorCollaboratorsModule").get("leadSponsor") or {}).get("name"), 200),
        "enrollment": as_int((design.get("enrollmentInfo") or {}).get("count")),
        "start_date": _date(status, "startDateStruct"),
        "primary_completion_date": _date(status, "primaryCompletionDateStruct"),
        "has_results": bool(item.get("hasResults")),
    }


def _eligibility(protocol: dict[str, Any], chars: int) -> dict[str, Any]:
    module = _module(protocol, "eligibilityModule")
    return {
        "criteria": clip(module.get("eligibilityCriteria"), chars),
        "sex": module.get("sex"),
        "minimum_age": module.get("minimumAge"),
        "maximum_age": module.get("maximumAge"),
        "healthy_volunteers": module.get("healthyVolunteers"),
        "age_groups": _strings(module.get("stdAges")),
    }


def _page(data: dict[str, Any]) -> tuple[int | None, list[dict[str, Any]], str | None]:
    studies = [item for item in data.get("studies") or [] if isinstance(item, dict)]
    following = data.get("nextPageToken")
    return as_int(data.get("totalCount")), studies, following if isinstance(following, str) and following else None


class StudySearch(Arguments):
    query: str | None = Field(default=None, min_length=1, max_length=300, description="Search terms (any field).")
    condition: str | None = Field(default=None, min_length=1, max_length=200, description="A condition or disease.")
    intervention: str | None = Field(default=None, min_length=1, max_length=200, description="A drug or intervention.")
    statuses: Statuses
    page_size: PageSize
    cursor: Cursor


def _search_params(args: StudySearch) -> dict[str, str | int]:
    params: dict[str, str | int] = {"pageSize": args.page_size, "countTotal": "true", "format": "json"}
    for name, value in (("query.term", args.query), ("query.cond", args.condition), ("query.intr", args.intervention)):
        if value:
            params[name] = value
    if args.statuses:
        params["filter.overallStatus"] = ",".join(dict.fromkeys(args.statuses))
    if args.cursor:
        params["pageToken"] = args.cursor
    return params


async def search_studies(args: StudySearch, http: SourceClient) -> dict[str, Any]:
    if not (args.query or args.condition or args.intervention):
        raise ValidationError(
            "give at least one of query, condition or intervention",
            details={"errors": [{"field": "query", "problem": "missing"}]},
        )
    params = _search_params(args)
    fetched = await http.get("ctgov", STUDIES, {**params, "fields": _LIST_FIELDS})
    total, studies, following = _page(json_object(fetched, SOURCE))
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, params),
        "total": total,
        "records": [_summary(item) for item in studies],
        "next_cursor": following,
    }


class StudyDetail(Arguments):
    nct_id: str = Field(pattern=r"^NCT[0-9]{8}$", description="A ClinicalTrials.gov NCT number, e.g. NCT04280705.")


def _outcomes(value: object) -> list[dict[str, str]]:
    if not isinstance(value, list):
        return []
    return [
        {"measure": clip(entry.get("measure"), 300), "time_frame": clip(entry.get("timeFrame"), 200)}
        for entry in value[:10]
        if isinstance(entry, dict)
    ]


async def get_study(args: StudyDetail, http: SourceClient) -> dict[str, Any]:
    params: dict[str, str | int] = {"format": "json"}
    fetched = await http.get("ctgov", f"{STUDIES}/{args.nct_id}", params)
    item = json_object(fetched, SOURCE)
    protocol = _protocol(item)
    arms = _module(protocol, "armsInterventionsModule")
    outcomes = _module(protocol, "outcomesModule")
    record = _summary(item)
    record.update(
        {
            "official_title": clip(_module(protocol, "identificationModule").get("officialTitle"), 400),
            "summary": clip(_module(protocol, "descriptionModule").get("briefSummary"), ABSTRACT_CHARS * 2),
            "arms": [
                {"label": clip(arm.get("label"), 200), "type": arm.get("type")}
                for arm in (arms.get("armGroups") or [])[:10]
                if isinstance(arm, dict)
            ],
            "intervention_list": [
                {"type": entry.get("type"), "name": clip(entry.get("name"), 200)}
                for entry in (arms.get("interventions") or [])[:10]
                if isinstance(entry, dict)
            ],
            "primary_outcomes": _outcomes(outcomes.get("primaryOutcomes")),
            "secondary_outcomes": _outcomes(outcomes.get("secondaryOutcomes")),
            "eligibility": _eligibility(protocol, CRITERIA_CHARS),
        }
    )
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, {"nct_id": args.nct_id}),
        "record": record,
    }


class EligibilitySearch(Arguments):
    condition: str = Field(min_length=1, max_length=200, description="A condition or disease.")
    age_years: int | None = Field(default=None, ge=0, le=120, description="The participant's age in years.")
    sex: Literal["FEMALE", "MALE"] | None = Field(default=None, description="The participant's sex.")
    healthy_volunteer: bool | None = Field(default=None, description="True: only studies accepting healthy volunteers.")
    statuses: Statuses
    page_size: PageSize
    cursor: Cursor


def _advanced(args: EligibilitySearch) -> str | None:
    """The ``filter.advanced`` expression, built from typed values only (no model text)."""
    terms: list[str] = []
    if args.age_years is not None:
        terms.append(f"AREA[MinimumAge]RANGE[MIN, {args.age_years} years]")
        terms.append(f"AREA[MaximumAge]RANGE[{args.age_years} years, MAX]")
    if args.sex is not None:
        terms.append(f"(AREA[Sex]ALL OR AREA[Sex]{args.sex})")
    if args.healthy_volunteer:
        terms.append("AREA[HealthyVolunteers]true")
    return " AND ".join(terms) or None


async def search_eligibility(args: EligibilitySearch, http: SourceClient) -> dict[str, Any]:
    params: dict[str, str | int] = {
        "query.cond": args.condition,
        "filter.overallStatus": ",".join(dict.fromkeys(args.statuses or ["RECRUITING", "NOT_YET_RECRUITING"])),
        "pageSize": args.page_size,
        "countTotal": "true",
        "format": "json",
    }
    advanced = _advanced(args)
    if advanced:
        params["filter.advanced"] = advanced
    if args.cursor:
        params["pageToken"] = args.cursor
    fetched = await http.get("ctgov", STUDIES, {**params, "fields": _ELIGIBILITY_FIELDS})
    total, studies, following = _page(json_object(fetched, SOURCE))
    records = []
    for item in studies:
        summary = _summary(item)
        records.append(
            {
                "nct_id": summary["nct_id"],
                "title": summary["title"],
                "status": summary["status"],
                "phases": summary["phases"],
                "conditions": summary["conditions"],
                "eligibility": _eligibility(_protocol(item), ABSTRACT_CHARS),
            }
        )
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, params),
        "total": total,
        "records": records,
        "next_cursor": following,
    }


TOOLS = (
    BuiltinTool(
        "search_studies",
        "Search clinical studies (ClinicalTrials.gov)",
        "Search ClinicalTrials.gov studies by terms, condition and/or intervention, optionally by overall "
        "status; at least one of query, condition, intervention; page with next_cursor.",
        StudySearch,
        search_studies,
    ),
    BuiltinTool(
        "get_study",
        "Study detail (ClinicalTrials.gov)",
        "One study by NCT number: status, design, arms, interventions, outcomes and eligibility (criteria cut).",
        StudyDetail,
        get_study,
    ),
    BuiltinTool(
        "search_eligibility",
        "Eligibility search (ClinicalTrials.gov)",
        "Studies for a condition whose eligibility admits a participant of a given age, sex and healthy-volunteer "
        "status (default: recruiting or not yet recruiting); criteria cut; page with next_cursor.",
        EligibilitySearch,
        search_eligibility,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, ORIGINS)
