"""Binding requests: where a credential's value goes, and where it comes from. Parsed from the
command-line forms::

    --env KEY=VALUE              a managed credential owned by the connector, delivered as $KEY
    --env KEY=@env:VAR           an environment reference: Patchbay's $VAR, read at connect time
    --env KEY=@env:VAR:-DEFAULT  ... DEFAULT when $VAR is unset or empty (``${VAR:-DEFAULT}``)
    --env KEY=@credential:ID     a credential the connector owns or that was shared with it
    --env KEY=@plain:VALUE       a setting that is not a secret (NODE_ENV=production): kept in the
                                 connector's config, shown in views, never masked in output
    --header 'Name: VALUE'       the same for an HTTP header (VALUE may be @env:/@credential:/@plain: too)
    --bearer VALUE               Authorization: Bearer VALUE (or @env:VAR, @credential:ID)

A value that starts with ``@`` is written ``@@…``. No error message ever quotes a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from patchbay.core.credentials import (
    MAX_SECRET_CHARS,
    DefaultMode,
    Delivery,
    is_credential_id,
    validate_env_name,
    validate_header_name,
    validate_plain_value,
    validate_secret_value,
)
from patchbay.core.errors import ConfigError

__all__ = ["BindingSpec", "parse_bearer", "parse_env", "parse_header", "parse_unset"]

_ENV_PREFIX = "@env:"
_REF_PREFIX = "@credential:"
_PLAIN_PREFIX = "@plain:"
# Only the ``:-`` form: ``@env:not-a-name`` stays an error rather than becoming $not with a default
# (``${VAR-x}``, unset only, comes through import and the REST ``default_mode``).
_ENV_DEFAULT = re.compile(r"(?P<variable>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


@dataclass(frozen=True)
class BindingSpec:
    """One requested binding: where the value goes, and exactly one of ``value``, ``variable``,
    ``ref``, ``plain``.

    Attributes:
        delivery: ``env``, ``header`` or ``bearer``.
        name: the environment variable or header name (``Authorization`` for ``bearer``).
        value: a managed value to store (never printed: ``repr`` omits it).
        variable: the name of a variable of Patchbay's environment (an environment reference).
        ref: the id of an existing credential the connector owns or that is shared with it.
        plain: a value that is not a secret, kept in the connector's config (not for ``bearer``;
            refused when the value itself looks like a key or token).
        default: with ``variable``: the value used when the variable is unset (``default_mode``
            ``unset``) or unset or empty (``unset_or_empty``, the default); ``repr`` omits it.
    """

    delivery: Delivery
    name: str
    value: str | None = field(default=None, repr=False)
    variable: str | None = None
    ref: str | None = None
    plain: str | None = None
    default: str | None = field(default=None, repr=False)
    default_mode: DefaultMode = "unset_or_empty"

    def __post_init__(self) -> None:
        field_name = self.delivery
        if self.delivery == "env":
            validate_env_name(field_name, self.name)
        elif self.delivery == "header":
            validate_header_name(field_name, self.name)
        elif self.name != "Authorization":
            raise ConfigError(field_name, "a bearer binding is always named Authorization")
        if sum(x is not None for x in (self.value, self.variable, self.ref, self.plain)) != 1:
            raise ConfigError(field_name, "give exactly one of a value, @env:VAR, @credential:ID or @plain:VALUE")
        if self.variable is not None:
            validate_env_name(field_name, self.variable)
        if self.default is not None:
            if self.variable is None:
                raise ConfigError(field_name, "only an environment reference (@env:VAR) takes a default")
            if self.default_mode not in ("unset", "unset_or_empty"):
                raise ConfigError(field_name, "a default applies when the variable is unset or unset_or_empty")
            if len(self.default) > MAX_SECRET_CHARS or "\x00" in self.default:
                raise ConfigError(field_name, f"a default must be at most {MAX_SECRET_CHARS} characters without NUL")
        if self.plain is not None:
            validate_plain_value(field_name, self.name, self.plain, self.delivery)
        if self.ref is not None and not is_credential_id(self.ref):
            raise ConfigError(field_name, f"@credential: needs a credential id (cred_…), got {self.ref[:60]!r}")
        if self.value is not None:
            validate_secret_value(field_name, self.value, self.delivery)

    @property
    def target_key(self) -> tuple[str, str]:
        """The place it fills, as :attr:`patchbay.core.credentials.CredentialBinding.target_key`."""
        return ("env", self.name) if self.delivery == "env" else ("header", self.name.lower())

    @property
    def kind(self) -> str:
        """The kind of the credential it creates: ``env_reference``, ``bearer_token`` or ``api_key``."""
        if self.variable is not None:
            return "env_reference"
        return "bearer_token" if self.delivery == "bearer" else "api_key"


def _source(delivery: Delivery, name: str, text: str) -> BindingSpec:
    if text.startswith("@@"):
        return BindingSpec(delivery, name, value=text[1:])
    if text.startswith(_ENV_PREFIX):
        reference = _ENV_DEFAULT.fullmatch(text[len(_ENV_PREFIX) :])
        if reference is None:  # not a variable name: let the spec say so
            return BindingSpec(delivery, name, variable=text[len(_ENV_PREFIX) :])
        return BindingSpec(delivery, name, variable=reference.group("variable"), default=reference.group("default"))
    if text.startswith(_REF_PREFIX):
        return BindingSpec(delivery, name, ref=text[len(_REF_PREFIX) :])
    if text.startswith(_PLAIN_PREFIX):
        return BindingSpec(delivery, name, plain=text[len(_PLAIN_PREFIX) :])
    if text.startswith("@"):
        raise ConfigError(
            delivery, "a value starting with @ must be @env:VAR, @credential:ID, @plain:VALUE, or escaped as @@…"
        )
    return BindingSpec(delivery, name, value=text)


def parse_env(text: str) -> BindingSpec:
    """``KEY=VALUE`` / ``KEY=@env:VAR[:-DEFAULT]`` / ``KEY=@credential:ID`` / ``KEY=@plain:VALUE`` →
    an ``env`` binding (stdio).

    Raises:
        ConfigError: ``invalid_config`` (field ``env``); the message never quotes the value.
    """
    name, sep, value = text.partition("=")
    if not sep:
        raise ConfigError("env", "must be KEY=VALUE, KEY=@env:VAR or KEY=@credential:ID")
    return _source("env", validate_env_name("env", name), value)


def parse_header(text: str) -> BindingSpec:
    """``Name: VALUE`` (or ``@env:VAR`` / ``@credential:ID`` after the colon) → a ``header`` binding.

    Raises:
        ConfigError: ``invalid_config`` (field ``header``); the message never quotes the value.
    """
    name, sep, value = text.partition(":")
    if not sep:
        raise ConfigError("header", "must be 'Name: VALUE', 'Name: @env:VAR' or 'Name: @credential:ID'")
    return _source("header", validate_header_name("header", name.strip()), value.strip(" \t"))


def parse_bearer(text: str) -> BindingSpec:
    """``VALUE`` / ``@env:VAR`` / ``@credential:ID`` → ``Authorization: Bearer …``.

    Raises:
        ConfigError: ``invalid_config`` (field ``bearer``).
    """
    return _source("bearer", "Authorization", text)


def parse_unset(text: str) -> tuple[str, str]:
    """A binding place to remove: ``env:KEY``, ``header:Name`` or ``bearer`` → its target key.

    Raises:
        ConfigError: ``invalid_config`` (field ``unset``).
    """
    if text == "bearer":
        return ("header", "authorization")
    kind, sep, name = text.partition(":")
    if sep and kind == "env":
        return ("env", validate_env_name("unset", name))
    if sep and kind == "header":
        return ("header", validate_header_name("unset", name).lower())
    raise ConfigError("unset", f"must be env:KEY, header:Name or bearer, got {text[:80]!r}")
