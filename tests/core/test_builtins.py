"""The built-in catalogue: every data source names its service, terms and licence with https links."""

from __future__ import annotations

from urllib.parse import urlsplit

from patchbay.core.builtins import BUILTINS, builtin_spec


def _https(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.netloc)


def test_every_data_source_links_its_service_terms_and_licence() -> None:
    for spec in BUILTINS:
        assert spec.data_sources, spec.name
        assert _https(spec.terms_url), spec.name
        for source in spec.data_sources:
            assert source.name and source.licence, (spec.name, source)
            assert all(_https(url) for url in (source.url, source.terms_url, source.licence_url)), source


def test_a_connectors_terms_are_those_of_one_of_its_sources_or_their_host() -> None:
    # the registry's terms_url is the main source's; it must not point somewhere none of them is
    for spec in BUILTINS:
        hosts = {urlsplit(url).netloc for s in spec.data_sources for url in (s.url, s.terms_url)}
        assert urlsplit(spec.terms_url).netloc in hosts, spec.name


def test_builtin_spec_finds_catalogue_entries_only() -> None:
    assert builtin_spec("paper-search") is BUILTINS[0]
    assert builtin_spec("mine") is None
