"""The value syntaxes of host config files: ``${VAR}``, ``${env:VAR}``, ``$env:VAR``, ``{env:VAR}``
(:class:`EnvRef`), ``${input:id}`` (:class:`InputRef`), ``${workspaceFolder}`` and friends
(:class:`PathVar`), other ``${…}`` (:class:`Unsupported`) and ``!command`` helpers.

Nothing here runs a helper or reads the environment: parsing only says what a value refers to.
Literal text and defaults are kept with ``repr=False`` so they never reach a log by accident.

Design: docs/importer.md (the table of syntaxes and the hosts they come from)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["EnvRef", "InputRef", "Literal", "ParsedValue", "PathVar", "Unsupported", "parse_value"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TOKEN = re.compile(
    r"\$\{(?P<body>[^{}]*)\}"  # ${...}
    rf"|\$env:(?P<pi>{_NAME})"  # $env:VAR
    rf"|(?<!\$)\{{env:(?P<brace>{_NAME})\}}"  # {env:VAR}
)
_PLAIN = re.compile(rf"^(?P<name>{_NAME})(?:(?P<colon>:?)-(?P<default>.*))?$", re.DOTALL)
_PATH_VARS = {
    "workspaceFolder": "workspaceFolder",
    "userHome": "userHome",
    "pathSeparator": "pathSeparator",
    "/": "pathSeparator",
}


@dataclass(frozen=True)
class Literal:
    """Plain text (``repr`` hides it: it may be a secret)."""

    text: str = field(repr=False)


@dataclass(frozen=True)
class EnvRef:
    """A reference to an environment variable.

    Attributes:
        variable: the variable's name.
        syntax: how it was written, e.g. ``${VAR}``, ``${env:VAR}``, ``$env:VAR`` (for reports).
        default: the ``${VAR:-default}``/``${VAR-default}`` default, None when there is none
            (``repr`` hides it).
        default_mode: when the default applies, as in a POSIX shell: ``unset_or_empty``
            (``${VAR:-x}``) or ``unset`` (``${VAR-x}``).
    """

    variable: str
    syntax: str
    default: str | None = field(default=None, repr=False)
    default_mode: str = "unset_or_empty"


@dataclass(frozen=True)
class InputRef:
    """A VS Code ``${input:id}``: a value the host prompts the user for."""

    id: str


@dataclass(frozen=True)
class PathVar:
    """``${workspaceFolder}``, ``${userHome}`` or ``${pathSeparator}`` (``${/}``)."""

    name: str


@dataclass(frozen=True)
class Unsupported:
    """A ``${…}`` variable Patchbay cannot resolve; ``kind`` is its prefix (``command``, ``config``…)."""

    kind: str


Part = Literal | EnvRef | InputRef | PathVar | Unsupported


@dataclass(frozen=True)
class ParsedValue:
    """One string value split into parts.

    Attributes:
        parts: literal text and placeholders in order (empty for ``""`` and for a helper).
        helper: for ``!command`` values (when helpers are recognised), the command text after
            the ``!``; it is never run (``repr`` hides it).
    """

    parts: tuple[Part, ...]
    helper: str | None = field(default=None, repr=False)

    @property
    def references(self) -> tuple[EnvRef, ...]:
        return tuple(p for p in self.parts if isinstance(p, EnvRef))

    @property
    def inputs(self) -> tuple[InputRef, ...]:
        return tuple(p for p in self.parts if isinstance(p, InputRef))

    @property
    def unsupported(self) -> tuple[Unsupported, ...]:
        return tuple(p for p in self.parts if isinstance(p, Unsupported))

    @property
    def path_vars(self) -> tuple[PathVar, ...]:
        return tuple(p for p in self.parts if isinstance(p, PathVar))

    @property
    def is_plain(self) -> bool:
        """Literal text only (after path variables were substituted)."""
        return self.helper is None and all(isinstance(p, Literal) for p in self.parts)

    def literal_text(self) -> str:
        """The text of a plain value. Raises ``ValueError`` unless :attr:`is_plain`."""
        if not self.is_plain:
            raise ValueError("the value holds placeholders")
        return "".join(p.text for p in self.parts if isinstance(p, Literal))

    def sole_reference(self) -> EnvRef | InputRef | None:
        """The one placeholder a value consists of (``"${TOKEN}"``), else None."""
        if self.helper is None and len(self.parts) == 1 and isinstance(self.parts[0], EnvRef | InputRef):
            return self.parts[0]
        return None

    def substitute(self, values: dict[str, str]) -> ParsedValue:
        """Path variables replaced by ``values[name]`` (``workspaceFolder``, ``userHome``,
        ``pathSeparator``); adjacent literals merged."""
        parts: list[Part] = []
        for part in self.parts:
            if isinstance(part, PathVar) and part.name in values:
                part = Literal(values[part.name])
            if isinstance(part, Literal) and parts and isinstance(parts[-1], Literal):
                parts[-1] = Literal(parts[-1].text + part.text)
            elif not (isinstance(part, Literal) and not part.text):
                parts.append(part)
        return ParsedValue(tuple(parts), self.helper)


def _token(match: re.Match[str]) -> Part:
    if match.group("pi") is not None:
        return EnvRef(match.group("pi"), "$env:VAR")
    if match.group("brace") is not None:
        return EnvRef(match.group("brace"), "{env:VAR}")
    body = match.group("body")
    if body in _PATH_VARS:
        return PathVar(_PATH_VARS[body])
    prefix, colon, rest = body.partition(":")
    if colon and prefix == "env" and re.fullmatch(_NAME, rest):
        return EnvRef(rest, "${env:VAR}")
    if colon and prefix == "input" and rest:
        return InputRef(rest)
    plain = _PLAIN.match(body)
    if plain:
        default = plain.group("default")
        if default is None:
            return EnvRef(plain.group("name"), "${VAR}")
        if plain.group("colon"):
            return EnvRef(plain.group("name"), "${VAR:-default}", default, "unset_or_empty")
        return EnvRef(plain.group("name"), "${VAR-default}", default, "unset")
    kind = prefix if colon and re.fullmatch(r"[A-Za-z]{1,20}", prefix) else "unknown"
    return Unsupported(kind)


def parse_value(text: str, *, helpers: bool = False) -> ParsedValue:
    """Split ``text`` into literal text and placeholders.

    Args:
        text: a string value from a host file.
        helpers: recognise pi-mcp-adapter's ``!command`` (the whole value; ``!!x`` is the literal
            ``!x``). Only credential-bearing values (env, headers, bearer tokens) have helpers.
    """
    if helpers and text.startswith("!"):
        if text.startswith("!!"):
            text = text[1:]
        else:
            return ParsedValue((), helper=text[1:])
    parts: list[Part] = []
    position = 0
    for match in _TOKEN.finditer(text):
        if match.start() > position:
            parts.append(Literal(text[position : match.start()]))
        parts.append(_token(match))
        position = match.end()
    if position < len(text):
        parts.append(Literal(text[position:]))
    return ParsedValue(tuple(parts))
