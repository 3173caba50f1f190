"""``patchbay auth configure | login | status | logout``: OAuth 2.1 for remote connectors.

``configure`` stores a connector's OAuth settings (secrets become credentials it owns; ``VALUE``,
``@env:VAR`` or ``@credential:ID`` as for ``connector add --bearer``). ``login`` prints the
authorization URL, opens the browser unless ``--no-browser``, and waits on a loopback callback
(``http://127.0.0.1:<port>/callback``); machine grants need no browser. ``status`` and ``logout``
never print a token.
"""

from __future__ import annotations

import sys
import time
import webbrowser
from pathlib import Path
from typing import Any

import anyio
import typer
from rich.text import Text

from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    err_console,
    error_line,
    handle_errors,
    one_line,
    out_console,
    state,
)

app = typer.Typer(help="OAuth 2.1 for remote connectors: configure, log in, show, log out.", no_args_is_help=True)

SECRET_HELP = "VALUE, @env:VAR or @credential:ID (stored as a credential; never printed)."


def _service() -> Any:
    from patchbay.control.oauth import OAuthService

    return OAuthService(state.service())


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if seconds else "-"


def _print_status(view: dict[str, Any]) -> None:
    # Scope, reason and issuer come from servers: one_line strips control characters.
    reason = f" ({one_line(str(view['reason']))[:80]})" if view["reason"] else ""
    out_console.print(Text(f"{view['connector']}: {view['state']}{reason}"))
    if view["configured"]:
        out_console.print(Text(f"  grant: {view['grant']}  issuer: {one_line(str(view['issuer'] or '-'))}"))
        out_console.print(
            Text(
                f"  scope: {one_line(str(view['scope'] or '-'))[:200]}  expires: {_when(view['expires_at'])}  "
                f"refreshable: {'yes' if view['has_refresh_token'] else 'no'}"
            )
        )


@app.command()
@handle_errors
def configure(
    name: str,
    grant: str = typer.Option(
        "authorization_code",
        "--grant",
        help="authorization_code | client_credentials | private_key_jwt | cross_app_access",
    ),
    client_id: str | None = typer.Option(None, "--client-id", help="A pre-registered client id."),
    client_secret: str | None = typer.Option(None, "--client-secret", help=SECRET_HELP),
    token_endpoint_auth: str | None = typer.Option(
        None, "--token-endpoint-auth", help="client_secret_basic | client_secret_post | none"
    ),
    private_key: str | None = typer.Option(None, "--private-key", help="private_key_jwt PEM key: " + SECRET_HELP),
    signing_algorithm: str | None = typer.Option(None, "--signing-algorithm", help="e.g. RS256, ES256."),
    scope: str | None = typer.Option(None, "--scope", help="Scopes to ask for when the server does not say."),
    issuer: str | None = typer.Option(None, "--issuer", help="The authorization server's issuer (pinned)."),
    client_metadata_url: str | None = typer.Option(
        None, "--client-metadata-url", help="CIMD: an https URL used as client id where supported."
    ),
    idp_token_endpoint: str | None = typer.Option(None, "--idp-token-endpoint", help="cross_app_access."),
    idp_client_id: str | None = typer.Option(None, "--idp-client-id", help="cross_app_access."),
    idp_client_secret: str | None = typer.Option(None, "--idp-client-secret", help=SECRET_HELP),
    id_token: str | None = typer.Option(None, "--id-token", help="cross_app_access ID token: " + SECRET_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    """Store a remote connector's OAuth settings (replacing earlier ones)."""
    fields = {
        "client_id": client_id,
        "client_secret": client_secret,
        "token_endpoint_auth": token_endpoint_auth,
        "private_key": private_key,
        "signing_algorithm": signing_algorithm,
        "scope": scope,
        "issuer": issuer,
        "client_metadata_url": client_metadata_url,
        "idp_token_endpoint": idp_token_endpoint,
        "idp_client_id": idp_client_id,
        "idp_client_secret": idp_client_secret,
        "id_token": id_token,
    }
    service = _service()
    service.configure(name, grant=grant, **{k: v for k, v in fields.items() if v is not None})
    view = service.status(name)
    if as_json:
        emit_json(view)
        return
    out_console.print(Text(f"{name}: OAuth {grant} configured; next: patchbay auth login {name}"))


@app.command()
@handle_errors
def login(
    name: str,
    no_browser: bool = typer.Option(False, "--no-browser", help="Only print the authorization URL."),
    timeout: float = typer.Option(300.0, "--timeout", min=1, max=600, help="Seconds to wait for the browser."),
    project: Path = typer.Option(Path("."), "--project", help="Workspace the login's probe runs for."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Obtain a grant: authorize in the browser (or with the machine grant), then list tools."""
    service = _service()

    async def show(url: str) -> None:
        # The URL carries only public values (client id, PKCE challenge, the one-time state the
        # callback checks); it is the point of --no-browser, so it is written as it is -- the
        # redacting console would mask state=. stderr keeps stdout clean for --json.
        err_console.print(Text(f"Open this URL to authorize {name}:"))
        sys.stderr.write(url + "\n")
        sys.stderr.flush()
        if not no_browser:
            await anyio.to_thread.run_sync(webbrowser.open, url)
        err_console.print(Text(f"waiting up to {timeout:g}s for the browser to come back…"))

    workspace = Path(state.service().queries.project(project).path)
    result, view = anyio.run(lambda: service.login(name, authorizer=show, workspace=workspace, login_timeout=timeout))
    if as_json:
        emit_json({"probe": result.model_dump(mode="json", exclude={"tools", "resources"}), "status": view})
    elif result.state == "ready":
        out_console.print(Text(f"{name}: authorized; {result.tool_count} tools"))
        _print_status(view)
    else:
        error_line(str(result.code), f"{name}: login failed: {result.message or ''}")
    if result.state != "ready":
        raise typer.Exit(1)


@app.command()
@handle_errors
def status(name: str, as_json: bool = JSON_OPTION) -> None:
    """Show the connector's grant: state, issuer, scope, expiry (never a token)."""
    view = _service().status(name)
    if as_json:
        emit_json(view)
    else:
        _print_status(view)


@app.command()
@handle_errors
def logout(name: str, as_json: bool = JSON_OPTION) -> None:
    """Revoke the grant at the authorization server (best effort) and delete the tokens."""
    outcome = anyio.run(lambda: _service().logout(name))
    if as_json:
        emit_json(outcome)
        return
    if not outcome["deleted"]:
        out_console.print(Text(f"{name}: no stored grant"))
        return
    out_console.print(Text(f"{name}: tokens deleted (revocation: {outcome['revocation']})"))
