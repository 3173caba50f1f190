"""An unexpected exception inside one connection fails that connector only: the other connectors of
the runtime, the other sessions of a SessionHost and the runtime itself keep answering (real stdio
fixture servers; the faults are hooks made to raise, since real servers cannot produce them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import patchbay.adapters.transports.egress as egress_module
from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ConfigError, FailureReason
from patchbay.core.models import ConnectorSettings, HttpTarget, Project
from patchbay.runtime.connection.access import ConnectorAccess
from patchbay.runtime.connection.catalog_refresh import CatalogRefresh
from patchbay.runtime.connection.exchange import RequestExchange
from patchbay.runtime.events.log import EventLog, read_events
from patchbay.runtime.sessions import SessionHost
from tests.support.egress import audit_lines, http_fixture
from tests.support.paths import FIXTURES
from tests.support.servers import fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

LIFECYCLE = str(FIXTURES / "lifecycle_server.py")


def stdio(name: str) -> RuntimeServer:
    return RuntimeServer(
        connector_id=f"con_{name}",
        name=name,
        target=fixture_server("lifecycle_server.py"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="prj_faults", workspace=str(tmp_path), servers=servers)


def inject(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Make one hook raise for the connector named ``bad`` only."""
    if kind == "audit":
        original_audit = ConnectorAccess.audit

        def audit(self: ConnectorAccess, note: Any, since: int) -> None:
            if self._server.name == "bad":
                raise ValueError("an egress audit origin is scheme://host:port and nothing else")
            original_audit(self, note, since)

        monkeypatch.setattr(ConnectorAccess, "audit", audit)
    elif kind == "catalog":
        original_catalog = Runtime._catalog_changed

        def catalog_changed(self: Runtime, name: str, tools: Any) -> None:
            if name == "bad" and tools is not None:
                raise RuntimeError("the router refused the catalog")
            original_catalog(self, name, tools)

        monkeypatch.setattr(Runtime, "_catalog_changed", catalog_changed)
    elif kind == "watcher":
        original_run = CatalogRefresh.run

        async def run(self: CatalogRefresh, client: Any, generation: int) -> None:
            if self.name == "bad":
                raise KeyError("a watcher bug")
            await original_run(self, client, generation)

        monkeypatch.setattr(CatalogRefresh, "run", run)
    elif kind == "call":
        original_check = RequestExchange._check_output

        async def check(self: RequestExchange, tool: str, result: Any) -> None:
            if self.name == "bad":
                raise KeyError("an output check bug")
            await original_check(self, tool, result)

        monkeypatch.setattr(RequestExchange, "_check_output", check)
    elif kind == "emit":
        original_append = EventLog.append

        def append(self: EventLog, type: str, payload: Any = None, **kwargs: Any) -> int:
            if type.startswith("mcp.server.") and (payload or {}).get("server") == "bad":
                raise OSError("the event log is on a full disk")
            return original_append(self, type, payload, **kwargs)

        monkeypatch.setattr(EventLog, "append", append)
    else:  # pragma: no cover - a typo in the parametrisation
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["audit", "catalog", "watcher", "call", "emit"])
async def test_a_fault_inside_one_connection_fails_that_connector_and_the_others_keep_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    inject(monkeypatch, kind)
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("good"), stdio("bad")), settings=settings) as runtime:
            assert (await runtime.call("mcp.good.echo", {"text": "before"})).text == "before"
            for _ in range(2):  # the second call meets whatever the first one left behind
                try:
                    result = await runtime.call("mcp.bad.echo", {"text": "x"})
                except ToolCallError as exc:
                    assert exc.reason in {
                        FailureReason.MCP_SERVER_UNAVAILABLE,
                        FailureReason.MCP_SERVER_RESTARTED,
                        FailureReason.MCP_SERVER_UNSTABLE,
                    }, exc
                    assert exc.details.get("code"), exc.details
                else:
                    assert kind in ("watcher", "emit"), "only these faults leave calls possible"
                    assert result.text == "x"
            assert (await runtime.call("mcp.good.echo", {"text": "after"})).text == "after"
            assert runtime.server_states()["good"] == "connected"
        # leaving the runtime raised nothing: the fault never reached its task group


async def test_a_fault_during_a_call_answers_mcp_server_unavailable_with_code_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "call")
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("bad")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.bad.echo", {"text": "x"})
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert info.value.details["code"] == "unknown"
    events = [event["type"] for event in read_events(runtime.event_log_path)]
    assert events[-3:] == ["mcp.call.failed", "tool.failed", "mcp.server.shutdown"]


async def test_a_fault_in_the_watcher_is_a_crash_that_the_restart_policy_handles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "watcher")
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("bad")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.bad.echo", {"text": "x"})

            def types() -> list[str]:
                return [event["type"] for event in read_events(runtime.event_log_path)]

            await wait_until(lambda: "mcp.server.restarting" in types())
    assert info.value.reason is FailureReason.MCP_SERVER_RESTARTED
    (crashed,) = [event for event in read_events(runtime.event_log_path) if event["type"] == "mcp.server.crashed"][:1]
    assert crashed["payload"]["willRestart"] is True


async def test_a_connect_fault_is_logged_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original_audit = ConnectorAccess.audit

    def audit(self: ConnectorAccess, note: Any, since: int) -> None:
        if note == "mcp_connect":
            raise ValueError("origin Authorization: Bearer sk-live-0123456789abcdefghij refused")
        original_audit(self, note, since)

    monkeypatch.setattr(ConnectorAccess, "audit", audit)
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("bad")), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.bad.echo", {"text": "x"})
            assert runtime.server_states()["bad"] == "failed"
    assert info.value.details["code"] == "unknown"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "internal error" in logged and "ValueError" in logged
    assert "sk-live-0123456789abcdefghij" not in logged


def remote(url: str) -> RuntimeServer:
    return RuntimeServer(
        connector_id="con_remote",
        name="remote",
        target=HttpTarget(url=url),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config={"allow_private": True},
    )


def docker_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve the Docker Compose service name ``mcp_server`` to 127.0.0.1, and no other name."""

    async def resolver(host: str, port: int) -> list[str]:
        if host == "mcp_server":
            return ["127.0.0.1"]
        raise OSError(f"{host} does not resolve in this test")

    monkeypatch.setattr(egress_module, "system_resolver", resolver)


async def test_an_underscore_host_connects_and_is_audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docker_names(monkeypatch)
    settings = Settings(home=tmp_path / "home")
    with http_fixture(tmp_path / "requests.jsonl") as port, anyio.fail_after(60):
        async with Runtime(config(tmp_path, remote(f"http://mcp_server:{port}/mcp")), settings=settings) as runtime:
            assert (await runtime.call("mcp.remote.echo", {"text": "via a service name"})).text == "via a service name"
    assert {line["origin"] for line in audit_lines(settings.home)} == {f"http://mcp_server:{port}"}


@pytest.mark.parametrize("url", ["http://[fe80::1%25eth0]:8080/mcp", "http://%31%32%37.0.0.1:18001/mcp"])
async def test_a_stored_url_with_a_zone_id_or_escaped_host_fails_its_connector_with_a_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    docker_names(monkeypatch)
    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(60):
        async with Runtime(config(tmp_path, stdio("good"), remote(url)), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as info:
                await runtime.call("mcp.remote.echo", {"text": "x"})
            assert (await runtime.call("mcp.good.echo", {"text": "still"})).text == "still"
    assert info.value.reason is FailureReason.MCP_SERVER_UNAVAILABLE
    assert info.value.details["code"] == "network_blocked"


# -- one session's fault never reaches another session of the host --------------------------


def add_server(service: ConnectorService, name: str, workspace: Path) -> None:
    service.add(name, service.stdio_target(sys.executable, [LIFECYCLE], cwd=None, workspace=workspace))
    service.update_settings(name, approval_mode="allow_all")


async def test_a_connection_fault_in_one_session_leaves_other_sessions_of_the_host_serving(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, "audit")
    first, second = tmp_path / "ws-a", tmp_path / "ws-b"
    first.mkdir()
    second.mkdir()
    add_server(service, "good", first)
    add_server(service, "bad", first)

    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    with anyio.fail_after(90):
        async with SessionHost(service.settings, resolve=resolve) as host:
            a = await host.open(first.resolve())
            b = await host.open(second.resolve())
            assert (await host.call(b, "mcp.good.echo", {"text": "b1"})).text == "b1"
            with pytest.raises(ToolCallError) as info:
                await host.call(a, "mcp.bad.echo", {"text": "x"})
            assert info.value.details["code"] == "unknown"
            assert (await host.call(b, "mcp.good.echo", {"text": "b2"})).text == "b2"
            assert (await host.call(a, "mcp.good.echo", {"text": "a1"})).text == "a1"
            assert {info.session_id for info in host.sessions()} == {a, b}


async def test_a_hosted_session_reaches_an_underscore_host_and_the_other_forms_are_refused_at_add(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker_names(monkeypatch)
    workspace = tmp_path / "ws-docker"
    workspace.mkdir()
    for url in ("http://[fe80::1%25eth0]:8080/mcp", "http://%31%32%37.0.0.1:18001/mcp"):
        with pytest.raises(ConfigError) as refused:
            service.add("odd", service.remote_target(url))
        assert refused.value.code == "invalid_config"

    def resolve(path: Path) -> Project:
        project = service.queries.project(path)
        service.projector.project(project)
        return project

    with http_fixture(tmp_path / "requests.jsonl") as port:
        service.add(
            "docker",
            service.remote_target(f"http://mcp_server:{port}/mcp"),
            runtime_options={"allow_private": True},
        )
        service.update_settings("docker", approval_mode="allow_all")
        with anyio.fail_after(60):
            async with SessionHost(service.settings, resolve=resolve) as host:
                session = await host.open(workspace.resolve())
                assert (await host.call(session, "mcp.docker.echo", {"text": "hi"})).text == "hi"
