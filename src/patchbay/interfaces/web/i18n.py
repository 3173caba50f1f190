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
    # detail tabs: Connection, Default agent access, Security, Actions
    "connection_configured": N_("Configured"),
    "connection_checking": N_("Checking"),
    "connection_ready": N_("Ready"),
    "connection_needs-auth": N_("Needs auth"),
    "connection_error": N_("Error"),
    "connection_disabled": N_("Disabled"),
    "config_valid": N_("Valid"),
    "config_invalid": N_("Invalid"),
    "auth_not-required": N_("Not required"),
    "auth_configured": N_("Configured"),
    "auth_needs-auth": N_("Needs authentication"),
    "runtime_unknown": N_("Not probed since the last change"),
    "runtime_checking": N_("Checking"),
    "runtime_ready": N_("Ready"),
    "runtime_connecting": N_("Connecting"),
    "runtime_connected": N_("Connected"),
    "runtime_error": N_("Error"),
    "runtime_disabled": N_("Disabled"),
    "unknown_yet": N_("Not known yet"),
    "server_name_version": N_("{name}, version {version}"),
    "probe_started": N_("Probing {name}…"),
    "probe_done_ready": N_("Probe of {name}: ready, {tools} tools"),
    "probe_done_error": N_("Probe of {name} failed: {message}"),
    "access_saved": N_("Default access of {name} saved"),
    "confirm_allow_all_title": N_("Allow every tool of {name} without asking?"),
    "binding_env": N_("Environment variable {name}:"),
    "binding_header": N_("Header {name}:"),
    "binding_bearer": N_("Bearer token:"),
    "binding_from_variable": N_("from Patchbay's environment variable {variable}"),
    "binding_plain": N_("plain setting (not a secret): {value}"),
    "binding_stored": N_("stored secret {ref}, owned by this connector"),
    "binding_shared": N_("stored secret {ref}, shared with this connector"),
    "binding_problem_missing": N_("missing: the stored secret is gone"),
    "binding_problem_not_shared": N_("missing: the secret is not shared with this connector"),
    "binding_problem_variable_unset": N_("missing: the variable is not set"),
    "binding_problem_no_value": N_("missing: no value"),
    "credential_configured": N_("Configured"),
    "credential_missing": N_("Missing"),
    "credential_none": N_("None needed"),
    "oauth_none": N_("Not used"),
    "oauth_authorized": N_("Authorized"),
    "oauth_expired": N_("Access token expired (a refresh may renew it)"),
    "oauth_not_authorized": N_("Not authorized yet"),
    "oauth_needs_auth": N_("Needs a new login"),
    "egress_remote": N_(
        "Remote: every request goes through Patchbay's egress guard and is audited (metadata only, never contents)."
    ),
    "egress_private_allowed": N_("Private and loopback addresses are allowed for this connector."),
    "egress_private_refused": N_("Private and loopback addresses are refused."),
    "egress_stdio": N_(
        "Local command: it runs as you on this machine and can read your project's files. Network access it makes itself is not audited by Patchbay (runtime call audit unavailable)."
    ),
    "egress_socket": N_(
        "Local socket: what the server behind it sends elsewhere is not audited by Patchbay (runtime call audit unavailable)."
    ),
    "action_disable": N_("Disable"),
    "action_enable": N_("Enable"),
    "action_disable_text": N_("Turns the connector off for every workspace; nothing is deleted."),
    "action_enable_text": N_(
        "The connector is off. Enabling it makes its tools available to agents in every workspace again."
    ),
    "action_disable_button": N_("Disable…"),
    "action_enable_button": N_("Enable"),
    "confirm_disable_title": N_("Disable {name}?"),
    "confirm_disconnect_title": N_("Disconnect the credentials of {name}?"),
    "confirm_remove_title": N_("Remove {name}?"),
    "disconnected_now": N_("The credentials of {name} were disconnected"),
    "disconnected_nothing": N_("{name} had no credential to disconnect"),
    "removed_now": N_("{name} was removed"),
    # tools
    "tools_decision_allow": N_("Allow"),
    "tools_decision_ask": N_("Ask"),
    "tools_decision_deny": N_("Deny"),
    "tools_decision_for": N_("Decision for {tool}"),
    "tools_hint_read_only": N_("Read-only"),
    "tools_hint_destructive": N_("Destructive"),
    "tools_hint_idempotent": N_("Idempotent"),
    "tools_hint_open_world": N_("Open world"),
    "tools_src_project_grant": N_("Set for this workspace"),
    "tools_src_global_grant": N_("Set in the global defaults"),
    "tools_src_allow_all": N_("Default: the connector allows every tool"),
    "tools_src_destructive_default": N_("Default: a destructive tool always asks"),
    "tools_src_approval_mode": N_("Default: the connector asks before each tool"),
    "tools_src_disabled": N_("The connector is off: turn it on to use its tools"),
    "tools_src_excluded": N_("Hidden: the connector's exclude list names it"),
    "tools_src_not_included": N_("Hidden: the connector's include list does not name it"),
    "tools_locked_global_deny": N_("Denied in the global defaults: a workspace cannot lift a global Deny"),
    "tools_inherited": N_("Inherited: {what}"),
    "tools_inherit": N_("Inherit"),
    "tools_inherit_label": N_("Inherit the global default for {tool}"),
    "tools_reset": N_("Use default"),
    "tools_reset_label": N_("Use default for {tool}"),
    "tools_allowed_count": N_("{allowed} of {total} allowed"),
    "tools_bulk_label": N_("Apply to the {count} tools shown:"),
    "tools_scope_global": N_("Showing the global defaults: they apply in every workspace without its own setting."),
    "tools_scope_project": N_("Showing workspace {path}: its own settings override the global defaults."),
    "tools_scope_new_project": N_(
        "Workspace {path} has no settings of its own yet: it uses the global defaults until you change a tool here."
    ),
    "tools_scope_changed_global": N_("Showing the global defaults"),
    "tools_scope_changed_project": N_("Showing workspace {path}"),
    "tools_none": N_("The server lists no tools."),
    "tools_cache_missing": N_("No tool list yet: refresh tools to probe the server."),
    "tools_cache_stale": N_("The tool list is out of date (the configuration changed): refresh tools."),
    "tools_set": N_("{tool}: {decision}"),
    "tools_key_pending": N_("{tool}: {decision} chosen; press Enter to save it"),
    "tools_inherited_now": N_("{tool} inherits the global default"),
    "tools_reset_now": N_("{tool} uses the connector's default"),
    "tools_allow_all_text": N_(
        "{count} tools will run without asking for approval in this scope, destructive ones included."
    ),
    "tools_bulk_cancelled": N_("Nothing was changed"),
    "tools_bulk_progress": N_("Applying: {done} of {count}…"),
    "tools_bulk_done": N_("{decision} set for {count} tools"),
    "tools_probing": N_("Probing {name}…"),
    "tools_refreshed": N_("Tools refreshed: {count} tools"),
    "tools_probe_failed": N_("The probe failed"),
    "tools_workspace_absolute": N_("Type the absolute path of a workspace directory (it starts with /)."),
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
    "filters_failed": N_("{name} was saved, but its tool filters were not: {message}"),
    # access_resources, the Add form's "Expose resources", the Import dialog's renames
    "resources_loading": N_("Reading the resource decision…"),
    "resources_unreadable": N_("The resource decision could not be read: {message} (error code: {code})"),
    "resources_now_allowed": N_("Now: agents read its resources without asking."),
    "resources_now_grant_ask": N_(
        "Now: each read asks, by a grant set outside this page. Turning this on allows them."
    ),
    "resources_now_allow_all": N_(
        "Now: agents read its resources without asking, because the default decision is Allow all."
    ),
    "resources_now_ask": N_("Now: each read asks, because the default decision is Ask or Custom."),
    "resources_now_off": N_("Now: the connector is off, so agents read none of its resources."),
    "resources_now_denied": N_(
        "A global Deny refuses every read of its resources in every workspace; it cannot be changed here."
    ),
    "resources_exposed": N_("The resources of {name} are exposed"),
    "resources_unexposed": N_("The resources of {name} are no longer exposed"),
    "connector_added_resources": N_("{name} was added and its resources are exposed"),
    "connector_added_resources_failed": N_(
        "{name} was added, but exposing its resources failed: {message} (error code: {code})"
    ),
    "import_rename_pending": N_("Use this name first, or put back the name in use, before importing."),
    "import_rename_refused": N_("{message} (error code: {code})"),
    "import_rename_applied": N_("{name} will be imported as {connector}"),
    "import_rename_conflicts": N_("{name} is taken as well: choose another name"),
    "transport_detected": N_("Transport detected: {transport}"),
    "transport_detected_auth": N_("Transport detected: {transport}; the server asks for authorization"),
    # built-in connectors
    "group_builtin": N_("Built-in connectors"),
    # OAuth: the form's second write and Connect
    "oauth_config_failed": N_("{name} was saved, but its OAuth settings were not: {message}"),
    "oauth_connect_done": N_("Connected: the authorization worked and the tokens are stored."),
    "oauth_connect_failed": N_("The authorization did not complete."),
    "oauth_connect_failed_code": N_("The authorization did not complete ({code})."),
    # live status (live.js, the Connection tab)
    "live_status_changed": N_("{name} is now: {state}"),
    "live_none": N_("No open session uses it"),
    "live_unknown": N_("No update from its sessions for over 90 seconds"),
    "live_sessions": N_("{sessions} session(s), {calls} call(s) in flight, {restarts} restart(s)"),
    "live_failed_ago": N_("failed {seconds} s ago"),
    "approval_title": N_("{name} asks to run"),
    "approval_risk_read": N_("Read only"),
    "approval_risk_destructive": N_("Destructive"),
    "approval_risk_network": N_("Network (may change things)"),
    "approval_waiting": N_("{name} is waiting for your approval"),
    "approvals_waiting_count": N_("Calls waiting for your approval: {count}"),
    "approval_allowed_once": N_("{name} allowed once"),
    "approval_allowed_session": N_("{name} allowed for this session"),
    "approval_denied": N_("{name} denied"),
    "approval_gone": N_("{name} no longer waits (answered, expired or cancelled)"),
    "approval_failed": N_("The answer for {name} was not applied: {message}"),
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
