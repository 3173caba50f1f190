"""Connector validation rules. Pure functions; no I/O except ``~`` expansion.

Every failure raises :class:`~patchbay.core.errors.ConfigError` with code ``invalid_config`` and
the offending field in ``details["field"]`` and at the start of the message.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import unicodedata
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from patchbay.core.errors import ConfigError, ValidationError
from patchbay.core.models import HttpTarget, SocketTarget, StdioTarget
from patchbay.core.redaction import is_secret_key, redact_text

__all__ = [
    "validate_cwd",
    "validate_http_target",
    "validate_socket_path",
    "validate_stdio_target",
    "validate_text",
    "validate_tool_arguments",
    "url_host_problem",
    "validate_policy_url",
    "validate_url",
]

_CONTROL = {chr(c) for c in range(0x20)} | {"\x7f"}
_SHELL_OPERATORS = frozenset(";|&<>`")
_CONTROL_NAMES = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab", "\x1b": "an escape, U+001B"}


def _no_control(field: str, value: str) -> None:
    """Refuse control characters (terminal escapes included) and text that is not valid UTF-8."""
    found = next((ch for ch in value if ch in _CONTROL), None)
    if found is not None:
        raise ConfigError(
            field, f"must not contain control characters ({_CONTROL_NAMES.get(found, f'U+{ord(found):04X}')})"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(field, "must be valid UTF-8 text") from None


def _no_secret(field: str, value: str, what: str) -> None:
    """Refuse a value that redaction would mask: secrets are never stored in a connector."""
    if redact_text(value) != value:
        raise ConfigError(
            field,
            f"{what} looks like a secret; connectors store no secret values "
            "(bind it by reference instead: --env KEY=@env:VAR, --header, --bearer, or patchbay credential set)",
        )


def validate_text(field: str, value: str, *, max_length: int = 1000) -> str:
    """A free-text field (description, display name): no control or format characters (Unicode
    categories Cc and Cf: C0/C1 controls, bidi overrides and isolates, zero-width characters, BOM),
    bounded length.

    Raises:
        ConfigError: ``invalid_config`` naming ``field``.
    """
    _no_control(field, value)
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf"):
            # shown by UIs and terminals: such a character can reorder or hide what a reader sees
            raise ConfigError(field, f"must not contain control or format characters (U+{ord(ch):04X})")
    if len(value) > max_length:
        raise ConfigError(field, f"must be at most {max_length} characters")
    return value


def url_host_problem(host: str) -> str | None:
    """Why ``host`` cannot be the host of a connector URL, or None when it can.

    The one rule that connector validation (:func:`validate_url`) and the egress guard and audit
    (``adapters/transports/egress.py`` ``origin_of``) share, so a URL accepted here never fails
    later at run time.

    Args:
        host: the URL's host as written or IDNA-encoded, without the brackets of an IPv6 literal
            (``urlsplit(url).hostname``, or httpx's ``raw_host``).

    Accepted: DNS names of letters (non-ASCII ones become IDNA), digits, ``.``, ``-`` and ``_``
    (Docker Compose service names such as ``mcp_server``), IPv4 and IPv6 literals. Refused: a
    ``%``-escaped host (it names a different host to different parsers) and an IPv6 zone id
    (``[fe80::1%25eth0]``: an interface of this machine, meaningless in a stored URL).
    """
    if not host:
        return "must name a host"
    if ":" in host:
        if "%" in host:
            return "must not carry an IPv6 zone id (%25...); use an address or a host name"
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return "has an IPv6 host that is not a valid address"
        return None
    if "%" in host:
        return "must not %-escape the host; write the host name as it is"
    if any(not (ch.isalnum() or ch in "._-") for ch in host):
        return "has a host with characters a host name cannot contain (letters, digits, '.', '-', '_')"
    if host.rstrip(".").rsplit(".", 1)[-1].isdigit():
        # A host ending in a number is an IPv4 address to URL parsers (WHATWG, httpx): never a name.
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return "has a numeric host that is not a valid IPv4 address (four numbers 0-255, e.g. 192.0.2.10)"
    return None


def validate_policy_url(field: str, url: str) -> str:
    """A connector's ``terms_url`` or ``privacy_url``: empty (none given), else an absolute
    http(s) URL as :func:`validate_url` wants it, at most 2048 characters; returned unchanged.

    Raises:
        ConfigError: ``invalid_config`` naming ``field``.
    """
    if url == "":
        return url
    if len(url) > 2048:
        raise ConfigError(field, "is longer than 2048 characters")
    return validate_url(url, field)


def validate_url(url: str, field: str = "url") -> str:
    """An absolute ``http``/``https`` URL with a host and no userinfo; returned unchanged.

    Raises:
        ConfigError: ``invalid_config`` naming ``field``.
    """
    if not url:
        raise ConfigError(field, "must not be empty")
    _no_control(field, url)
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError on a malformed port
    except ValueError as exc:
        raise ConfigError(field, f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(field, f"must be an absolute http(s) URL, got scheme {parts.scheme or 'none'!r}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ConfigError(field, "must not embed a user name or password; use a credential reference")
    if not parts.hostname:
        raise ConfigError(field, "must name a host")
    if any(ch.isspace() or ch == "\\" for ch in parts.netloc):
        raise ConfigError(field, "must not contain spaces or backslashes in the host")
    problem = url_host_problem(parts.hostname)
    if problem is not None:
        raise ConfigError(field, problem)
    if port == 0:
        raise ConfigError(field, "must not use port 0")
    if len(url) > 2048:
        raise ConfigError(field, "must be at most 2048 characters")
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if is_secret_key(name):
            raise ConfigError(
                field, f"query parameter {name!r} looks like a credential; connectors store no secret values"
            )
    _no_secret(field, url, "the URL")
    return url


def validate_cwd(cwd: str | None, workspace: str | None) -> str:
    """Normalise a stdio ``cwd`` to a path relative to the workspace root ("" = the root).

    Args:
        cwd: relative to the workspace, or absolute inside it; None/"" means the workspace root.
        workspace: the canonical workspace root (symlinks already resolved); required when ``cwd``
            is absolute.

    Raises:
        ConfigError: ``invalid_config`` (field ``cwd``) when it escapes the workspace.
    """
    if not cwd:
        return ""
    _no_control("cwd", cwd)
    if os.path.isabs(cwd):
        if not workspace:
            raise ConfigError("cwd", "an absolute cwd needs a workspace to be checked against")
        root = os.path.normpath(workspace)
        full = os.path.normpath(cwd)
        if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
            raise ConfigError("cwd", f"must be inside the workspace {root}")
        rel = os.path.relpath(full, root)
        return "" if rel == "." else rel
    rel = posixpath.normpath(cwd.replace(os.sep, "/"))
    if rel == ".":
        return ""
    if rel == ".." or rel.startswith("../"):
        raise ConfigError("cwd", "must be inside the workspace (no '..' escape)")
    return rel


def validate_stdio_target(
    command: str, args: list[str] | tuple[str, ...] = (), cwd: str | None = None, workspace: str | None = None
) -> StdioTarget:
    """Validate a local command: command and args apart, never a shell line.

    Raises:
        ConfigError: field ``command`` (empty, starts with ``-``, contains whitespace-separated
            arguments, a shell operator (``; | & < >`` or a backtick) or control characters, looks like
            a secret), ``args`` (control/NUL
            characters, a secret-looking argument) or ``cwd``.
    """
    if not command or not command.strip():
        raise ConfigError("command", "must not be empty")
    _no_control("command", command)
    if command.startswith("-"):
        raise ConfigError("command", f"must not start with '-', got {command!r}")
    if command != command.strip() or any(ch.isspace() for ch in command):
        raise ConfigError(
            "command",
            "must be one executable, not a shell line; pass arguments separately (patchbay connector add NAME -- CMD ARG...)",
        )
    operator = next((ch for ch in command if ch in _SHELL_OPERATORS), None)
    if operator is not None or "$(" in command:
        # No shell runs the command, so these would be part of the program's name: never what was meant.
        raise ConfigError(
            "command",
            f"must be one executable; {operator or '$('!r} is a shell operator and no shell runs connectors "
            "(a pipeline or a command list needs a script of its own)",
        )
    _no_secret("command", command, "the command")
    if len(args) > 256:
        raise ConfigError("args", "at most 256 arguments")
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            raise ConfigError("args", f"argument {index} must be a string")
        if "\x00" in arg:
            raise ConfigError("args", f"argument {index} contains a NUL character")
        if len(arg) > 4096:
            raise ConfigError("args", f"argument {index} is longer than 4096 characters")
        try:
            _no_control("args", arg)
        except ConfigError:
            raise ConfigError("args", f"argument {index} contains control characters or invalid UTF-8") from None
        _no_secret("args", arg, f"argument {index}")
    return StdioTarget(command=command, args=tuple(args), cwd=validate_cwd(cwd, workspace))


def validate_http_target(url: str, transport: str = "streamable_http") -> HttpTarget:
    """Validate a remote target (absolute http(s), no userinfo).

    Raises:
        ConfigError: field ``url`` or ``transport``.
    """
    if transport not in ("streamable_http", "sse"):
        raise ConfigError("transport", f"must be streamable_http or sse, got {transport!r}")
    return HttpTarget(transport=transport, url=validate_url(url))  # type: ignore[arg-type]


def validate_socket_path(path: str) -> SocketTarget:
    """Validate and normalise a Unix socket path: absolute or ``~``-relative.

    Raises:
        ConfigError: field ``socket_path``.
    """
    if not path:
        raise ConfigError("socket_path", "must not be empty")
    _no_control("socket_path", path)
    if path.startswith("~"):
        path = os.path.expanduser(path)
        if path.startswith("~"):
            raise ConfigError("socket_path", "could not expand '~'")
    if not os.path.isabs(path):
        raise ConfigError("socket_path", f"must be an absolute path or start with '~', got {path!r}")
    normal = os.path.normpath(path)
    if len(normal.encode()) > 107:
        raise ConfigError("socket_path", "is longer than a Unix socket path may be (107 bytes)")
    return SocketTarget(path=normal)


MAX_ARGUMENT_DEPTH = 64


def validate_tool_arguments(arguments: object, *, max_depth: int = MAX_ARGUMENT_DEPTH) -> dict[str, Any]:
    """Check tool-call arguments before anything is logged or sent.

    A JSON object of JSON values: strings valid UTF-8 (no lone surrogates), finite numbers (no
    NaN/Infinity, which JSON cannot carry), nesting at most ``max_depth`` levels. Walked
    iteratively, so hostile nesting cannot exhaust the stack.

    Raises:
        ValidationError: ``validation_error`` with ``details["field"] == "arguments"``.
    """
    if not isinstance(arguments, dict):
        raise ValidationError("arguments: must be a JSON object", details={"field": "arguments"})
    stack: list[tuple[object, int]] = [(arguments, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            raise ValidationError(f"arguments: nested deeper than {max_depth} levels", details={"field": "arguments"})
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ValidationError("arguments: object keys must be strings", details={"field": "arguments"})
                stack.append((key, depth))
                stack.append((item, depth + 1))
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValidationError(
                    "arguments: strings must be valid UTF-8", details={"field": "arguments"}
                ) from None
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise ValidationError(
                    "arguments: numbers must be finite (no NaN or Infinity)", details={"field": "arguments"}
                )
        elif value is not None and not isinstance(value, bool | int):
            raise ValidationError(
                f"arguments: {type(value).__name__} is not a JSON value", details={"field": "arguments"}
            )
    return arguments
