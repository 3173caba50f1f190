"""patchbay.interfaces.web.i18n: which locale a request gets, and the catalogues: every string
the templates and the page's Python mark (``pybabel extract`` with the repository's babel.cfg)
is in the English catalogue and has a Simplified Chinese translation, and no catalogue keeps an
entry nothing uses any more."""

from __future__ import annotations

import re

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from patchbay.interfaces.web.i18n import (
    JS_MESSAGES,
    LOCALES,
    LOCALES_DIR,
    choose_locale,
    html_lang,
    js_messages,
    locale_from_accept_language,
    translations,
)
from tests.support.paths import REPO


def _extracted() -> set[str]:
    """Every msgid the source marks, as ``pybabel extract -F babel.cfg .`` finds them."""
    with (REPO / "babel.cfg").open(encoding="utf-8") as config:
        method_map, options_map = parse_mapping_cfg(config, "babel.cfg")
    found = set()
    for _filename, _line, message, _comments, _context in extract_from_dir(str(REPO), method_map, options_map):
        for msgid in message if isinstance(message, tuple) else (message,):
            if msgid:
                found.add(msgid)
    return found


def _catalogue(locale: str) -> dict[str, str]:
    path = LOCALES_DIR / locale / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as po:
        # Strict: a malformed entry (an msgid without its msgstr) raises instead of being printed
        # on serve's terminal and read as something else.
        catalog = read_po(po, locale=locale, abort_invalid=True)
    msgids = re.findall(r'^msgid ((?:".*"\n)+)', path.read_text(encoding="utf-8"), re.M)
    assert sorted({m for m in msgids if msgids.count(m) > 1}) == [], f"{locale}: repeated msgids"
    assert not any(message.fuzzy for message in catalog if message.id), f"{locale}: fuzzy entries"
    return {str(message.id): str(message.string) for message in catalog if message.id}


def test_the_extraction_finds_the_templates_and_the_scripts_strings() -> None:
    found = _extracted()
    assert {"Add connector", "Log in to Patchbay", "Needs authentication"} <= found  # templates
    assert set(JS_MESSAGES.values()) <= found  # the scripts' strings, marked in i18n.py


@pytest.mark.parametrize("locale", LOCALES)
def test_each_catalogue_has_exactly_the_extracted_strings(locale: str) -> None:
    found, catalogue = _extracted(), _catalogue(locale)
    assert sorted(found - set(catalogue)) == [], f"missing in {locale}: run pybabel update (docs/web.md)"
    assert sorted(set(catalogue) - found) == [], f"obsolete in {locale}: nothing uses these any more"


def test_every_string_has_a_simplified_chinese_translation() -> None:
    catalogue = _catalogue("zh_Hans")
    assert sorted(msgid for msgid, text in catalogue.items() if not text.strip()) == []
    assert sorted(msgid for msgid, text in catalogue.items() if text == msgid and any(c.isalpha() for c in msgid)) == []
    for msgid, text in catalogue.items():  # placeholders survive translation
        assert sorted(_placeholders(msgid)) == sorted(_placeholders(text)), msgid


def _placeholders(text: str) -> list[str]:
    return re.findall(r"\{\w+\}", text)


def test_the_compiled_catalogues_translate_and_english_is_the_source() -> None:
    assert translations("zh_Hans").gettext("Add connector") == "添加连接器"
    assert translations("en").gettext("Add connector") == "Add connector"
    assert js_messages("zh_Hans")["saved_failed"] == "已保存，但重新加载失败"
    assert js_messages("en") == dict(JS_MESSAGES)
    with pytest.raises(ValueError, match="unknown locale"):
        translations("fr")


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh_Hans"),
        ("zh-Hans", "zh_Hans"),
        ("zh-TW", "zh_Hans"),  # the page's only Chinese
        ("en-US,en;q=0.9", "en"),
        ("fr-FR,de;q=0.8", "en"),
        ("fr-FR,zh;q=0.5,en;q=0.4", "zh_Hans"),
        ("en;q=0.5,zh-CN;q=0.9", "zh_Hans"),  # by quality, not by position
        ("zh;q=0,en", "en"),  # q=0: not acceptable
        ("*", "en"),
        ("", "en"),
        (None, "en"),
        (";;,=,q=x,zh;q=abc", "en"),  # malformed parts are skipped
    ],
)
def test_accept_language_is_negotiated_among_the_pages_locales(header: str | None, expected: str) -> None:
    assert locale_from_accept_language(header) == expected


def test_the_cookie_wins_when_it_names_a_locale_of_the_page() -> None:
    assert choose_locale("zh_Hans", "en-US") == "zh_Hans"
    assert choose_locale("en", "zh-CN") == "en"
    assert choose_locale("klingon", "zh-CN") == "zh_Hans"
    assert choose_locale(None, None) == "en"
    assert (html_lang("en"), html_lang("zh_Hans")) == ("en", "zh-Hans")
