"""patchbay.runtime.connection.access, a connector's bindings and credentials.

Sections, in this order:

- Without a credential store: A connector's bindings resolved by :class:`ConnectorAccess` when the
  runtime has no credential store.
- Credential references at start: The runtime resolves credential references when it starts a
  connector (seed 003 §10.4, §11.1, addendum 2026-09-07): values reach the stdio environment or the
  HTTP headers, never the events, and a connector whose reference cannot be resolved stops alone
  with a clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.adapters.credentials import CredentialStore
from patchbay.core.credentials import CredentialBinding
from patchbay.core.errors import CredentialUnavailable, FailureReason
from patchbay.core.models import ConnectorSettings, HttpTarget, StdioTarget
from patchbay.runtime.connection.access import ConnectorAccess
from tests.support.credentials import credential_http_server, sha256, stdio_argv
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


# --- Without a credential store ---

REF = "cred_" + "0" * 32


def access(tmp_path: Path, *bindings: dict[str, Any]) -> ConnectorAccess:
    server = RuntimeServer(
        connector_id="con_plain",
        name="plain",
        target=fixture_server("lifecycle_server.py"),
        bindings=tuple(CredentialBinding(**binding) for binding in bindings),
    )
    return ConnectorAccess(server, Settings(home=tmp_path / "home"), None, None)


async def test_plain_values_are_delivered_without_a_credential_store(tmp_path: Path) -> None:
    plain = access(tmp_path, {"delivery": "env", "name": "REGION", "value": "eu-west"})
    assert await plain.resolve() == ({"REGION": "eu-west"}, {})
    assert plain.known == ()


async def test_without_a_store_the_error_names_the_first_credential_reference(tmp_path: Path) -> None:
    mixed = access(
        tmp_path,
        {"delivery": "env", "name": "REGION", "value": "eu-west"},
        {"delivery": "env", "name": "API_KEY", "ref": REF},
    )
    with pytest.raises(CredentialUnavailable) as caught:
        await mixed.resolve()
    assert caught.value.code == "auth_required"
    assert caught.value.details["ref"] == REF
    assert caught.value.details["binding"] == "env API_KEY"


# --- Credential references at start ---

MANAGED = "cnryRTmanaged-51c0ffee"
FROM_ENV = "cnryRTenv-9e8d7c6b"
BEARER = "cnryRTbearer-a1b2c3d4"
HEADER = "cnryRThdr-feedbeef"
ALLOW = ConnectorSettings(approval_mode="allow_all")


def stdio_server(
    connector_id: str, name: str, *bindings: CredentialBinding, leak: tuple[str, ...] = ()
) -> RuntimeServer:
    command, *args = stdio_argv(*leak)
    return RuntimeServer(
        connector_id=connector_id,
        name=name,
        target=StdioTarget(command=command, args=tuple(args)),
        settings=ALLOW,
        bindings=bindings,
    )


def stored(store: CredentialStore, owner: str, *, value: str | None = None, variable: str | None = None) -> str:
    kind = "env_reference" if variable else "api_key"
    record = store.new_record(owner_id=owner, kind=kind, value=value, variable=variable)
    store.apply(upserts=[record])
    return record.credential_id


async def test_stdio_children_get_managed_and_environment_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PB_RT_HOST_VAR", FROM_ENV)
    settings = Settings(home=tmp_path / "home")
    store = CredentialStore(settings.home)
    managed = stored(store, "con_a", value=MANAGED)
    env_ref = stored(store, "con_a", variable="PB_RT_HOST_VAR")
    server = stdio_server(
        "con_a",
        "local",
        CredentialBinding(ref=managed, delivery="env", name="PB_KEY"),
        CredentialBinding(ref=env_ref, delivery="env", name="PB_FROM_HOST"),
        leak=("PB_KEY",),
    )
    config = RuntimeConfig(project_id="p", workspace=str(tmp_path), servers=(server,))
    with anyio.fail_after(30):
        async with Runtime(config, settings=settings) as runtime:
            key = await runtime.call("mcp.local.digest", {"name": "PB_KEY"})
            host = await runtime.call("mcp.local.digest", {"name": "PB_FROM_HOST"})
            parent = await runtime.call("mcp.local.digest", {"name": "PB_RT_HOST_VAR"})
            revealed = await runtime.call("mcp.local.reveal", {"name": "PB_KEY"})
            with pytest.raises(ToolCallError) as failed:
                await runtime.call("mcp.local.fail", {"name": "PB_FROM_HOST"})
    assert (key.text, host.text) == (sha256(MANAGED), sha256(FROM_ENV))
    assert parent.text == "unset"  # the child gets the binding, not Patchbay's own variable
    assert revealed.text == f"PB_KEY is {MANAGED}"  # the caller gets the server's answer as it is
    assert FROM_ENV not in failed.value.message
    log = runtime.event_log_path.read_text()
    assert MANAGED not in log and FROM_ENV not in log and "[REDACTED]" in log


async def test_http_connectors_get_bearer_and_header_values(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    store = CredentialStore(settings.home)
    bearer, header = stored(store, "con_h", value=BEARER), stored(store, "con_h", value=HEADER)
    with credential_http_server(BEARER) as url:
        server = RuntimeServer(
            connector_id="con_h",
            name="remote",
            target=HttpTarget(url=url),
            settings=ALLOW,
            runtime_config={"allow_private": True},
            bindings=(
                CredentialBinding(ref=bearer, delivery="bearer", name="Authorization"),
                CredentialBinding(ref=header, delivery="header", name="X-Api-Key"),
            ),
        )
        config = RuntimeConfig(project_id="p", workspace=str(tmp_path), servers=(server,))
        with anyio.fail_after(30):
            async with Runtime(config, settings=settings) as runtime:
                auth = await runtime.call("mcp.remote.digest", {"name": "Authorization"})
                api_key = await runtime.call("mcp.remote.digest", {"name": "X-Api-Key"})
                await runtime.call("mcp.remote.reveal", {"name": "X-Api-Key"})
    assert (auth.text, api_key.text) == (sha256(BEARER), sha256(HEADER))
    log = runtime.event_log_path.read_text()
    assert BEARER not in log and HEADER not in log


async def test_an_unresolvable_reference_stops_only_its_connector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PB_RT_NEVER_SET", raising=False)
    settings = Settings(home=tmp_path / "home")
    store = CredentialStore(settings.home)
    good = stored(store, "con_good", value=MANAGED)
    unset = stored(store, "con_unset", variable="PB_RT_NEVER_SET")
    foreign = stored(store, "con_good", value="cnryRTforeign-1234")
    servers = (
        stdio_server("con_good", "good", CredentialBinding(ref=good, delivery="env", name="PB_KEY")),
        stdio_server("con_unset", "unset", CredentialBinding(ref=unset, delivery="env", name="PB_KEY")),
        stdio_server("con_gone", "gone", CredentialBinding(ref="cred_" + "9" * 32, delivery="env", name="PB_KEY")),
        stdio_server("con_thief", "thief", CredentialBinding(ref=foreign, delivery="env", name="PB_KEY")),
    )
    config = RuntimeConfig(project_id="p", workspace=str(tmp_path), servers=servers)
    failures = {}
    with anyio.fail_after(30):
        async with Runtime(config, settings=settings) as runtime:
            for name in ("unset", "gone", "thief"):
                with pytest.raises(ToolCallError) as info:
                    await runtime.call(f"mcp.{name}.digest", {"name": "PB_KEY"})
                failures[name] = info.value
            assert (await runtime.call("mcp.good.digest", {"name": "PB_KEY"})).text == sha256(MANAGED)
            states = runtime.server_states()
    assert states == {"good": "connected", "unset": "failed", "gone": "failed", "thief": "failed"}
    for failure in failures.values():
        assert failure.reason is FailureReason.MCP_SERVER_UNAVAILABLE
        assert failure.details["code"] == "auth_required"
    assert "PB_RT_NEVER_SET" in failures["unset"].message
    assert "does not exist" in failures["gone"].message
    assert "not shared" in failures["thief"].message
    assert "cnryRTforeign" not in json.dumps(failures["thief"].to_dict())
