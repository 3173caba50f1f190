"""What normalising one definition produces (:class:`Draft`), and how single values are read:
literal-only fields (command, args, cwd, url, paths) and credential-bearing values (env, headers,
bearer tokens), see docs/importer.md. Messages name fields, never values.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbay.control.bindings import BindingSpec
from patchbay.control.importer.discovery import Scope
from patchbay.control.importer.models import HelperView, InputView, Issue, PathView
from patchbay.control.importer.placeholders import EnvRef, InputRef, Literal, ParsedValue, parse_value
from patchbay.core.credentials import Delivery, looks_secret
from patchbay.core.errors import ConfigError
from patchbay.core.models import ConnectorTarget
from patchbay.core.redaction import redact_text

__all__ = [
    "Context",
    "Draft",
    "PendingBinding",
    "absolute_path",
    "add_binding",
    "inside",
    "plain_text",
    "scalar_text",
]


@dataclass(frozen=True)
class Context:
    """What normalisation needs besides the definition.

    Attributes:
        workspace: the workspace root, symlinks resolved (``${workspaceFolder}``, cwd checks).
        home: the home directory (``${userHome}``, ``~``); injected, never read from ``$HOME``.
        input_variables: VS Code input id → environment variable (``--input ID=VAR``).
        classify: how to store literal env/header values, overriding the classification by name
            and value: ``FIELD`` or ``ENTRY:FIELD`` (``env.NODE_ENV``, ``app:headers.X-Region``)
            → ``plain`` (a setting kept in the connector's config) or ``credential`` (a managed
            credential). ``used`` collects the keys that matched.
    """

    workspace: Path
    home: Path
    input_variables: Mapping[str, str] = field(default_factory=dict)
    classify: Mapping[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def classification(self, entry: str, where: str) -> str | None:
        """The user's choice for field ``where`` of definition ``entry`` (None: none given)."""
        for key in (f"{entry}:{where}", where):
            if key in self.classify:
                self.used.add(key)
                return self.classify[key]
        return None

    @property
    def path_values(self) -> dict[str, str]:
        return {"workspaceFolder": str(self.workspace), "userHome": str(self.home), "pathSeparator": "/"}


@dataclass
class PendingBinding:
    """A binding the connector would get; ``spec`` (value hidden from ``repr``) is what commit
    hands to the credential service, None when it cannot be imported."""

    field: str
    delivery: Delivery
    name: str
    source: str
    variable: str | None = None
    sensitive: bool = False
    has_default: bool = False
    # ``dataclasses.field`` by its module: the ``field`` attribute above shadows the bare name here.
    spec: BindingSpec | None = dataclasses.field(default=None, repr=False)
    default_mode: str | None = None
    """``unset_or_empty`` (``${VAR:-x}``) or ``unset`` (``${VAR-x}``) when there is a default."""
    shown: str | None = None
    """A plain setting's value, or a reference's plain default: shown in the preview (not secrets)."""


@dataclass
class Draft:
    """One definition, normalised; internal (commit uses ``target``, ``bindings``, ``options``).

    Public views are built from it by :mod:`.preview`; nothing in it is printed as is.
    """

    name: str
    import_name: str | None
    raw: Any = field(repr=False)
    transport: str | None = None
    transport_spelling: str | None = None
    target: ConnectorTarget | None = None
    target_view: dict[str, Any] | None = None
    bindings: list[PendingBinding] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    helpers: list[HelperView] = field(default_factory=list)
    inputs: list[InputView] = field(default_factory=list)
    outside: list[PathView] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    include_tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    description: str = ""
    losses: list[Issue] = field(default_factory=list)
    problems: list[Issue] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def loss(self, where: str, code: str, message: str) -> None:
        self.losses.append(Issue(field=where, code=code, message=message))

    def problem(self, where: str, code: str, message: str) -> None:
        self.problems.append(Issue(field=where, code=code, message=message))


# -- values ------------------------------------------------------------------------------------


def scalar_text(value: Any) -> str | None:
    """A JSON scalar as the text a host would use (numbers and booleans in env values happen)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return None


def _input_view(d: Draft, where: str, ref: InputRef, scope: Scope, ctx: Context) -> str | None:
    definition = scope.inputs.get(ref.id)
    mapped = ctx.input_variables.get(ref.id)
    d.inputs.append(
        InputView(
            field=where,
            id=ref.id,
            masked=bool(definition and definition.get("password")),
            defined=definition is not None,
            mapped_to=mapped,
        )
    )
    if mapped is None:
        d.problem(
            where,
            "needs_input",
            f"${{input:{ref.id}}} is asked of the user by the host; map it to an environment variable "
            f"with --input {ref.id}=VAR, or edit the file",
        )
    return mapped


def plain_text(text: str, where: str, d: Draft, ctx: Context, scope: Scope, *, exact_paths: bool = False) -> str | None:
    """A value that must be literal (command, args, cwd, url, paths): path variables substituted,
    anything else a problem. Returns None when it cannot be imported."""
    parsed = parse_value(text)
    ok = True
    for ref in parsed.references:
        d.problem(
            where,
            "reference_not_supported",
            f"refers to ${{{ref.variable}}}; Patchbay passes {where.split('[')[0]} literally (only env "
            "values and headers can come from a variable)",
        )
        ok = False
    for input_ref in parsed.inputs:
        _input_view(d, where, input_ref, scope, ctx)
        d.problem(where, "needs_input", f"${{input:{input_ref.id}}} cannot be used in {where.split('[')[0]}")
        ok = False
    for unsupported in parsed.unsupported:
        d.problem(
            where, "unsupported_variable", f"a ${{{unsupported.kind}:…}} variable can only be resolved by the host"
        )
        ok = False
    if not ok:
        return None
    if parsed.path_vars and not exact_paths:
        names = ", ".join(sorted({f"${{{p.name}}}" for p in parsed.path_vars}))
        d.loss(where, "path_variable_fixed", f"{names} is replaced by the path it has now; the connector is global")
    return parsed.substitute(ctx.path_values).literal_text()


def _bearer_rest(parsed: ParsedValue) -> ParsedValue | None:
    """``Bearer X`` → ``X`` (a literal token or one placeholder); None if it is not that shape."""
    if not parsed.parts or not isinstance(parsed.parts[0], Literal):
        return None
    head = parsed.parts[0].text
    if not head.lower().startswith("bearer "):
        return None
    rest_text = head[7:].lstrip(" ")
    rest = ParsedValue(((Literal(rest_text),) if rest_text else ()) + parsed.parts[1:])
    if rest.sole_reference() is not None:
        return rest
    if rest.is_plain and rest.literal_text() and " " not in rest.literal_text():
        return rest
    return None


def add_binding(delivery: Delivery, name: str, value: Any, where: str, d: Draft, ctx: Context, scope: Scope) -> None:
    """One env variable or header → a pending binding (reference or managed value) or a problem."""
    text = scalar_text(value)
    if text is None:
        d.problem(where, "bad_value", "must be a string")
        return
    parsed = parse_value(text, helpers=True)
    if parsed.helper is not None:
        program = redact_text(parsed.helper.strip().split(" ", 1)[0])[:80] or "?"
        d.helpers.append(HelperView(field=where, program=program))
        d.bindings.append(PendingBinding(where, delivery, name, "helper"))
        d.problem(
            where,
            "helper_not_run",
            "a !command helper supplies this value and Patchbay never runs one; use ${VAR} or bind a credential after import",
        )
        return
    if delivery == "header" and name.lower() == "authorization":
        rest = _bearer_rest(parsed)
        if rest is not None:
            delivery, name, parsed = "bearer", "Authorization", rest
    sole = parsed.sole_reference()
    variable: str | None = None
    has_default = False
    default: str | None = None
    default_mode = "unset_or_empty"
    if isinstance(sole, InputRef):
        variable = _input_view(d, where, sole, scope, ctx)
        if variable is None:
            d.bindings.append(PendingBinding(where, delivery, name, "input"))
            return
    elif isinstance(sole, EnvRef):
        variable, has_default = sole.variable, sole.default is not None
        default, default_mode = sole.default, sole.default_mode
        if has_default and sole.default and looks_secret(name, sole.default):
            d.secrets.append(where)  # kept, as a secret default, in the credential store only
    else:
        if parsed.references or parsed.inputs or parsed.unsupported:
            d.bindings.append(PendingBinding(where, delivery, name, "unresolved"))
            d.problem(
                where,
                "mixed_value",
                "mixes text with a variable; Patchbay binds a whole value to one variable "
                "(Authorization: Bearer ${VAR} is the one exception)",
            )
            return
        if parsed.path_vars:
            d.loss(where, "path_variable_fixed", "a path variable is replaced by the path it has now")
        literal = parsed.substitute(ctx.path_values).literal_text()
        if not literal:
            d.loss(where, "empty_value_dropped", "an empty value cannot be bound and is left out")
            return
        suspected = delivery == "bearer" or looks_secret(name, literal)
        choice = ctx.classification(d.name, where)
        plain = choice == "plain" if choice is not None else not suspected
        try:
            spec = BindingSpec(delivery, name, plain=literal) if plain else BindingSpec(delivery, name, value=literal)
        except ConfigError as exc:
            d.bindings.append(PendingBinding(where, delivery, name, "unresolved", sensitive=suspected))
            d.problem(where, "bad_binding", exc.message)
        else:
            source, shown = ("plain", literal) if plain else ("managed", None)
            d.bindings.append(
                PendingBinding(where, delivery, name, source, sensitive=suspected, spec=spec, shown=shown)
            )
        if suspected and not plain:
            d.secrets.append(where)
        return
    try:
        spec = BindingSpec(delivery, name, variable=variable, default=default, default_mode=default_mode)  # type: ignore[arg-type]
    except ConfigError as exc:
        d.bindings.append(PendingBinding(where, delivery, name, "unresolved", variable=variable))
        d.problem(where, "bad_binding", exc.message)
        return
    shown = default if default is not None and not looks_secret(name, default) else None
    d.bindings.append(
        PendingBinding(
            where,
            delivery,
            name,
            "environment",
            variable=variable,
            has_default=has_default,
            spec=spec,
            default_mode=default_mode if has_default else None,
            shown=shown,
        )
    )


# -- paths -------------------------------------------------------------------------------------


def inside(path: str, workspace: Path) -> bool:
    """Whether ``path`` (absolute) is ``workspace`` or below it, as written and with symlinks resolved."""
    root = str(workspace).rstrip("/") or "/"
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        if candidate != root and not candidate.startswith(root.rstrip("/") + "/"):
            return False
    return True


def absolute_path(text: str, ctx: Context) -> str:
    """``text`` as an absolute path: ``~`` is the context's home, a relative path is under the workspace."""
    if text == "~" or text.startswith("~/"):
        return str(ctx.home / text[2:])
    return text if os.path.isabs(text) else str(ctx.workspace / text)
