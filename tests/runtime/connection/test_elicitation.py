"""Which call a server's elicitation is for, and who answers it: a call's relay or the runtime's
handler, against real servers (tests/fixtures/eliciting_server.py in both protocol eras, and
server-everything)."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import ConnectorSettings, StdioTarget
from patchbay.runtime.connection.elicitation import ElicitationHandler, relaying_elicitation
from patchbay.runtime.connection.exchange import relaying_progress
from tests.support.servers import everything_stdio_command, fixture_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def config(tmp_path: Path, target: StdioTarget, **options: float) -> RuntimeConfig:
    server = RuntimeServer(
        connector_id="id-s",
        name="s",
        target=target,
        settings=ConnectorSettings(approval_mode="allow_all"),
        runtime_config=options,
    )
    return RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=(server,))


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_calls_elicitation_goes_to_its_relay_and_others_to_the_runtimes_handler(
    tmp_path: Path, era: str
) -> None:
    fallback: list[str] = []

    async def handler(params: types.ElicitRequestParams) -> types.ElicitResult:
        fallback.append(params.message)
        return types.ElicitResult(action="decline")

    relayed: list[str] = []

    async def relay(params: types.ElicitRequestParams) -> types.ElicitResult:
        relayed.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    async def failing(params: types.ElicitRequestParams) -> types.ElicitResult:
        raise RuntimeError("the host went away")

    settings = Settings(home=tmp_path / "home", protocol_mode=era)
    target = fixture_server("eliciting_server.py")
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, target), settings=settings, elicitation_handler=handler) as runtime:
            with relaying_elicitation(relay):
                assert (await runtime.call("mcp.s.ask", {"question": "Favourite colour?"})).text == "accept: blue"
            assert (await runtime.call("mcp.s.ask", {"question": "Nobody relays"})).text == "decline"
            with relaying_elicitation(failing):  # a relay that fails: the server is told cancel
                assert (await runtime.call("mcp.s.ask", {"question": "Anyone?"})).text == "cancel"
    assert relayed == ["Favourite colour?"]
    assert fallback == ["Nobody relays"]


async def test_a_relay_still_waiting_when_its_call_is_cancelled_is_cancelled_too(tmp_path: Path) -> None:
    """A 2025-era request runs on the connection's receive loop, not in the call's task: the
    call ending must still end the wait for its host's answer."""
    waiting, ended = anyio.Event(), anyio.Event()

    async def relay(params: types.ElicitRequestParams) -> types.ElicitResult:
        waiting.set()
        try:
            await anyio.Event().wait()  # a host that never answers
        finally:
            ended.set()
        raise AssertionError("unreachable")

    settings = Settings(home=tmp_path / "home")
    with anyio.fail_after(30):
        async with Runtime(
            config(tmp_path, fixture_server("eliciting_server.py")), settings=settings, elicitation_handler=relay
        ) as runtime:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    with relaying_elicitation(relay):  # the server keeps asking after a cancel
                        await runtime.call("mcp.s.ask_regardless", {"question": "Still there?"})

                group.start_soon(call)
                await waiting.wait()
                group.cancel_scope.cancel()  # the host cancelled its call
            await ended.wait()
            with relaying_elicitation(relay_answering("later")):
                assert (await runtime.call("mcp.s.ask", {"question": "Again?"})).text == "accept: later"


def relay_answering(answer: str) -> ElicitationHandler:
    async def relay(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": answer})

    return relay


async def test_a_2026_servers_elicitation_finds_its_own_call_among_several_in_flight(tmp_path: Path) -> None:
    asked: dict[str, list[str]] = {"a": [], "b": []}
    both = anyio.Event()

    def relay_for(name: str) -> ElicitationHandler:
        async def relay(params: types.ElicitRequestParams) -> types.ElicitResult:
            asked[name].append(params.message)
            if asked["a"] and asked["b"]:
                both.set()
            await both.wait()  # both calls are in flight, each asked through its own relay
            return types.ElicitResult(action="accept", content={"answer": name})

        return relay

    async def handler(params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("every request here belongs to a relayed call")

    settings = Settings(home=tmp_path / "home", protocol_mode="auto")
    results: dict[str, str] = {}
    with anyio.fail_after(30):
        async with Runtime(
            config(tmp_path, fixture_server("eliciting_server.py")), settings=settings, elicitation_handler=handler
        ) as runtime:

            async def call(name: str) -> None:
                with relaying_elicitation(relay_for(name)):
                    results[name] = (await runtime.call("mcp.s.ask", {"question": f"for {name}"})).text

            async with anyio.create_task_group() as group:
                group.start_soon(call, "a")
                group.start_soon(call, "b")
    assert asked == {"a": ["for a"], "b": ["for b"]}
    assert results == {"a": "accept: a", "b": "accept: b"}


@pytest.mark.peers
async def test_a_2025_servers_elicitation_is_relayed_only_when_its_call_is_alone_on_the_connection(
    tmp_path: Path,
) -> None:
    """server-everything sends ``elicitation/create`` mid-call, saying nothing of which call it is
    for: with another call in flight it goes to the runtime's handler, never to a guessed relay."""
    fallback: list[str] = []

    async def handler(params: types.ElicitRequestParams) -> types.ElicitResult:
        fallback.append(params.message)
        return types.ElicitResult(action="decline")

    relayed: list[str] = []

    async def relay(params: types.ElicitRequestParams) -> types.ElicitResult:
        relayed.append(params.message)
        # the person takes longer than request_timeout: the wait does not count against it
        with anyio.move_on_after(1.5):
            await anyio.Event().wait()
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    command = everything_stdio_command()
    target = StdioTarget(command=command[0], args=tuple(command[1:]))
    settings = Settings(home=tmp_path / "home")
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    with anyio.fail_after(60):
        async with Runtime(
            config(tmp_path, target, request_timeout=1.0), settings=settings, elicitation_handler=handler
        ) as runtime:
            with relaying_elicitation(relay):
                alone = (await runtime.call("mcp.s.trigger-elicitation-request")).text
            async with anyio.create_task_group() as group:

                async def long_call() -> None:
                    with relaying_progress(on_progress), relaying_elicitation(relay):
                        await runtime.call("mcp.s.trigger-long-running-operation", {"duration": 600, "steps": 6000})

                group.start_soon(long_call)
                await running.wait()  # the other call is in flight on the same connection
                with relaying_elicitation(relay):
                    beside = (await runtime.call("mcp.s.trigger-elicitation-request")).text
                group.cancel_scope.cancel()
    assert "- Name: Ada" in alone
    assert "User declined to provide the requested information" in beside
    assert len(relayed) == 1 and fallback == ["Please provide inputs for the following fields:"]
