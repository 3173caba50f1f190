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
    # connector_form
    "form_add_local": N_("Add a local command"),
    "form_add_remote": N_("Add a remote connector"),
    "form_add_socket": N_("Add a Unix socket connector"),
    "form_edit": N_("Edit {name}"),
    "preview_command": N_("command"),
    "preview_arg": N_("argument {n}"),
    "shlex_unterminated_quote": N_("The quote at character {position} is never closed."),
    "shlex_trailing_backslash": N_("The backslash at the end escapes nothing."),
    "field_required": N_("Required."),
    "field_positive": N_("A number of seconds greater than 0, or empty for the default."),
    "secret_configured": N_("Configured: type to replace it"),
    "env_remove": N_("Remove variable {name}"),
    "env_unnamed": N_("without a name"),
    "env_needs_name": N_("Every variable needs a name."),
    "env_needs_value": N_("{name} needs a value."),
    "connector_added": N_("{name} was added"),
    "connector_updated": N_("{name} was changed"),
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
