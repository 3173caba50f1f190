"""``patchbay gateway token [--rotate]``: the gateway token of this data home (the bearer token
that opens ``/mcp`` on ``patchbay serve`` and nothing else; :mod:`patchbay.control.gateway_token`).

Without ``--rotate`` it says whether there is one and when it was made, never the token (it is
kept as a digest only: it was shown once, when it was made). ``--rotate`` makes a new one, in
place of the old one, which stops working at once (a running ``serve`` included), and prints it
this once with the header a host sends. ``--from-stdin`` stores the token read from stdin
instead (one another instance of the same deployment made: every instance behind one balancer
then takes the one token a host holds); it is not printed. ``--json``: ``{"exists",
"created_at"}`` (Unix milliseconds), with ``--rotate`` also ``token``, ``header`` and
``replaced``, with ``--from-stdin`` also ``replaced``.

Errors: ``validation_error`` for ``--rotate`` with ``--from-stdin`` and (field ``token``) for
stdin that holds no gateway token; ``canonical_state_unavailable`` for a credential store that
cannot be used.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

import typer

from patchbay.core.errors import ValidationError
from patchbay.interfaces.cli._context import JSON_OPTION, emit_json, handle_errors, out_console, state

__all__ = ["token"]


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _write_raw(text: str) -> None:
    """Write ``text`` to stdout as it is: the redacting console would mask the token a user needs."""
    out_console.file.flush()
    sys.stdout.write(text)
    sys.stdout.flush()


@handle_errors
def token(
    rotate: bool = typer.Option(
        False, "--rotate", help="Make a new gateway token and show it once; the old one stops working at once."
    ),
    from_stdin: bool = typer.Option(
        False,
        "--from-stdin",
        help="Store the gateway token read from stdin (another instance's), in place of this data home's.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show whether the gateway token (for /mcp on `patchbay serve`) exists, or make a new one with --rotate."""
    from patchbay.adapters.credentials import CredentialStore
    from patchbay.control.gateway_token import GatewayTokens

    if rotate and from_stdin:
        raise ValidationError("--rotate makes a token, --from-stdin stores a given one: pass one of them")
    tokens = GatewayTokens(CredentialStore(state.settings.home))
    if from_stdin:
        adopted = tokens.adopt(sys.stdin.read(4096))
        if as_json:
            emit_json({"exists": True, "created_at": adopted.created_at, "replaced": adopted.replaced})
        else:
            out_console.print(
                "The gateway token read from stdin is now this data home's"
                + ("; the one before it stops working now." if adopted.replaced else "."),
                highlight=False,
            )
        return
    if not rotate:
        created = tokens.status()
        if as_json:
            emit_json({"exists": created is not None, "created_at": created})
        elif created is None:
            out_console.print(
                "There is no gateway token yet. `patchbay gateway token --rotate` (or `patchbay serve "
                "--allow-remote`) makes one and shows it once.",
                highlight=False,
            )
        else:
            out_console.print(
                f"The gateway token exists (made {_utc(created)}); it was shown once, when it was made. "
                "`patchbay gateway token --rotate` makes a new one (the old one stops working at once).",
                highlight=False,
            )
        return
    issued = tokens.rotate()
    header = f"Authorization: Bearer {issued.token}"
    if as_json:
        document = {
            "exists": True,
            "created_at": issued.created_at,
            "token": issued.token,
            "header": header,
            "replaced": issued.replaced,
        }
        # the one place the token is shown: written past the redacting output on purpose
        _write_raw(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return
    replaced = "; the one before it stops working now" if issued.replaced else ""
    _write_raw(
        f"Gateway token: {issued.token}\nHeader: {header}\n"
        f"Shown this once (only its digest is kept){replaced}. It opens /mcp on `patchbay serve` and nothing else.\n"
    )
