"""Credentials by reference: the shapes, the rules, and how a resolved value is delivered (no I/O).

A credential lives in the credential store (:mod:`patchbay.adapters.credentials`), never in the
database, a snapshot or a log; its source is ``managed`` (the value is kept) or ``environment``
(only a variable's NAME is kept, with an optional shell-style default). A connector holds
**bindings** only (``Connector.runtime_config["bindings"]``): which credential (``ref``) is
delivered as an ``env`` variable, a ``header`` or a ``bearer`` token, or a **plain** binding for a
setting that is no secret. A binding that cannot be resolved stops only its connector, with
:class:`~patchbay.core.errors.CredentialUnavailable` (code ``auth_required``,
``details["reason"] == "credential_unavailable"``). Key names avoid words the redaction treats as
secret names, so printing a binding never masks the ids a user needs.

Design: docs/credentials.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from patchbay.core.errors import ConfigError
from patchbay.core.redaction import is_secret_key, redact_text

__all__ = [
    "BINDINGS_KEY",
    "CREDENTIAL_ID_PREFIX",
    "Credential",
    "CredentialBinding",
    "CredentialKind",
    "CredentialSource",
    "Delivery",
    "DefaultMode",
    "MAX_SECRET_CHARS",
    "apply_default",
    "bindings_from_config",
    "check_bindings",
    "deliver",
    "is_credential_id",
    "looks_secret",
    "validate_env_name",
    "validate_header_name",
    "validate_secret_value",
]

CredentialKind = Literal["bearer_token", "api_key", "oauth_token_bundle", "env_reference"]
CredentialSource = Literal["managed", "environment"]
Delivery = Literal["env", "header", "bearer"]
DefaultMode = Literal["unset", "unset_or_empty"]

BINDINGS_KEY = "bindings"
"""The ``Connector.runtime_config`` key that holds a connector's credential bindings."""
CREDENTIAL_ID_PREFIX = "cred_"
MAX_SECRET_CHARS = 64 * 1024
"""Longest value a managed credential may hold (characters)."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 token
_CREDENTIAL_ID = re.compile(r"^cred_[0-9a-f]{32}$")
#: Headers the transports set themselves (or that would change how a request is framed or routed).
_RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "accept",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "proxy-connection",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    }
)
_REMOTE = ("streamable_http", "sse")
# Name parts (split at - and _) that mark a setting as a secret beyond what is_secret_key knows.
_SECRET_NAME_PARTS = frozenset({"key", "keys", "pat", "pwd", "pin", "jwt", "sig", "signature", "dsn", "cert", "salt"})


def looks_secret(name: str, value: str) -> bool:
    """Whether a setting ``name=value`` should be kept as a credential rather than a plain value.

    A secret-looking name (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*API_KEY*``, ``Authorization``,
    a ``KEY``/``PAT``/``DSN``… part such as ``X-Key`` or ``SENTRY_DSN``), a value a redaction rule masks (``ghp_…``, ``sk-…``, a JWT, ``Bearer …``, a URL with a
    password), or a long random-looking value (16+ characters without spaces mixing letters and
    digits, not a path or URL) is a secret; ``production``, ``info``, ``8080``, a URL or a path is not.
    """
    if is_secret_key(name) or redact_text(value) != value:
        return True
    if _SECRET_NAME_PARTS & {part for part in re.split(r"[^a-z0-9]+", name.lower()) if part}:
        return True
    if len(value) < 16 or any(ch.isspace() for ch in value) or "/" in value or value.count(".") > 2:
        return False
    letters = sum(ch.isalpha() for ch in value)
    digits = sum(ch.isdigit() for ch in value)
    return letters >= 4 and digits >= 3


def apply_default(value: str | None, default: str | None, mode: DefaultMode | None) -> str | None:
    """The value of ``${VAR:-default}`` (mode ``unset_or_empty``) or ``${VAR-default}`` (``unset``)
    for ``value`` (None: the variable is unset), as a POSIX shell expands it."""
    if default is None or mode is None:
        return value
    if value is None or (value == "" and mode == "unset_or_empty"):
        return default
    return value


def is_credential_id(value: object) -> bool:
    """Whether ``value`` has the shape of a credential id (``cred_`` + 32 hex digits)."""
    return isinstance(value, str) and bool(_CREDENTIAL_ID.fullmatch(value))


def validate_env_name(field: str, name: str) -> str:
    """An environment variable name, ``^[A-Za-z_][A-Za-z0-9_]*$``, at most 128 chars.

    Raises:
        ConfigError: ``invalid_config`` naming ``field``.
    """
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name) or len(name) > 128:
        raise ConfigError(field, f"must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got {name[:80]!r}")
    return name


def validate_header_name(field: str, name: str) -> str:
    """An HTTP header name (an RFC 9110 token, at most 128 chars) the transport does not set itself.

    ``Authorization`` is allowed here (a raw ``header`` binding may carry any scheme).

    Raises:
        ConfigError: ``invalid_config`` naming ``field``.
    """
    if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name) or len(name) > 128:
        raise ConfigError(field, f"must be an HTTP header name (letters, digits, -), got {str(name)[:80]!r}")
    if name.lower() in _RESERVED_HEADERS:
        raise ConfigError(field, f"{name} is set by the transport itself and cannot carry a credential")
    return name


def validate_secret_value(field: str, value: str, delivery: Delivery) -> str:
    """A managed credential value for ``delivery``; never quoted back in an error.

    Rules: a non-empty string of at most :data:`MAX_SECRET_CHARS` characters without NUL; for
    ``header`` and ``bearer`` also no CR/LF or other control characters but tab, and no leading or
    trailing whitespace (an HTTP field value, RFC 9110 section 5.5); a ``bearer`` value has no space
    (it follows ``Bearer ``).

    Raises:
        ConfigError: ``invalid_config`` naming ``field`` (the message describes the problem only).
    """
    if not isinstance(value, str) or not value:
        raise ConfigError(field, "the value must not be empty")
    if len(value) > MAX_SECRET_CHARS:
        raise ConfigError(field, f"the value is longer than {MAX_SECRET_CHARS} characters")
    if "\x00" in value:
        raise ConfigError(field, "the value contains a NUL character")
    if delivery in ("header", "bearer"):
        if any((ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F for ch in value):
            raise ConfigError(field, "an HTTP header value must not contain line breaks or control characters")
        if value != value.strip():
            raise ConfigError(field, "an HTTP header value must not start or end with whitespace")
        if any(ord(ch) > 0xFF for ch in value):
            raise ConfigError(field, "an HTTP header value must be Latin-1 text")
    if delivery == "bearer" and any(ch.isspace() for ch in value):
        raise ConfigError(field, "a bearer value must not contain spaces (it follows 'Bearer ')")
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CredentialBinding(_Model):
    """A connector's reference to one credential and how its value is delivered, or a plain
    (non-secret) value delivered the same way.

    Stored in ``Connector.runtime_config["bindings"]`` and carried by ``RuntimeServer.bindings``; a
    credential binding holds no value (references only).
    """

    ref: str | None = None
    """The credential id (``cred_…``); None for a plain binding."""
    delivery: Delivery
    """``env`` (stdio environment variable), ``header`` (HTTP header), ``bearer`` (``Authorization: Bearer``)."""
    name: str
    """The environment variable or header name; ``Authorization`` for ``bearer``."""
    value: str | None = None
    """A plain binding's value: a setting that is not a secret (``production``), shown in views and
    never registered for redaction. None for a credential binding."""

    @model_validator(mode="after")
    def _check(self) -> CredentialBinding:
        if (self.ref is None) == (self.value is None):
            raise ValueError("a binding has either a credential ref or a plain value")
        if self.ref is not None and not is_credential_id(self.ref):
            raise ValueError(f"ref must be a credential id (cred_ + 32 hex digits), got {self.ref[:60]!r}")
        try:
            if self.delivery == "env":
                validate_env_name("name", self.name)
            elif self.delivery == "header":
                validate_header_name("name", self.name)
            elif self.name != "Authorization":
                raise ConfigError("name", "a bearer binding is always named Authorization")
            if self.value is not None:
                validate_plain_value("value", self.name, self.value, self.delivery)
        except ConfigError as exc:
            raise ValueError(exc.message) from None
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A credential binding is stored as {ref, delivery, name}, a plain one as {delivery, name,
        # value}: the unused field is left out, so stored bindings keep their shape.
        data = handler(self)
        return {k: v for k, v in data.items() if not (k in ("ref", "value") and v is None)}

    @property
    def is_plain(self) -> bool:
        """Whether it carries a plain (non-secret) value instead of a credential reference."""
        return self.value is not None

    @property
    def target_key(self) -> tuple[str, str]:
        """What the binding fills: ``("env", NAME)`` or ``("header", lower-case name)``; two bindings
        of one connector never share it (a bearer binding fills ``("header", "authorization")``)."""
        return ("env", self.name) if self.delivery == "env" else ("header", self.name.lower())

    def describe(self) -> str:
        """``env PB_KEY``, ``header X-Api-Key`` or ``header Authorization (bearer)``: no value, and
        nothing the redaction would read as a secret (``name: value``, ``Bearer <word>``)."""
        return "header Authorization (bearer)" if self.delivery == "bearer" else f"{self.delivery} {self.name}"


def validate_plain_value(field: str, name: str, value: str, delivery: Delivery) -> str:
    """A plain (non-secret) binding value: the rules of :func:`validate_secret_value`, never for
    ``bearer``, and refused when the value itself looks like a secret (a key shape, a JWT, …):
    such a value must be a credential, never stored in the database. A secret-looking *name*
    alone is allowed: the user decided it is not a secret.

    Raises:
        ConfigError: ``invalid_config`` naming ``field`` (never quoting the value).
    """
    if delivery == "bearer":
        raise ConfigError(field, "a bearer token is a secret: bind it as a credential, not a plain value")
    if not isinstance(value, str):
        raise ConfigError(field, "a plain value must be text")
    if value:
        validate_secret_value(field, value, delivery)
    elif delivery != "env":
        raise ConfigError(field, "an HTTP header value must not be empty")
    if redact_text(value) != value:
        raise ConfigError(field, f"the value of {name} looks like a secret: bind it as a credential, not a plain value")
    return value


class Credential(_Model):
    """One stored credential as every interface may show it: never its value."""

    credential_id: str
    kind: CredentialKind
    source: CredentialSource
    owner_kind: Literal["mcp"] = "mcp"
    owner_id: str
    """The owning connector's id."""
    variable: str | None = None
    """``environment`` source: the NAME of the variable in Patchbay's environment; else None."""
    default: str | None = None
    """``environment`` source: the value used when the variable is unset (or empty, see
    ``default_mode``). In the public shape only a plain default is shown; a secret one is None
    there (``default_secret``)."""
    default_mode: DefaultMode | None = None
    """``unset_or_empty`` (``${VAR:-x}``), ``unset`` (``${VAR-x}``), or None: no default."""
    default_secret: bool = False
    """The default looks like a secret (:func:`looks_secret`): masked like a value, never shown."""
    shared_with: tuple[str, ...] = ()
    """Connector ids the owner explicitly shared the credential with."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Non-secret notes (e.g. ``{"label": "GitHub PAT"}``)."""
    configured: bool = False
    """``managed``: a value is stored; ``environment``: a variable name is recorded."""
    created_at: int = 0
    """Unix time in milliseconds."""
    updated_at: int = 0
    """Unix time in milliseconds."""
    last_used_at: int | None = None
    """Unix milliseconds of the last time a runtime or probe resolved it; None if never."""

    @model_validator(mode="after")
    def _check(self) -> Credential:
        if (self.source == "environment") != (self.kind == "env_reference"):
            raise ValueError("an environment credential has kind env_reference, and only it")
        if self.source == "environment" and not self.variable:
            raise ValueError("an environment credential names its variable")
        if self.default_mode is not None and self.source != "environment":
            raise ValueError("only an environment credential has a default")
        return self

    def usable_by(self, connector_id: str) -> bool:
        """Whether ``connector_id`` may use it: its owner, or one it was shared with."""
        return self.owner_kind == "mcp" and (connector_id == self.owner_id or connector_id in self.shared_with)


_BINDINGS_ADAPTER: pydantic.TypeAdapter[tuple[CredentialBinding, ...]] = pydantic.TypeAdapter(
    tuple[CredentialBinding, ...]
)


def bindings_from_config(runtime_config: Mapping[str, Any]) -> tuple[CredentialBinding, ...]:
    """The bindings stored in a connector's ``runtime_config`` (``()`` when there are none).

    Raises:
        ConfigError: ``invalid_config`` (field ``bindings``) for a malformed entry.
    """
    raw = runtime_config.get(BINDINGS_KEY) if isinstance(runtime_config, Mapping) else None
    if not raw:
        return ()
    try:
        return _BINDINGS_ADAPTER.validate_python(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError(BINDINGS_KEY, f"malformed credential binding ({exc.error_count()} errors)") from None


def check_bindings(bindings: Iterable[CredentialBinding], transport: str) -> tuple[CredentialBinding, ...]:
    """Bindings valid together for a connector of ``transport``.

    ``env`` only for ``stdio``; ``header``/``bearer`` only for ``streamable_http``/``sse``; a
    ``socket`` connector takes none. No two bindings fill the same variable or header
    (case-insensitively for headers; a bearer binding fills ``Authorization``).

    Raises:
        ConfigError: ``invalid_config`` (field ``bindings``).
    """
    out = tuple(bindings)
    seen: dict[tuple[str, str], CredentialBinding] = {}
    for binding in out:
        if binding.delivery == "env" and transport != "stdio":
            raise ConfigError(
                BINDINGS_KEY, f"{binding.describe()}: environment variables are for local commands (stdio)"
            )
        if binding.delivery != "env" and transport not in _REMOTE:
            raise ConfigError(BINDINGS_KEY, f"{binding.describe()}: HTTP headers are for remote (http/sse) connectors")
        other = seen.get(binding.target_key)
        if other is not None:
            raise ConfigError(BINDINGS_KEY, f"{binding.describe()} and {other.describe()} fill the same place")
        seen[binding.target_key] = binding
    return out


def deliver(bindings: Iterable[CredentialBinding], values: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(env, headers)`` for resolved ``values`` keyed by credential id (plain bindings carry
    their own value).

    ``env`` entries go to a stdio child's environment, ``header`` entries are sent as they are,
    ``bearer`` ones as ``Authorization: Bearer <value>``.

    Raises:
        KeyError: a binding's ``ref`` has no value in ``values`` (resolve first).
    """
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    for binding in bindings:
        value = binding.value if binding.value is not None else values[binding.ref or ""]
        if binding.delivery == "env":
            env[binding.name] = value
        elif binding.delivery == "header":
            headers[binding.name] = value
        else:
            headers["Authorization"] = f"Bearer {value}"
    return env, headers
