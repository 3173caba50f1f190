"""Credential-binding flags of ``connector add`` and ``connector set``, and how bindings are
printed: references, never values.

``--env KEY=VALUE`` stores VALUE as a managed credential owned by the connector; ``KEY=@env:VAR``
binds Patchbay's own ``$VAR`` (read at connect time); ``KEY=@credential:ID`` binds a credential the
connector owns or that was shared with it. ``--header 'Name: VALUE'`` and ``--bearer VALUE`` take
the same three forms for HTTP. A value starting with ``@`` is written ``@@...``.
"""

from __future__ import annotations

from typing import Any

import typer

from patchbay.control.bindings import BindingSpec, parse_bearer, parse_env, parse_header

__all__ = ["BEARER_OPTION", "ENV_OPTION", "HEADER_OPTION", "UNSET_OPTION", "binding_rows", "binding_specs"]

_PANEL = "Credentials"
ENV_OPTION = typer.Option(
    None,
    "--env",
    metavar="KEY=VALUE",
    help=(
        "stdio: environment variable from a stored value, KEY=@env:VAR (KEY=@env:VAR:-DEFAULT: DEFAULT when $VAR "
        "is unset or empty), KEY=@credential:ID, or KEY=@plain:VALUE for a setting that is not a secret (repeat)."
    ),
    rich_help_panel=_PANEL,
)
HEADER_OPTION = typer.Option(
    None,
    "--header",
    metavar="'NAME: VALUE'",
    help="HTTP: request header from a stored value, @env:VAR[:-DEFAULT], @credential:ID or @plain:VALUE (repeat).",
    rich_help_panel=_PANEL,
)
BEARER_OPTION = typer.Option(
    None,
    "--bearer",
    metavar="VALUE",
    help="HTTP: Authorization: Bearer from a stored value, @env:VAR or @credential:ID.",
    rich_help_panel=_PANEL,
)
UNSET_OPTION = typer.Option(
    None,
    "--unset",
    metavar="PLACE",
    help="Remove a binding: env:KEY, header:NAME or bearer (repeat); its own credential is deleted.",
    rich_help_panel=_PANEL,
)


def binding_specs(env: list[str] | None, header: list[str] | None, bearer: str | None) -> list[BindingSpec]:
    """The binding requests of the flags, in order.

    Raises:
        ConfigError: ``invalid_config`` (field ``env``, ``header`` or ``bearer``); never quotes a value.
    """
    specs = [parse_env(text) for text in env or []] + [parse_header(text) for text in header or []]
    if bearer is not None:
        specs.append(parse_bearer(bearer))
    return specs


def binding_rows(views: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``show`` rows for binding views (``CredentialService.binding_views``): place, reference,
    source, and what stops it resolving, if anything."""
    rows = []
    for view in views:
        place = "bearer" if view["delivery"] == "bearer" else f"{view['delivery']} {view['name']}"
        if view["source"] == "plain":
            rows.append(("binding", f"{place} = {view['plain']!r} (plain setting, not a secret)"))
            continue
        if view["source"] == "environment":
            source = f"environment variable {view['variable']}"
            if view.get("default_mode"):
                when = "unset or empty" if view["default_mode"] == "unset_or_empty" else "unset"
                shown = "a stored secret" if view.get("default_secret") else repr(view["default"])
                source += f", default {shown} when {when}"
        elif view["source"] == "managed":
            source = f"stored {view['kind']}"
        else:
            source = "gone"
        owner = "" if view["owned"] else ", shared"
        problem = f"; {view['problem'].replace('_', ' ')}" if view["problem"] else ""
        rows.append(("binding", f"{place} from {view['ref']} ({source}{owner}{problem})"))
    return rows or [("bindings", "-")]
