"""What every CLI command shares: settings, the store, output in text or JSON, and error handling.

User errors print one line ``error[<code>]: <message>`` on stderr (or ``{"error": {...}}`` on
stdout with ``--json``) and exit non-zero; never a traceback (set ``PATCHBAY_DEBUG=1`` to see one).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from patchbay.core.errors import PatchbayError
from patchbay.core.settings import Settings

__all__ = ["CliState", "JSON_OPTION", "emit_json", "err_console", "error_line", "handle_errors", "one_line", "out_console", "safe_text", "state"]

# Markup is off: names, commands, URLs and server text are printed literally, never parsed as
# Rich tags. Piped output is not cut to 80 columns, so tables stay whole for scripts.
out_console = Console(markup=False, highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err_console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")
_MAX_ERROR_CHARS = 500


def safe_text(text: str) -> str:
    """Server-supplied text with terminal control characters (escape sequences) made visible."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def one_line(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    """Collapse whitespace (newlines included) and cut at ``limit`` characters with an ellipsis."""
    line = " ".join(safe_text(text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"

JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class CliState:
    home: Path | None = None
    _service: Any = None

    @property
    def settings(self) -> Settings:
        return Settings(home=self.home) if self.home else Settings()

    def service(self):  # -> ConnectorService; imported lazily so `--help` stays fast
        if self._service is None:
            from patchbay.adapters.store import open_store
            from patchbay.control.connectors import ConnectorService

            settings = self.settings
            settings.home.mkdir(parents=True, exist_ok=True)
            self._service = ConnectorService(open_store(settings), settings)
        return self._service


state = CliState()


def emit_json(value: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")
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
            _report({"code": "cancelled", "message": "interrupted", "details": {}}, _wants_json(kwargs))
            raise typer.Exit(130) from None
        except Exception as exc:
            if os.environ.get("PATCHBAY_DEBUG"):
                raise
            _report({"code": "unknown", "message": f"{type(exc).__name__}: {exc}", "details": {}}, _wants_json(kwargs))
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
