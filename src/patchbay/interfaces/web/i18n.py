"""The settings page's languages: which locale a request gets, and its translations.

Two locales, English (``en``, the source language) and Simplified Chinese (``zh_Hans``). A
request's locale is the ``patchbay_lang`` cookie when it names one of them (the page's language
switcher sets it), else the best match of its ``Accept-Language`` (any Chinese tag reads
Simplified Chinese; anything unknown is English).

The catalogues are the ``.po`` files under ``locales/<locale>/LC_MESSAGES/messages.po``, compiled
in memory when first used (``read_po`` → ``write_mo`` into a buffer → :class:`babel.support.Translations`):
no ``.mo`` file is generated or committed. Strings the page's scripts show are here too
(:data:`JS_MESSAGES`), translated by the server into a JSON data block, so one catalogue holds
every string. How to add a string: docs/web.md.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping
from pathlib import Path

from babel import Locale, UnknownLocaleError, negotiate_locale
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

__all__ = [
    "DEFAULT_LOCALE",
    "JS_MESSAGES",
    "LANG_COOKIE",
    "LOCALES",
    "LOCALES_DIR",
    "choose_locale",
    "html_lang",
    "js_messages",
    "locale_from_accept_language",
    "translations",
]

LOCALES: tuple[str, ...] = ("en", "zh_Hans")
"""The locales the page speaks, in Babel's spelling."""
DEFAULT_LOCALE = "en"
LANG_COOKIE = "patchbay_lang"
"""The cookie the language switcher sets (the locale, e.g. ``zh_Hans``)."""
LOCALES_DIR = Path(__file__).parent / "locales"

_HTML_LANG = {"en": "en", "zh_Hans": "zh-Hans"}
_MAX_ACCEPT_LANGUAGE = 64
"""Language ranges of an ``Accept-Language`` header looked at; the rest are ignored."""


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue without translating it here (``pybabel extract``
    finds ``N_("...")``); it is translated when a locale is known (:func:`js_messages`)."""
    return message


JS_MESSAGES: Mapping[str, str] = {
    "saved": N_("Saved"),
    "saved_pending": N_("Saved, reload pending"),
    "saved_failed": N_("Saved, reload failed"),
    "what_then_outcome": N_("{what}. {outcome}"),
    "sessions_affected": N_("Sessions affected: {count}"),
    "session_pending": N_("{workspace}: finishes its current call first"),
    "session_failed": N_("{workspace}: {message}"),
    "conflict": N_("Someone else changed this connector; the view was reloaded. Nothing was overwritten."),
    "unreachable": N_("Patchbay did not answer. Is patchbay serve still running?"),
    "error_code": N_("Error code: {code}"),
    "enabled_now": N_("{name} is now on"),
    "disabled_now": N_("{name} is now off"),
    "toggle_label": N_("Enable {name}"),
    "count_shown": N_("{shown} of {total} connectors"),
    "partial_status": N_(
        "The status of {count} connector(s) is not known yet: they have not been probed since they were last changed."
    ),
    "loading": N_("Loading connectors…"),
    "loaded": N_("{count} connectors loaded"),
    "group_enabled": N_("Enabled"),
    "group_available": N_("Available"),
    "group_imported": N_("Imported, not enabled yet"),
    "not_found": N_("No connector {ref} exists. It may have been removed."),
    "detail_opened": N_("Showing {name}"),
    "yes": N_("Yes"),
    "no": N_("No"),
    "never": N_("Never"),
    "probe_ready": N_("Ready on {date}: {tools} tools"),
    "probe_error": N_("Failed on {date}: {code}"),
    "probe_outdated": N_("(before the last change)"),
    "transport_stdio": N_("Local command"),
    "transport_streamable_http": N_("Remote URL (Streamable HTTP)"),
    "transport_sse": N_("Remote URL (SSE, legacy)"),
    "transport_socket": N_("Unix socket"),
    "source_builtin": N_("Built-in"),
    "source_custom": N_("Added by you"),
    "source_imported": N_("Imported"),
    "working_directory": N_("in {cwd}"),
    "no_description": N_("No description."),
    # import
    "import_file_project": N_("Project file"),
    "import_file_user": N_("User file"),
    "import_files_found": N_("{count} config file(s) found"),
    "import_paste_first": N_("Paste an mcpServers snippet first."),
    "import_pick_first": N_("Pick at least one file."),
    "import_transport_unknown": N_("Unknown transport"),
    "import_source": N_("From {label} (precedence {precedence})"),
    "import_source_scope": N_("{source}, scope {scope}"),
    "import_source_pasted": N_("From the pasted text"),
    "import_fact_conflict": N_("Conflict"),
    "import_conflict_same": N_("A connector named {name} already exists, with the same target."),
    "import_conflict_differs": N_("A connector named {name} already exists, and it differs."),
    "import_fact_shadowed": N_("Shadowed"),
    "import_shadowed": N_("A definition with the same name comes first: {source}"),
    "import_fact_secret": N_("Secret"),
    "import_secret_configured": N_("{field}: configured (stored as a credential; the value is never shown)"),
    "import_fact_reference": N_("Reference"),
    "import_binding_env": N_("{field}: from the environment variable {variable}"),
    "import_fact_setting": N_("Setting"),
    "import_binding_plain": N_("{field} set to {value}"),
    "import_fact_helper": N_("!command helper"),
    "import_helper": N_("{field}: would run {program}. Helpers are never run, so it cannot be imported as written."),
    "import_fact_input": N_("Input"),
    "import_input": N_("{field}: the host prompts for the input {id}"),
    "import_fact_outside": N_("Outside the workspace"),
    "import_outside": N_("{field}: {path}"),
    "import_fact_lossy": N_("Lossy"),
    "import_fact_problem": N_("Problem"),
    "import_issue": N_("{field}: {message} ({code})"),
    "import_renamed": N_("{name} (as {connector})"),
    "import_state_ready": N_("Ready to import"),
    "import_state_review": N_("Review first"),
    "import_state_blocked": N_("Cannot be imported"),
    "import_summary": N_("{count} entries found, {selected} selected"),
    "import_commit_count": N_("Import selected ({count})"),
    "import_parse_error": N_("The text is not valid JSON or JSONC: line {line}, column {column}."),
    "import_not_an_object": N_("The text is not a JSON object of MCP servers."),
    "import_file_problem": N_("{label}: {message}"),
    "import_preview_ready": N_("Preview ready: {count} entries, {selected} selected"),
    "import_skipped_unselected": N_("{name}: not selected"),
    "import_skipped_blocked": N_("{name}: cannot be imported"),
    "import_done": N_("Imported {count} connector(s)"),
    "import_close": N_("Close"),
    "import_cancel": N_("Cancel"),
    "import_select_first": N_("Select at least one entry to import."),
}
"""Strings the scripts show, by key (``{name}`` placeholders are filled in by the script)."""


@functools.cache
def translations(locale: str) -> Translations:
    """The compiled catalogue of ``locale`` (one of :data:`LOCALES`), read once.

    Raises:
        ValueError: ``locale`` is not one of :data:`LOCALES`.
        OSError: its ``.po`` file cannot be read (a broken installation).
    """
    if locale not in LOCALES:
        raise ValueError(f"unknown locale {locale!r}; expected one of {', '.join(LOCALES)}")
    path = LOCALES_DIR / locale / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as po:
        catalog = read_po(po, locale=locale)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return Translations(buffer)


def html_lang(locale: str) -> str:
    """The BCP 47 tag of ``locale`` for ``<html lang>``: ``en``, ``zh-Hans``."""
    return _HTML_LANG[locale]


def js_messages(locale: str) -> dict[str, str]:
    """:data:`JS_MESSAGES` translated into ``locale``."""
    catalogue = translations(locale)
    return {key: catalogue.gettext(message) for key, message in JS_MESSAGES.items()}


def _page_locale(tag: str) -> str | None:
    """``zh-CN`` → ``zh_Hans``; ``en-GB`` → ``en``; None for a tag the page has no locale for."""
    try:
        parsed = Locale.parse(tag.strip().replace("_", "-"), sep="-")
    except (ValueError, UnknownLocaleError):
        return None
    if parsed.language == "zh":
        # Simplified Chinese is the page's only Chinese: the closest a Traditional reader gets
        return "zh_Hans"
    return "en" if parsed.language == "en" else None


def locale_from_accept_language(header: str | None) -> str:
    """The locale an ``Accept-Language`` header prefers (``zh-CN,zh;q=0.9,en;q=0.8`` → ``zh_Hans``);
    :data:`DEFAULT_LOCALE` when it names none of :data:`LOCALES` or is missing or malformed."""
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate((header or "").split(",")[:_MAX_ACCEPT_LANGUAGE]):
        tag, _, parameters = part.strip().partition(";")
        quality = 1.0
        name, equals, value = parameters.strip().partition("=")
        if equals and name.strip() == "q":
            try:
                quality = float(value)
            except ValueError:
                continue
        if not tag or tag == "*" or quality <= 0:
            continue
        page_locale = _page_locale(tag)
        if page_locale is not None:
            ranked.append((-quality, position, page_locale))
    preferred = [locale for _, _, locale in sorted(ranked)]
    return negotiate_locale(preferred, LOCALES) or DEFAULT_LOCALE


def choose_locale(cookie: str | None, accept_language: str | None) -> str:
    """The locale of a request: the ``patchbay_lang`` cookie's when it is one of :data:`LOCALES`,
    else :func:`locale_from_accept_language`."""
    if cookie in LOCALES:
        assert cookie is not None
        return cookie
    return locale_from_accept_language(accept_language)
