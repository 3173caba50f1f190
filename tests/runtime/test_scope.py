"""Capability scope: a runtime built with ``allowed_tools`` starts only the connectors the list
names, and registers only the listed tools; the credential references of the others are never
resolved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.adapters.credentials import CredentialStore
from patchbay.core.credentials import CredentialBinding
from patchbay.core.errors import FailureReason, ValidationError
from patchbay.core.models import ConnectorSettings, HttpTarget
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


def stdio(name: str, record: Path, **options: Any) -> RuntimeServer:
    return RuntimeServer(
        connector_id=f"id-{name}",
        name=name,
        target=fixture_server("lifecycle_server.py", "--record", str(record)),
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config=options,
    )


def launches(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if "launch" in json.loads(line)) if path.exists() else 0


class Listener:
    """A TCP listener on 127.0.0.1 that counts every connection made to it."""

    def __init__(self) -> None:
        self.contacts = 0

    async def handle(self, stream: Any) -> None:
        self.contacts += 1
        await stream.aclose()


async def test_only_the_allowed_connector_starts_and_only_listed_tools_register(tmp_path: Path) -> None:
    allowed_log, other_log, eager_log = tmp_path / "allowed.jsonl", tmp_path / "other.jsonl", tmp_path / "eager.jsonl"
    listener = Listener()
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as tcp, anyio.create_task_group() as group:
        group.start_soon(tcp.serve, listener.handle)
        port = tcp.extra(anyio.abc.SocketAttribute.local_port)
        remote = RuntimeServer(
            connector_id="id-remote",
            name="remote",
            target=HttpTarget(url=f"http://127.0.0.1:{port}/mcp"),
            # Reachable if it were started: the zero count below is the scope's doing, not the guard's.
            runtime_config={"lifecycle": "eager", "allow_private": True},
        )
        servers = (
            stdio("allowed", allowed_log),
            stdio("other", other_log),
            stdio("eager", eager_log, lifecycle="keep_alive"),
            remote,
        )
        config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)
        with anyio.fail_after(20):
            async with Runtime(
                config,
                settings=Settings(home=tmp_path / "home"),
                allowed_tools=["mcp__allowed__echo", "mcp.allowed.pid", "mcp.nosuch.tool", "local_tool"],
                local_tools={"local_tool": lambda: "local"},
            ) as runtime:
                assert set(runtime.server_states()) == {"allowed"}
                names = sorted(tool.name for tool in await runtime.list_tools())
                assert names == ["local_tool", "mcp.allowed.echo", "mcp.allowed.pid"]
                assert (await runtime.call("mcp__allowed__echo", {"text": "in scope"})).text == "in scope"
                for name in ("mcp.allowed.sleep", "mcp.other.echo", "mcp.remote.anything"):
                    with pytest.raises(ToolCallError) as info:
                        await runtime.call(name, {})
                    assert info.value.reason is FailureReason.UNKNOWN_TOOL
        group.cancel_scope.cancel()
    assert launches(allowed_log) == 1
    assert (launches(other_log), launches(eager_log), listener.contacts) == (0, 0, 0)


@pytest.mark.parametrize("allowed", [[], ["local_tool"], ["mcp.s", "mcp.s.", "mcp__s", "mcp__s__"]])
async def test_an_empty_or_local_only_scope_skips_discovery(tmp_path: Path, allowed: list[str]) -> None:
    log = tmp_path / "s.jsonl"
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=(stdio("s", log, lifecycle="eager"),))
    with anyio.fail_after(20):
        async with Runtime(
            config,
            settings=Settings(home=tmp_path / "home"),
            allowed_tools=allowed,
            local_tools={"local_tool": lambda: "local"},
        ) as runtime:
            assert runtime.server_states() == {}
            tools = [tool.name for tool in await runtime.list_tools()]
    assert tools == ["local_tool"]
    assert launches(log) == 0


def test_a_bare_string_scope_is_refused(tmp_path: Path) -> None:
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path))
    with pytest.raises(ValidationError):
        Runtime(config, settings=Settings(home=tmp_path / "home"), allowed_tools="mcp.a.b")  # type: ignore[arg-type]


class RecordingStore(CredentialStore):
    """The real credential store, remembering which connectors asked for their references."""

    def __init__(self, home: Path) -> None:
        super().__init__(home)
        self.asked: list[str] = []

    def resolve(self, bindings: Any, *, connector_id: str, connector: str | None = None) -> Any:
        self.asked.append(connector_id)
        return super().resolve(bindings, connector_id=connector_id, connector=connector)


async def test_out_of_scope_connectors_never_have_their_references_resolved(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "home")
    refs = {}
    for name in ("allowed", "other", "eager"):
        record = store.new_record(owner_id=f"id-{name}", kind="api_key", value=f"cnry-scope-{name}-value")
        store.apply(upserts=[record])
        refs[name] = record.credential_id
    servers = tuple(
        stdio(name, tmp_path / f"{name}.jsonl", **({"lifecycle": "keep_alive"} if name == "eager" else {})).model_copy(
            update={"bindings": (CredentialBinding(ref=refs[name], delivery="env", name="PB_SCOPED"),)}
        )
        for name in ("allowed", "other", "eager")
    )
    config = RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)
    with anyio.fail_after(20):
        async with Runtime(
            config, settings=Settings(home=tmp_path / "home"), allowed_tools=["mcp.allowed.echo"], credentials=store
        ) as runtime:
            assert (await runtime.call("mcp.allowed.echo", {"text": "scoped"})).text == "scoped"
    assert store.asked == ["id-allowed"]
    used = {c.credential_id: c.last_used_at for c in store.list_public()}
    assert used[refs["allowed"]] is not None and used[refs["other"]] is None and used[refs["eager"]] is None
