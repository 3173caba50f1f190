"""paper-search: the built-in connector for papers and preprints (4 read-only tools).

* ``search_europepmc``: Europe PMC search (REST ``/search``, ``resultType=core``), cursor paging.
* ``read_europepmc_fulltext``: the open-access full text of one PMC article (``/{PMCID}/fullTextXML``)
  as plain text, at most ``max_chars`` per call, paged by ``offset``.
* ``search_preprints``: bioRxiv or medRxiv posts in a date range (``api.biorxiv.org/details``).
* ``search_pubmed``: PubMed search (NCBI E-utilities ESearch, then ESummary for the records);
  ``NCBI_API_KEY`` from the environment (a credential binding) raises the rate limit from 3 to 10
  requests per second and is never shown in a result.

Every result: ``{"provenance": {...}, "total": n, "records": [...], "next_cursor": ...}`` (the
full-text reader: ``text``, ``truncated``, ``next_offset``). Run: ``python -I -m
patchbay.connectors.paper_search``.

Design: docs/builtins.md
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET  # expat refuses entity-expansion bombs and external entities; bodies are capped
from datetime import date
from typing import Annotated, Any, Literal

import pydantic
from pydantic import Field

from patchbay.connectors._http import CONTACT_ENV, Origin, SourceClient, json_object
from patchbay.connectors._records import ABSTRACT_CHARS, as_int, authors, clip, split_authors
from patchbay.connectors._server import Arguments, BuiltinTool, main, provenance
from patchbay.core.errors import ErrorCode, SourceError

__all__ = ["NAME", "ORIGINS", "TOOLS", "origins"]

NAME = "paper-search"
EPMC_REST = "/europepmc/webservices/rest"
API_KEY_ENV = "NCBI_API_KEY"
MAX_RANGE_DAYS = 366
"""The longest date range a preprint search may cover."""

Query = Annotated[str, Field(min_length=1, max_length=500, description="Search terms in the source's query syntax.")]
Day = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A date, YYYY-MM-DD.")]


def origins(api_key: str | None = None) -> dict[str, Origin]:
    """The fixed public origins; NCBI's rate depends on whether an API key is configured."""
    return {
        "epmc": Origin("Europe PMC", "https://www.ebi.ac.uk", per_second=10),
        "biorxiv": Origin("bioRxiv/medRxiv", "https://api.biorxiv.org", per_second=2),
        "ncbi": Origin("PubMed (NCBI E-utilities)", "https://eutils.ncbi.nlm.nih.gov", per_second=10 if api_key else 3),
    }


ORIGINS = origins()


# -- Europe PMC search -------------------------------------------------------------------------


class EuropePmcSearch(Arguments):
    query: Query
    page_size: int = Field(default=10, ge=1, le=25, description="Records per page.")
    cursor: str | None = Field(
        default=None,
        max_length=200,
        pattern=r"^[A-Za-z0-9*+/=_-]+$",
        description="next_cursor of the previous page; omit for the first page.",
    )


async def search_europepmc(args: EuropePmcSearch, http: SourceClient) -> dict[str, Any]:
    cursor = args.cursor or "*"
    params: dict[str, str | int] = {
        "query": args.query,
        "format": "json",
        "resultType": "core",
        "pageSize": args.page_size,
    }
    fetched = await http.get("epmc", f"{EPMC_REST}/search", {**params, "cursorMark": cursor})
    data = json_object(fetched, "Europe PMC")
    results = (data.get("resultList") or {}).get("result") or []
    records = [_epmc_record(item) for item in results if isinstance(item, dict)]
    following = data.get("nextCursorMark")
    more = isinstance(following, str) and following != cursor and len(records) >= args.page_size
    return {
        "provenance": provenance(
            "Europe PMC", fetched.endpoint, fetched.retrieved_at, {**params, "cursorMark": cursor}
        ),
        "total": as_int(data.get("hitCount")),
        "records": records,
        "next_cursor": following if more else None,
    }


def _epmc_record(item: dict[str, Any]) -> dict[str, Any]:
    journal = ((item.get("journalInfo") or {}).get("journal") or {}).get("title") or item.get("journalTitle")
    pmcid = item.get("pmcid")
    return {
        "id": item.get("id"),
        "source": item.get("source"),
        "pmid": item.get("pmid"),
        "pmcid": pmcid,
        "doi": item.get("doi"),
        "title": clip(item.get("title"), 300),
        "authors": authors(split_authors(item.get("authorString"), ",")),
        "journal": clip(journal, 200) or None,
        "year": as_int(item.get("pubYear")),
        "abstract": clip(item.get("abstractText"), ABSTRACT_CHARS),
        "open_access": item.get("isOpenAccess") == "Y",
        "full_text_available": bool(pmcid) and item.get("isOpenAccess") == "Y" and item.get("inEPMC") == "Y",
    }


# -- Europe PMC open full text -----------------------------------------------------------------


class EuropePmcFullText(Arguments):
    pmcid: str = Field(pattern=r"^PMC[0-9]{1,10}$", description="The PMC id, e.g. PMC3257301.")
    max_chars: int = Field(default=20_000, ge=1_000, le=60_000, description="Characters of text returned.")
    offset: int = Field(default=0, ge=0, le=5_000_000, description="Where to start (next_offset of a previous read).")


async def read_europepmc_fulltext(args: EuropePmcFullText, http: SourceClient) -> dict[str, Any]:
    fetched = await http.get("epmc", f"{EPMC_REST}/{args.pmcid}/fullTextXML")
    try:
        root = ET.fromstring(fetched.body)
    except ET.ParseError:
        raise SourceError(
            "Europe PMC's full text is not well-formed XML",
            code=ErrorCode.SOURCE_BAD_RESPONSE,
            details={"source": "Europe PMC", "status": fetched.status},
        ) from None
    heading = root.find(".//article-title")
    title = clip("".join(heading.itertext()) if heading is not None else "", 500)
    text = _article_text(root)
    end = args.offset + args.max_chars
    return {
        "provenance": provenance(
            "Europe PMC",
            fetched.endpoint,
            fetched.retrieved_at,
            {"pmcid": args.pmcid, "max_chars": args.max_chars, "offset": args.offset},
        ),
        "pmcid": args.pmcid,
        "title": title,
        "total_chars": len(text),
        "text": text[args.offset : end],
        "truncated": end < len(text),
        "next_offset": end if end < len(text) else None,
    }


def _article_text(root: ET.Element) -> str:
    """Abstract and body of a JATS article as plain text: section titles as ``## `` lines."""
    parts: list[str] = []
    for abstract in root.iter("abstract"):
        parts.append("## Abstract")
        parts.extend(clip("".join(p.itertext()), 100_000) for p in abstract.iter("p"))
    body = root.find(".//body")
    if body is not None:
        for element in body.iter():
            if element.tag == "title":
                parts.append("## " + clip("".join(element.itertext()), 300))
            elif element.tag == "p":
                parts.append(clip("".join(element.itertext()), 100_000))
    return "\n\n".join(part for part in parts if part and part != "## ")


# -- bioRxiv / medRxiv -------------------------------------------------------------------------


class PreprintSearch(Arguments):
    server: Literal["biorxiv", "medrxiv"] = Field(description="Which preprint server.")
    from_date: Day
    to_date: Day
    category: str | None = Field(
        default=None, max_length=60, pattern=r"^[a-z][a-z _-]*$", description="A subject category, e.g. neuroscience."
    )
    page_size: int = Field(default=10, ge=1, le=30, description="Records per page.")
    cursor: int = Field(default=0, ge=0, le=1_000_000, description="next_cursor of the previous page.")

    @pydantic.model_validator(mode="after")
    def _range(self) -> PreprintSearch:
        try:
            start, end = date.fromisoformat(self.from_date), date.fromisoformat(self.to_date)
        except ValueError:
            raise ValueError("from_date and to_date must be real dates") from None
        if start > end:
            raise ValueError("from_date is after to_date")
        if (end - start).days > MAX_RANGE_DAYS:
            raise ValueError(f"the date range is longer than {MAX_RANGE_DAYS} days")
        return self


async def search_preprints(args: PreprintSearch, http: SourceClient) -> dict[str, Any]:
    path = f"/details/{args.server}/{args.from_date}/{args.to_date}/{args.cursor}/json"
    query = {"category": args.category} if args.category else {}
    fetched = await http.get("biorxiv", path, query)
    data = json_object(fetched, "bioRxiv/medRxiv")
    messages = data.get("messages") or [{}]
    total = as_int(messages[0].get("total")) if isinstance(messages[0], dict) else None
    collection = [item for item in data.get("collection") or [] if isinstance(item, dict)][: args.page_size]
    following = args.cursor + len(collection)
    more = bool(collection) and total is not None and following < total
    return {
        "provenance": provenance(
            "bioRxiv" if args.server == "biorxiv" else "medRxiv",
            fetched.endpoint,
            fetched.retrieved_at,
            {**args.model_dump(exclude_none=True)},
        ),
        "total": total or 0,
        "records": [_preprint_record(item, args.server) for item in collection],
        "next_cursor": following if more else None,
    }


def _preprint_record(item: dict[str, Any], server: str) -> dict[str, Any]:
    doi = item.get("doi")
    return {
        "doi": doi,
        "title": clip(item.get("title"), 300),
        "authors": authors(split_authors(item.get("authors"), ";")),
        "corresponding": clip(item.get("author_corresponding"), 120) or None,
        "date": item.get("date"),
        "version": item.get("version"),
        "category": item.get("category"),
        "server": item.get("server") or server,
        "abstract": clip(item.get("abstract"), ABSTRACT_CHARS),
        "url": f"https://doi.org/{doi}" if isinstance(doi, str) and doi else None,
    }


# -- PubMed ------------------------------------------------------------------------------------


class PubMedSearch(Arguments):
    query: Query
    page_size: int = Field(default=10, ge=1, le=50, description="Records per page.")
    cursor: int = Field(
        default=0, ge=0, le=9_998, description="next_cursor of the previous page (PubMed pages to 9,999)."
    )


def _ncbi_params() -> dict[str, str]:
    """``tool``, ``email`` (the configured contact) and ``api_key`` for every E-utilities request, as
    NCBI asks (never part of a result)."""
    params = {"tool": "patchbay"}
    contact = os.environ.get(CONTACT_ENV, "").strip()
    if "@" in contact and len(contact) <= 200:
        params["email"] = contact
    key = os.environ.get(API_KEY_ENV, "").strip()
    if key:
        params["api_key"] = key
    return params


async def search_pubmed(args: PubMedSearch, http: SourceClient) -> dict[str, Any]:
    search: dict[str, str | int] = {
        "db": "pubmed",
        "term": args.query,
        "retmode": "json",
        "retstart": args.cursor,
        "retmax": args.page_size,
    }
    fetched = await http.get("ncbi", "/entrez/eutils/esearch.fcgi", {**search, **_ncbi_params()})
    result = json_object(fetched, "PubMed").get("esearchresult") or {}
    ids = [str(pmid) for pmid in result.get("idlist") or [] if str(pmid).isdigit()][: args.page_size]
    total = as_int(result.get("count")) or 0
    records: list[dict[str, Any]] = []
    if ids:
        summary = await http.get(
            "ncbi",
            "/entrez/eutils/esummary.fcgi",
            {"db": "pubmed", "id": ",".join(ids), "retmode": "json", **_ncbi_params()},
        )
        found = json_object(summary, "PubMed").get("result") or {}
        records = [_pubmed_record(found[pmid]) for pmid in ids if isinstance(found.get(pmid), dict)]
    following = args.cursor + len(ids)
    return {
        "provenance": {
            **provenance("PubMed", fetched.endpoint, fetched.retrieved_at, search),
            "api_key_used": API_KEY_ENV in os.environ and bool(os.environ[API_KEY_ENV].strip()),
        },
        "total": total,
        "records": records,
        "next_cursor": following if ids and following < min(total, 9_999) else None,
    }


def _pubmed_record(item: dict[str, Any]) -> dict[str, Any]:
    pmid = str(item.get("uid", ""))
    doi = next(
        (
            entry.get("value")
            for entry in item.get("articleids") or []
            if isinstance(entry, dict) and entry.get("idtype") == "doi"
        ),
        None,
    )
    names = [entry.get("name", "") for entry in item.get("authors") or [] if isinstance(entry, dict)]
    return {
        "pmid": pmid,
        "title": clip(item.get("title"), 300),
        "authors": authors(names),
        "journal": clip(item.get("fulljournalname") or item.get("source"), 200) or None,
        "pubdate": item.get("pubdate"),
        "doi": doi,
        "url": f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/" if pmid.isdigit() else None,
    }


TOOLS = (
    BuiltinTool(
        "search_europepmc",
        "Search Europe PMC",
        "Search Europe PMC (papers, preprints, PubMed records). Abstracts are cut to 600 characters; "
        "page with next_cursor.",
        EuropePmcSearch,
        search_europepmc,
    ),
    BuiltinTool(
        "read_europepmc_fulltext",
        "Read open full text (Europe PMC)",
        "Read the open-access full text of one PMC article as plain text, at most max_chars per call; "
        "continue with offset = next_offset.",
        EuropePmcFullText,
        read_europepmc_fulltext,
    ),
    BuiltinTool(
        "search_preprints",
        "Search bioRxiv/medRxiv by date",
        f"List bioRxiv or medRxiv preprints posted in a date range (at most {MAX_RANGE_DAYS} days), "
        "optionally one category; page with next_cursor.",
        PreprintSearch,
        search_preprints,
    ),
    BuiltinTool(
        "search_pubmed",
        "Search PubMed",
        "Search PubMed (NCBI); records carry PMID, title, authors, journal, date and DOI; page with next_cursor.",
        PubMedSearch,
        search_pubmed,
    ),
)


if __name__ == "__main__":
    main(NAME, TOOLS, origins(os.environ.get(API_KEY_ENV, "").strip() or None))
