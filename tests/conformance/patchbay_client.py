"""Patchbay as the client under test of the official MCP client conformance suite.

The suite (``@modelcontextprotocol/conformance``, run by ``tests/conformance/run_suite.py``) starts
one scenario server per scenario and runs::

    <venv python> tests/conformance/patchbay_client.py <server-url>

with ``MCP_CONFORMANCE_SCENARIO=<scenario name>`` and, for scenarios that hand out credentials,
``MCP_CONFORMANCE_CONTEXT=<JSON {"name": scenario, ...}>``. The checks are made by the scenario
server from what it sees on the wire; this process only has to behave like a real client and exit
0 within the suite's client timeout (run_suite.py sets it).

Everything goes through Patchbay's own library path, never the bare SDK: a throw-away data home
(``Settings(home=...)``), the URL registered as a Streamable HTTP connector through
:class:`patchbay.control.connectors.ConnectorService` with ``allow_private`` set explicitly (the
scenario servers listen on 127.0.0.1, which the egress guard refuses otherwise; seed 003 §14.2),
the workspace's runtime config from ``service.queries.runtime_config(workspace)`` as ``patchbay call``
builds it, and :class:`patchbay.runtime.Runtime` with an approver that allows every call.

What each scenario does (:data:`SCENARIO_CALLS`): ``initialize`` connects and lists tools;
``tools_call`` calls ``add_numbers {a, b}``; ``elicitation-sep1034-client-defaults`` calls
``test_client_elicitation_defaults`` and answers the server's ``elicitation/create`` with the
schema defaults (needs ``Runtime(..., elicitation_handler=...)``); ``sse-retry`` calls
``test_reconnection`` (the server drops the SSE stream; the SDK must reconnect with
``Last-Event-ID`` after the ``retry`` delay); ``auth/*`` connect, list and call ``test-tool`` after
:func:`configure_auth` set the connector's authorization up.

Output: the last stdout line is ``patchbay-conformance: ok <scenario>`` on success (the runner reads
it: in suite mode the harness ignores exit codes); on failure, one
``patchbay-conformance: FAILED <scenario>: ...`` line on stderr and exit status 1 (2: bad
invocation, 3: scenario not supported yet).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import anyio
import httpx2
import mcp.types

from patchbay.adapters.oauth.provider import Authorizer
from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.control.oauth import OAuthService
from patchbay.core.errors import PatchbayError, ToolCallError
from patchbay.core.settings import Settings
from patchbay.runtime import ApprovalAnswer, ApprovalRequest, Runtime

CONNECTOR = "conformance"
"""The name the scenario server is registered under (tools are ``mcp.conformance.<tool>``)."""

MARKER = "patchbay-conformance:"
"""Prefix of the driver's own verdict line (stdout on success, stderr on failure)."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNSUPPORTED = 0, 1, 2, 3


class DriverError(Exception):
    """The client under test did not do what the scenario expects (exit status 1)."""


class ScenarioNotSupported(DriverError):
    """The driver cannot run this scenario yet (exit status 3)."""


@dataclass(frozen=True)
class ScenarioCall:
    """What a scenario expects the client to do after connecting.

    Attributes:
        tool: the server's tool to call (None: connect and list tools only).
        arguments: the call's arguments.
        elicitation: the scenario sends ``elicitation/create``; the runtime gets
            :func:`accept_with_defaults` as its elicitation handler.
    """

    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    elicitation: bool = False


SCENARIO_CALLS: dict[str, ScenarioCall] = {
    "initialize": ScenarioCall(),
    "tools_call": ScenarioCall("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ScenarioCall("test_client_elicitation_defaults", elicitation=True),
    "sse-retry": ScenarioCall("test_reconnection"),
}
"""The non-auth client scenarios of conformance 0.1.16 (notes/mcp-sdk-2.3-client.md §2.2)."""

AUTH_CALL = ScenarioCall("test-tool")
"""Every ``auth/*`` scenario server exposes one tool, ``test-tool`` (no arguments)."""


def scenario_call(scenario: str) -> ScenarioCall:
    """The :class:`ScenarioCall` of ``scenario``.

    Raises:
        ScenarioNotSupported: a scenario this driver does not know.
    """
    if scenario in SCENARIO_CALLS:
        return SCENARIO_CALLS[scenario]
    if scenario.startswith("auth/"):
        return AUTH_CALL
    raise ScenarioNotSupported(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIO_CALLS)}, auth/*)")


# -- auth -------------------------------------------------------------------------------------
# OAuth settings and credentials for the connector, per scenario, through the control plane; the
# runtime then runs the flow itself (seed 003 §11.2).


CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client-ID metadata document URL ``auth/basic-cimd`` expects as the client id."""


def configure_auth(
    service: ConnectorService, connector_name: str, scenario: str, context: Mapping[str, Any]
) -> Authorizer | None:
    """Set up the connector's authorization for ``scenario``; return the runtime's authorizer.

    Uses the control plane's :class:`~patchbay.control.oauth.OAuthService` exactly as
    ``patchbay auth configure`` does: the context's secrets become credentials the connector
    owns; the grant itself is obtained by the runtime when it connects (machine grants by
    themselves, authorization code through :func:`headless_browser` and Patchbay's loopback
    callback).

    Args:
        service: the control plane of this run's throw-away data home.
        connector_name: the connector registered for the scenario server.
        scenario: ``MCP_CONFORMANCE_SCENARIO``.
        context: ``MCP_CONFORMANCE_CONTEXT`` as a dict (``{}`` when unset), e.g. ``client_id`` and
            ``client_secret`` for ``auth/pre-registration`` and ``auth/client-credentials-basic``.

    Returns:
        None for scenarios without authorization and for machine-to-machine grants (they need no
        browser); :func:`headless_browser` for authorization-code scenarios.
    """
    if not scenario.startswith("auth/"):
        return None
    oauth = OAuthService(service)
    if scenario == "auth/client-credentials-basic":
        oauth.configure(
            connector_name,
            grant="client_credentials",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
        )
        return None
    if scenario == "auth/client-credentials-jwt":
        oauth.configure(
            connector_name,
            grant="private_key_jwt",
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        return None
    if scenario == "auth/cross-app-access-complete-flow":
        oauth.configure(
            connector_name,
            grant="cross_app_access",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
            id_token=context["idp_id_token"],
        )
        return None
    if scenario == "auth/pre-registration":
        oauth.configure(connector_name, client_id=context["client_id"], client_secret=context["client_secret"])
    elif scenario == "auth/basic-cimd":
        oauth.configure(connector_name, client_metadata_url=CIMD_URL)
    else:
        oauth.configure(connector_name)
    return headless_browser


async def headless_browser(authorization_url: str) -> None:
    """Play the user's browser for an authorization-code flow, headlessly.

    GETs ``authorization_url`` without following redirects (the suite's authorization endpoint
    approves at once with a 302 to ``redirect_uri?code=...&state=...``), then GETs that
    ``Location``: Patchbay's own loopback callback server, which completes the flow.

    Raises:
        DriverError: the authorization endpoint did not answer with a redirect that has a Location.
    """
    async with httpx2.AsyncClient(follow_redirects=False, trust_env=False, timeout=10.0) as http:
        response = await http.get(authorization_url)
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise DriverError(
                f"the authorization endpoint answered {response.status_code} without a redirect to the callback"
            )
        await http.get(urljoin(authorization_url, location))


# -- the client ---------------------------------------------------------------------------------


async def allow_every_call(request: ApprovalRequest) -> ApprovalAnswer:
    """The approver: the suite's tools are the user's own test tools."""
    return "allow_once"


async def accept_with_defaults(params: mcp.types.ElicitRequestParams) -> mcp.types.ElicitResult:
    """Accept a form elicitation with every default its requested schema declares (SEP-1034).

    URL-mode elicitations are declined: no scenario of this suite sends one.
    """
    if not isinstance(params, mcp.types.ElicitRequestFormParams):
        return mcp.types.ElicitResult(action="decline")
    properties = params.requested_schema.get("properties") or {}
    content = {
        name: spec["default"] for name, spec in properties.items() if isinstance(spec, Mapping) and "default" in spec
    }
    return mcp.types.ElicitResult(action="accept", content=content)


def register(service: ConnectorService, url: str) -> None:
    """Register ``url`` as the Streamable HTTP connector :data:`CONNECTOR`, loopback allowed."""
    service.add(CONNECTOR, service.remote_target(url, "streamable_http"), runtime_options={"allow_private": True})


async def run_scenario(scenario: str, url: str, context: Mapping[str, Any], home: Path) -> str:
    """Run one scenario against the scenario server at ``url``, with data home ``home``.

    Returns:
        A one-line summary of what happened (for the success line).

    Raises:
        DriverError / ScenarioNotSupported: the scenario did not go as expected.
        PatchbayError: from the control plane or the runtime (e.g. ``ToolCallError``).
    """
    call = scenario_call(scenario)
    settings = Settings(home=home, database_url=None)
    workspace = home / "workspace"
    workspace.mkdir()
    service = ConnectorService(open_store(settings), settings)
    register(service, url)
    authorizer = configure_auth(service, CONNECTOR, scenario, context)
    config = service.queries.runtime_config(workspace)
    hooks: dict[str, Any] = {}
    if call.elicitation:
        hooks["elicitation_handler"] = accept_with_defaults
    if authorizer is not None:
        hooks["authorizer"] = authorizer
    async with Runtime(config, settings=settings, approver=allow_every_call, **hooks) as runtime:
        tools = [tool.tool for tool in await runtime.list_tools() if tool.connector == CONNECTOR]
        state = runtime.server_states().get(CONNECTOR)
        if state != "connected":
            code, message = runtime.server_failure(CONNECTOR) or ("?", "no failure recorded")
            raise DriverError(f"Patchbay could not connect to {url} (connector state {state!r}, {code}: {message})")
        if call.tool is None:
            return f"connected, {len(tools)} tools"
        if call.tool not in tools:
            raise DriverError(f"the server lists no tool {call.tool!r} (tools: {', '.join(tools) or 'none'})")
        result = await runtime.call(f"mcp.{CONNECTOR}.{call.tool}", call.arguments)
        return f"called {call.tool}: {result.text[:200]!r}"


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def describe(exc: BaseException) -> str:
    """One line per underlying error: ``ToolCallError`` reason and code, leaves of exception groups."""
    parts = []
    for leaf in _leaves(exc):
        if isinstance(leaf, ToolCallError):
            code = leaf.details.get("code")
            parts.append(f"ToolCallError[{leaf.reason}{f'/{code}' if code else ''}]: {leaf.message}")
        elif isinstance(leaf, PatchbayError):
            parts.append(f"{type(leaf).__name__}[{leaf.code}]: {leaf.message}")
        else:
            parts.append(f"{type(leaf).__name__}: {leaf}")
    return " | ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``patchbay_client.py <server-url>`` (the URL is the last argument)."""
    args = sys.argv[1:] if argv is None else argv
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not args or not scenario:
        print(f"{MARKER} usage: MCP_CONFORMANCE_SCENARIO=<name> {sys.argv[0]} <server-url>", file=sys.stderr)
        return EXIT_USAGE
    url = args[-1]
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except json.JSONDecodeError as exc:
        print(f"{MARKER} FAILED {scenario}: MCP_CONFORMANCE_CONTEXT is not JSON ({exc.msg})", file=sys.stderr)
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="patchbay-conformance-") as home:
        try:
            summary = anyio.run(run_scenario, scenario, url, context, Path(home))
        except ScenarioNotSupported as exc:
            print(f"{MARKER} FAILED {scenario}: not supported: {exc}", file=sys.stderr)
            return EXIT_UNSUPPORTED
        except Exception as exc:
            print(f"{MARKER} FAILED {scenario}: {describe(exc)}", file=sys.stderr)
            return EXIT_FAILED
    print(f"{MARKER} ok {scenario}: {summary}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
