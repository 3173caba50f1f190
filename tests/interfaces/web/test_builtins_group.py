"""The settings page shows the built-in connectors in their own group, enabled or not, in both
languages, against a real ``patchbay serve`` on a data home that seeded them."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from patchbay.adapters.store import open_store
from patchbay.core.builtins import BUILTINS
from patchbay.core.models import StdioTarget
from patchbay.core.settings import Settings
from tests.support.browser import OpenPage, axe_check, page_server


def test_builtins_have_their_own_group_on_or_off(
    tmp_path: Path, pages: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHBAY_BUILTINS", "on")
    store = open_store(Settings(home=tmp_path / "home", database_url=None))
    store.connectors.create("mine", "Mine", StdioTarget(command="true"))
    store.close()
    with page_server(tmp_path) as served:
        names = {
            c["name"]: c
            for c in served.session.get(f"{served.url}/api/mcp/connectors", timeout=30).json()["connectors"]
        }
        assert names["paper-search"]["source"] == "builtin" and names["paper-search"]["settings"]["enabled"] is True
        assert names["literature-graph"]["settings"]["enabled"] is False
        page = pages(served)
        expect(page.locator(".group-title")).to_have_text(["Enabled (1)", f"Built-in connectors ({len(BUILTINS)})"])
        builtin = page.locator("[data-group=builtin]")
        expect(builtin).to_contain_text("Paper Search")
        expect(builtin).to_contain_text("Literature Graph")
        paper = builtin.locator(".row").filter(has_text="Paper Search")
        expect(paper.locator(".row-meta")).to_have_text(
            "Built-in · Search papers and preprints: Europe PMC (search, open full text), bioRxiv/medRxiv, PubMed."
        )
        expect(page.locator("[data-group=enabled]")).to_contain_text("Mine")
        axe_check(page)
        # its Overview names the data sources and links the terms; a connector of the user's does not
        assert [source["name"] for source in names["paper-search"]["data_sources"]] == [
            "Europe PMC",
            "bioRxiv",
            "medRxiv",
            "PubMed (NCBI E-utilities)",
        ]
        paper.locator(".row-link").click()
        overview = page.locator("#panel-overview")
        items = overview.locator("[data-slot=data-sources] li")
        expect(items).to_have_count(4)
        europe = items.first
        expect(europe.locator("[data-slot=source]")).to_have_text("Europe PMC")
        expect(europe.locator("[data-slot=source]")).to_have_attribute("href", "https://europepmc.org")
        expect(europe.locator("[data-slot=source-terms]")).to_have_attribute("href", "https://europepmc.org/Copyright")
        expect(europe.locator("[data-slot=source-licence]")).to_have_attribute(
            "href", "https://europepmc.org/downloads/openaccess"
        )
        expect(europe).to_contain_text("Licence:")
        expect(overview.locator("[data-slot=terms]")).to_have_attribute("href", "https://europepmc.org/Copyright")
        axe_check(page)
        page.locator("[data-group=enabled] .row-link").first.click()
        expect(page.locator("#detail-heading")).to_have_text("Mine")
        expect(overview.locator("[data-slot=data-sources-row]")).to_be_hidden()
        expect(overview.locator("[data-slot=terms-row]")).to_be_hidden()
        assert names["mine"]["data_sources"] == []
        chinese = pages(served, locale="zh-CN")
        expect(chinese.locator("[data-group=builtin] .group-title")).to_have_text(f"内置连接器 ({len(BUILTINS)})")
        chinese.locator("[data-group=builtin] .row-link").first.click()
        expect(chinese.locator("#panel-overview [data-slot=data-sources] li").first).to_contain_text("许可协议：")
        axe_check(chinese)
