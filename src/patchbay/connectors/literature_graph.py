"""literature-graph: the built-in connector for the OpenAlex scholarly graph (4 read-only tools).

* ``search_works``: works matching a search (``/works?search=``), optionally from a year range,
  cursor paging.
* ``get_work``: one work by OpenAlex id (``W…``) or DOI, with its abstract (rebuilt from
  OpenAlex's inverted index, cut) and counts.
* ``get_references``: the works one work cites (``/works?filter=cited_by:W…``), cursor paging.
* ``search_authors``: authors matching a name (``/authors?search=``), cursor paging.

``OPENALEX_API_KEY`` (a credential binding) is sent as ``api_key`` and never shown; the contact of
``PATCHBAY_SCIENCE_CONTACT`` is sent as ``mailto`` (OpenAlex's polite pool). Run: ``python -I -m
patchbay.connectors.literature_graph``.

Design: docs/builtins.md
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import pydantic
from pydantic import Field

from patchbay.connectors._http import CONTACT_ENV, Origin, SourceClient, json_object
from patchbay.connectors._records import ABSTRACT_CHARS, as_int, authors, clip
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance

__all__ = ["NAME", "ORIGINS", "TOOLS"]

NAME = "literature-graph"
SOURCE = "OpenAlex"
API_KEY_ENV = "OPENALEX_API_KEY"
ORIGINS = {"openalex": Origin(SOURCE, "https://api.openalex.org", per_second=10)}
_FIELDS = (
    "id,doi,display_name,publication_year,publication_date,type,cited_by_count,authorships,"
    "primary_location,open_access,referenced_works_count"
)

Query = Annotated[str, Field(min_length=1, max_length=300, description="Search terms.")]
Cursor = Annotated[
    str | None,
    Field(
        default=None,
        max_length=400,
        pattern=r"^[A-Za-z0-9*+/=_-]+$",
        description="next_cursor of the previous page; omit for the first page.",
    ),
]
WorkId = Annotated[str, Field(pattern=r"^W[0-9]{1,12}$", description="An OpenAlex work id, e.g. W2741809807.")]


def _extra() -> dict[str, str]:
    """``api_key``/``mailto`` for every request (never part of a result)."""
    params: dict[str, str] = {}
    key = os.environ.get(API_KEY_ENV, "").strip()
    if key:
        params["api_key"] = key
    contact = os.environ.get(CONTACT_ENV, "").strip()
    if contact and "@" in contact and len(contact) <= 200:
        params["mailto"] = contact
    return params


def _abstract(index: object) -> str:
    """The abstract OpenAlex ships as an inverted index (word → positions), as text."""
    if not isinstance(index, dict):
        return ""
    words: dict[int, str] = {}
    for word, positions in index.items():
        if isinstance(word, str) and isinstance(positions, list):
            for position in positions[:10_000]:
                if isinstance(position, int) and 0 <= position < 100_000:
                    words[position] = word
    return " ".join(words[position] for position in sorted(words))


def _short_id(value: object) -> str | None:
    """``W123`` from ``https://openalex.org/W123``."""
    return value.rsplit("/", 1)[-1] if isinstance(value, str) and value else None


def _work(item: dict[str, Any], *, abstract: int = 0) -> dict[str, Any]:
    names = [
        ((entry.get("author") or {}).get("display_name") or "")
        for entry in item.get("authorships") or []
        if isinstance(entry, dict)
    ]
    source = ((item.get("primary_location") or {}).get("source") or {}).get("display_name")
    open_access = item.get("open_access") or {}
    record = {
        "id": _short_id(item.get("id")),
        "doi": item.get("doi"),
        "title": clip(item.get("display_name") or item.get("title"), 300),
        "authors": authors(names),
        "year": as_int(item.get("publication_year")),
        "date": item.get("publication_date"),
        "type": item.get("type"),
        "venue": clip(source, 200) or None,
        "cited_by_count": as_int(item.get("cited_by_count")),
        "references_count": as_int(item.get("referenced_works_count")),
        "open_access": bool(open_access.get("is_oa")),
        "oa_url": open_access.get("oa_url"),
    }
    if abstract:
        record["abstract"] = clip(_abstract(item.get("abstract_inverted_index")), abstract)
    return record


def _page(data: dict[str, Any], records: list[dict[str, Any]], page_size: int) -> tuple[int, str | None]:
    meta = data.get("meta") or {}
    following = meta.get("next_cursor")
    more = isinstance(following, str) and bool(following) and len(records) >= page_size
    return as_int(meta.get("count")) or 0, following if more else None


class WorkSearch(Arguments):
    query: Query
    from_year: int | None = Field(default=None, ge=1500, le=2100, description="Earliest publication year.")
    to_year: int | None = Field(default=None, ge=1500, le=2100, description="Latest publication year.")
    page_size: int = Field(default=10, ge=1, le=25, description="Records per page.")
    cursor: Cursor

    @pydantic.model_validator(mode="after")
    def _years(self) -> WorkSearch:
        if self.from_year is not None and self.to_year is not None and self.from_year > self.to_year:
            raise ValueError("from_year is after to_year")
        return self


async def search_works(args: WorkSearch, http: SourceClient) -> dict[str, Any]:
    params: dict[str, str | int] = {
        "search": args.query,
        "per-page": args.page_size,
        "cursor": args.cursor or "*",
        "select": _FIELDS,
    }
    years = [f"from_publication_date:{args.from_year}-01-01"] if args.from_year else []
    years += [f"to_publication_date:{args.to_year}-12-31"] if args.to_year else []
    if years:
        params["filter"] = ",".join(years)
    fetched = await http.get("openalex", "/works", {**params, **_extra()})
    data = json_object(fetched, SOURCE)
    records = [_work(item) for item in data.get("results") or [] if isinstance(item, dict)]
    total, following = _page(data, records, args.page_size)
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, params),
        "total": total,
        "records": records,
        "next_cursor": following,
    }


class WorkDetail(Arguments):
    work: str = Field(
        max_length=200,
        pattern=r"^(W[0-9]{1,12}|10\.[0-9]{4,9}/[^\s]{1,180})$",
        description="An OpenAlex work id (W2741809807) or a DOI (10.7717/peerj.4375).",
    )


async def get_work(args: WorkDetail, http: SourceClient) -> dict[str, Any]:
    key = args.work if args.work.startswith("W") else f"doi:{args.work}"
    fetched = await http.get("openalex", f"/works/{key}", _extra())
    item = json_object(fetched, SOURCE)
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, {"work": args.work}),
        "record": _work(item, abstract=ABSTRACT_CHARS * 2),
    }


class References(Arguments):
    work: WorkId
    page_size: int = Field(default=10, ge=1, le=25, description="Records per page.")
    cursor: Cursor


async def get_references(args: References, http: SourceClient) -> dict[str, Any]:
    params: dict[str, str | int] = {
        "filter": f"cited_by:{args.work}",
        "per-page": args.page_size,
        "cursor": args.cursor or "*",
        "select": _FIELDS,
    }
    fetched = await http.get("openalex", "/works", {**params, **_extra()})
    data = json_object(fetched, SOURCE)
    records = [_work(item) for item in data.get("results") or [] if isinstance(item, dict)]
    total, following = _page(data, records, args.page_size)
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, params),
        "work": args.work,
        "total": total,
        "records": records,
        "next_cursor": following,
    }


class AuthorSearch(Arguments):
    query: Query
    page_size: int = Field(default=10, ge=1, le=25, description="Records per page.")
    cursor: Cursor


def _author(item: dict[str, Any]) -> dict[str, Any]:
    places = [
        entry.get("display_name", "") for entry in item.get("last_known_institutions") or [] if isinstance(entry, dict)
    ]
    return {
        "id": _short_id(item.get("id")),
        "name": clip(item.get("display_name"), 200),
        "orcid": item.get("orcid"),
        "works_count": as_int(item.get("works_count")),
        "cited_by_count": as_int(item.get("cited_by_count")),
        "h_index": as_int((item.get("summary_stats") or {}).get("h_index")),
        "institutions": authors(places),
    }


async def search_authors(args: AuthorSearch, http: SourceClient) -> dict[str, Any]:
    params: dict[str, str | int] = {"search": args.query, "per-page": args.page_size, "cursor": args.cursor or "*"}
    fetched = await http.get("openalex", "/authors", {**params, **_extra()})
    data = json_object(fetched, SOURCE)
    records = [_author(item) for item in data.get("results") or [] if isinstance(item, dict)]
    total, following = _page(data, records, args.page_size)
    return {
        "provenance": provenance(SOURCE, fetched.endpoint, fetched.retrieved_at, params),
        "total": total,
        "records": records,
        "next_cursor": following,
    }


TOOLS = (
    BuiltinTool(
        "search_works",
        "Search works (OpenAlex)",
        "Search OpenAlex works (papers, books, datasets), optionally by publication year; page with next_cursor.",
        WorkSearch,
        search_works,
    ),
    BuiltinTool(
        "get_work",
        "Work detail (OpenAlex)",
        "One OpenAlex work by id or DOI: title, authors, venue, counts, open access and the abstract (cut).",
        WorkDetail,
        get_work,
    ),
    BuiltinTool(
        "get_references",
        "References of a work (OpenAlex)",
        "The works one OpenAlex work cites; page with next_cursor.",
        References,
        get_references,
    ),
    BuiltinTool(
        "search_authors",
        "Search authors (OpenAlex)",
        "Search OpenAlex authors by name: ORCID, counts, h-index, last known institutions; page with next_cursor.",
        AuthorSearch,
        search_authors,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, ORIGINS)
