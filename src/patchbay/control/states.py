"""A stored connector's three separate states and the one status shown for them.

``config_state`` (could the stored configuration run?), ``auth_state`` (would its credentials
resolve, is its OAuth grant there?) and ``runtime_state`` (from the last probe and the tool
cache) are read here from canonical state, without opening a connection, for one connector or a
whole list at once; :func:`patchbay.control.status.display_status` turns them into the badge.
The REST API's connector views and the CLI's ``connector list`` table both read them here, so
they always agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from patchbay.adapters.credentials import StoredCredential
from patchbay.control.connectors import ConnectorService
from patchbay.control.decisions import runtime_state
from patchbay.control.options import checked_options
from patchbay.control.status import ConnectorStatus, display_status
from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, ProbeOutcome, RuntimeState
from patchbay.core.oauth import oauth_from_config

__all__ = [
    "AuthState",
    "ConfigState",
    "ConnectorStates",
    "auth_state",
    "binding_views",
    "config_problem",
    "connector_auth",
    "connector_states",
    "list_states",
    "oauth_state",
]

ConfigState = Literal["valid", "invalid"]
AuthState = Literal["not-required", "configured", "needs-auth"]


def config_problem(connector: Connector) -> ConfigError | None:
    """Why a stored connector could not run as it is (malformed bindings, options or OAuth
    settings), if it couldn't."""
    try:
        _ = connector.bindings
        checked_options(connector.runtime_config, connector.target)
        oauth_from_config(connector.runtime_config)
    except ConfigError as exc:
        return exc
    return None


def oauth_state(service: ConnectorService, connector: Connector) -> str | None:
    """The OAuth grant's state (``OAuthService.status``: never a token), or None without OAuth."""
    try:
        if oauth_from_config(connector.runtime_config) is None:
            return None
    except ConfigError:  # malformed OAuth settings: reported as config_state "invalid"
        return "needs_auth"
    # the OAuth service loads the MCP SDK's auth client: only for a connector that has OAuth
    # (the CLI's ``connector list`` runs this)
    from patchbay.control.oauth import OAuthService

    state: str = OAuthService(service).status(connector.name)["state"]
    return state


def binding_views(
    service: ConnectorService, connector: Connector, records: Mapping[str, StoredCredential] | None = None
) -> list[dict[str, Any]]:
    """``CredentialService.binding_views`` of the connector (``records``: the credential store's
    records when already read), ``[]`` when its stored bindings are malformed (that is reported
    as ``config_state`` ``invalid``)."""
    try:
        return service.credentials.binding_views(connector, records=records)
    except ConfigError:
        return []


def auth_state(bindings: list[dict[str, Any]], oauth: str | None = None) -> AuthState:
    """``needs-auth`` when a binding would not resolve now or an OAuth grant is missing or void;
    ``configured`` when there are bindings or a grant; else ``not-required``.

    Args:
        bindings: ``CredentialService.binding_views`` of the connector.
        oauth: ``OAuthService.status(...)["state"]``, None when the connector has no OAuth.
    """
    if any(b["problem"] for b in bindings) or oauth in ("not_authorized", "needs_auth"):
        return "needs-auth"
    return "configured" if bindings or oauth in ("authorized", "expired") else "not-required"


def connector_auth(
    service: ConnectorService, connector: Connector, bindings: list[dict[str, Any]] | None = None
) -> AuthState:
    """The connector's :func:`auth_state` from its binding views (read when not given) and its
    OAuth grant."""
    if bindings is None:
        bindings = binding_views(service, connector)
    return auth_state(bindings, oauth_state(service, connector))


def list_states(
    service: ConnectorService, connectors: Sequence[Connector]
) -> list[tuple[AuthState, int | None, ProbeOutcome | None]]:
    """What the list entries of ``connectors`` show besides the connectors themselves, in their
    order: ``(auth state, fresh tool count or None, last probe or None)``, reading the tool counts,
    the last probes and the credential records of all of them at once (no cached catalog is
    parsed)."""
    counts = service.queries.fresh_tool_counts(list(connectors))
    outcomes = service.queries.last_probes()
    records: dict[str, StoredCredential] | None = None

    def bindings_of(connector: Connector) -> list[dict[str, Any]]:
        nonlocal records  # read once, when the first connector with bindings needs them
        try:
            if records is None and connector.bindings:
                records = service.credentials.store.load()
        except ConfigError:  # malformed stored bindings: reported as config_state "invalid"
            return []
        return binding_views(service, connector, records)

    return [
        (
            connector_auth(service, connector, bindings_of(connector)),
            counts.get(connector.connector_id),
            outcomes.get(connector.connector_id),
        )
        for connector in connectors
    ]


@dataclass(frozen=True, slots=True)
class ConnectorStates:
    """One connector's states as a list row shows them.

    ``tool_count`` is the size of its fresh cached catalog (None without one); ``outcome`` its
    last probe (None if never probed); ``problem`` why its configuration could not run (None
    when ``config_state`` is ``valid``)."""

    config_state: ConfigState
    auth_state: AuthState
    runtime_state: RuntimeState
    status: ConnectorStatus
    tool_count: int | None
    outcome: ProbeOutcome | None
    problem: ConfigError | None


def connector_states(service: ConnectorService, connectors: Sequence[Connector]) -> list[ConnectorStates]:
    """The :class:`ConnectorStates` of ``connectors``, in their order (read as :func:`list_states`
    reads them: all at once, no connection opened)."""
    states: list[ConnectorStates] = []
    for connector, (auth, count, outcome) in zip(connectors, list_states(service, connectors), strict=True):
        problem = config_problem(connector)
        config: ConfigState = "invalid" if problem else "valid"
        runtime = runtime_state(connector, fresh_catalog=count is not None, outcome=outcome)
        states.append(
            ConnectorStates(
                config_state=config,
                auth_state=auth,
                runtime_state=runtime,
                status=display_status(config, auth, runtime),
                tool_count=count,
                outcome=outcome,
                problem=problem,
            )
        )
    return states
