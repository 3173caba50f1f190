"""What every CLI command shares: settings, the store, output in text or JSON, and error handling.

User errors print one line ``error[<code>]: <message>`` on stderr (or ``{"error": {...}}`` on
stdout with ``--json``) and exit non-zero; never a traceback (set ``PATCHBAY_DEBUG=1`` to see one,
redacted).

Everything the CLI prints is redacted (:mod:`patchbay.core.redaction`): both consoles write through
a redacting stream, :func:`safe_text`/:func:`one_line` redact before they cut, and :func:`emit_json`
redacts the document (secret-named keys lose their values, strings are scanned) except the values of
Patchbay's own identifiers (:data:`NOT_SECRET_KEYS`).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from patchbay.core.errors import ErrorCode, FailureReason, PatchbayError
from patchbay.core.redaction import REDACTED, is_secret_key, redact_text
from patchbay.core.settings import Settings

if TYPE_CHECKING:  # imported lazily at run time so `--help` stays fast
    from patchbay.control.connectors import ConnectorService

__all__ = [
    "CliState",
    "JSON_OPTION",
    "NOT_SECRET_KEYS",
    "emit_json",
    "err_console",
    "error_line",
    "handle_errors",
    "one_line",
    "out_console",
    "redact_output",
    "safe_text",
    "state",
]


class _RedactingStream:
    """A text stream that redacts every ``write`` and forwards it to ``target()`` (looked up at
    each call, so a replaced ``sys.stdout``/``sys.stderr`` is honoured); everything else
    (``isatty``, ``fileno``, ``encoding``, ``flush``) is the target's. Rich writes one rendered
    ``print`` per ``write``."""

    def __init__(self, target: Callable[[], Any]) -> None:
        self._target = target

    def write(self, text: str) -> int:
        written: int = self._target().write(redact_text(text))
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


# Markup is off: names, commands, URLs and server text are printed literally, never parsed as
# Rich tags. Piped output is not cut to 80 columns, so tables stay whole for scripts.
out_console = Console(
    file=_RedactingStream(lambda: sys.stdout),  # type: ignore[arg-type]
    markup=False,
    highlight=False,
    soft_wrap=True,
    width=None if sys.stdout.isatty() else 240,
)
err_console = Console(file=_RedactingStream(lambda: sys.stderr), markup=False, highlight=False, soft_wrap=True)  # type: ignore[arg-type]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")
_MAX_ERROR_CHARS = 500


def safe_text(text: str) -> str:
    """Server-supplied text, redacted, with terminal control characters (escape sequences) made
    visible."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", redact_text(text))


def one_line(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    """Redact, collapse whitespace (newlines included) and cut at ``limit`` characters with an
    ellipsis (redacted first, so a cut never leaves an unrecognisable piece of a secret)."""
    line = " ".join(safe_text(text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class CliState:
    home: Path | None = None
    _service: ConnectorService | None = None

    @property
    def settings(self) -> Settings:
        return Settings(home=self.home) if self.home else Settings()

    def service(self) -> ConnectorService:  # imported lazily so `--help` stays fast
        if self._service is None:
            from patchbay.adapters.store import open_store
            from patchbay.control.connectors import ConnectorService

            settings = self.settings
            if not settings.home.is_dir():  # private like the default home; an existing one keeps its mode
                settings.home.parent.mkdir(parents=True, exist_ok=True)
                settings.home.mkdir(mode=0o700, exist_ok=True)
            self._service = ConnectorService(open_store(settings), settings)
            self._service.on_committed(_warn_unwritten)
        return self._service


def _warn_unwritten(project_id: str | None, report: Any) -> None:
    """After a committed mutation: a warning on stderr per workspace whose snapshot could not be
    re-written (the change stands; that workspace's runtimes refuse its older snapshot)."""
    for workspace in report.skipped:
        if workspace.status == "failed":
            err_console.print(
                Text(f"warning: the runtime snapshot of {workspace.workspace} was not written: {workspace.message}")
            )


state = CliState()


NOT_SECRET_KEYS = frozenset(
    {
        "session_id",
        "sessionId",
        "credential_ref",
        "oauth",
        "client_secret_ref",
        "private_key_ref",
        "idp_client_secret_ref",
        "id_token_ref",
        "has_refresh_token",
        "token_endpoint_auth",
        "auth_state",
    }
)
"""Keys whose names look secret but whose values are Patchbay's own identifiers, references or
flags (a session id, a credential id, an OAuth config holding only references, whether a refresh
token exists), never a secret value; their strings are still scanned."""


def redact_output(value: Any) -> Any:
    """``redact_value`` for what the CLI prints: secret-named keys (except
    :data:`NOT_SECRET_KEYS`) lose non-empty values, every string is scanned, keys stay visible.

    Args:
        value: a JSON-like value (non-JSON leaves are returned as they are).
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            secret = isinstance(key, str) and key not in NOT_SECRET_KEYS and is_secret_key(key)
            out[key] = REDACTED if secret and item not in (None, "", {}, []) else redact_output(item)
        return out
    if isinstance(value, list | tuple):
        return [redact_output(item) for item in value]
    return value


def emit_json(value: Any) -> None:
    """Write one JSON document to stdout, redacted (:func:`redact_output`)."""
    sys.stdout.write(json.dumps(redact_output(value), indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _wants_json(kwargs: dict[str, Any]) -> bool:
    return bool(kwargs.get("as_json"))


def handle_errors(func: F) -> F:
    """Turn PatchbayError (and anything unexpected) into one line and a non-zero exit."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except PatchbayError as exc:
            _report(exc.to_dict(), _wants_json(kwargs))
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            _report(
                {"code": str(FailureReason.CANCELLED), "message": "interrupted", "details": {}}, _wants_json(kwargs)
            )
            raise typer.Exit(130) from None
        except Exception as exc:
            if os.environ.get("PATCHBAY_DEBUG"):
                # The traceback, but redacted: exception messages can quote secrets.
                sys.stderr.write(redact_text("".join(traceback.format_exception(exc))))
                sys.stderr.flush()
                raise typer.Exit(1) from None
            _report(
                {"code": str(ErrorCode.UNKNOWN), "message": f"{type(exc).__name__}: {exc}", "details": {}},
                _wants_json(kwargs),
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _report(error: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json({"error": error})
    else:
        error_line(str(error["code"]), str(error["message"]))


def error_line(code: str, message: str) -> None:
    """Print ``error[<code>]: <message>`` on stderr, the message verbatim (no markup)."""
    err_console.print(Text.assemble(("error", "red"), f"[{code}]: {one_line(message)}"), highlight=False)
