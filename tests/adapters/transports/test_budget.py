"""The in-flight byte budget shared by every connection's NDJSON reader: backpressure without
loss, never past the limit while several big results arrive at once, no deadlock (a message larger
than the budget still goes through alone). The concurrent cases use real stdio fixture servers."""

from __future__ import annotations

import contextvars
import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from anyio.abc import ObjectReceiveStream, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.shared.message import SessionMessage

import patchbay.adapters.transports.budget as budget_module
import patchbay.runtime.calls.executor as executor_module
from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.adapters.transports.budget import ByteBudget, ResultClaim, holding_results, process_budget
from patchbay.adapters.transports.socket import ndjson_streams
from patchbay.core.errors import FailureReason, ToolCallError
from patchbay.core.models import ConnectorSettings
from patchbay.runtime.events.log import read_events
from tests.support.servers import fixture_server
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024


async def waiting(budget: ByteBudget, count: int = 1) -> None:
    """Until ``count`` waits began (a poll of the budget's own counter; callers bound it)."""
    while budget.waits < count:
        await anyio.lowlevel.checkpoint()


async def drained(budget: ByteBudget) -> None:
    """Until nothing is charged (a poll of the budget's own counter; callers bound it)."""
    while budget.held:
        await anyio.lowlevel.checkpoint()


# -- the budget itself ----------------------------------------------------------------------


async def test_a_second_large_message_waits_for_the_first_to_be_handed_on() -> None:
    budget = ByteBudget(4 * MiB, share=256 * 1024)
    first, second = budget.lease(), budget.lease()
    await first.hold(3 * MiB)  # past the share: the first becomes the owner
    grown = anyio.Event()

    async def grow_second() -> None:
        await second.hold(1 * MiB)  # past the share too: must wait for the owner
        grown.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(grow_second)
            await waiting(budget)
            assert not grown.is_set() and budget.waits == 1 and budget.held == 3 * MiB
            first.release()
            await grown.wait()
    assert budget.held == 1 * MiB and budget.high_water == 3 * MiB


async def test_small_messages_of_others_flow_while_one_grows_within_the_limit() -> None:
    budget = ByteBudget(4 * MiB, share=256 * 1024)
    big, small = budget.lease(), budget.lease()
    await big.hold(3 * MiB)
    with anyio.fail_after(10):
        await small.hold(200 * 1024)  # below the share and within the limit: no wait
    assert budget.waits == 0 and budget.held == 3 * MiB + 200 * 1024


async def test_a_message_larger_than_the_budget_proceeds_alone() -> None:
    budget = ByteBudget(1 * MiB)
    lease = budget.lease()
    with anyio.fail_after(10):
        for total in range(64 * 1024, 3 * MiB, 64 * 1024):
            await lease.hold(total)
    assert budget.high_water > budget.limit and budget.waits == 0
    lease.release()
    assert budget.held == 0


async def test_the_owner_goes_past_the_limit_only_when_every_other_holder_waits() -> None:
    budget = ByteBudget(1 * MiB, share=256 * 1024)
    owner, other = budget.lease(), budget.lease()
    await other.hold(200 * 1024)
    await owner.hold(800 * 1024)  # the owner: 1000 KiB of 1024 KiB held
    done = anyio.Event()

    async def owner_grows() -> None:
        await owner.hold(900 * 1024)  # does not fit while the other holds its 200 KiB
        done.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(owner_grows)
            await waiting(budget)
            assert not done.is_set()  # the other may still finish its message: wait for it
            group.start_soon(other.hold, 300 * 1024)  # now the other needs ownership: stuck
            await done.wait()  # no deadlock: the owner went on
            owner.release()
    assert other.held == 300 * 1024 and budget.high_water > budget.limit


async def test_a_cancelled_wait_leaves_the_charge_as_it_was() -> None:
    budget = ByteBudget(1 * MiB, share=256 * 1024)
    owner, waiter = budget.lease(), budget.lease()
    await owner.hold(900 * 1024)
    await waiter.hold(100 * 1024)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter.hold, 500 * 1024)  # nothing frees budget: it waits
            await waiting(budget)
            group.cancel_scope.cancel()
    assert waiter.held == 100 * 1024 and budget.held == 1000 * 1024
    waiter.release()
    owner.release()
    assert budget.held == 0


async def test_a_parked_charge_lets_another_message_grow_but_not_past_the_limit() -> None:
    budget = ByteBudget(4 * MiB, share=256 * 1024)
    kept, reading = budget.lease(), budget.lease()
    await kept.hold(3 * MiB)  # the owner while it grows
    kept.park()  # complete and kept for its call: no longer the owner
    grown = anyio.Event()

    async def grow_past_what_is_left() -> None:
        await reading.hold(2 * MiB)  # alone as the owner, but the parked charge is not waiting
        grown.set()

    with anyio.fail_after(10):
        await reading.hold(1 * MiB)  # past the share, within the limit: no wait for the parked one
        assert budget.waits == 0
        async with anyio.create_task_group() as group:
            group.start_soon(grow_past_what_is_left)
            await waiting(budget)
            assert not grown.is_set() and budget.held == 4 * MiB
            kept.release()  # the call is done with its result
            await grown.wait()
    assert budget.held == 2 * MiB and budget.high_water == 4 * MiB


# -- the reader keeps a big response charged for the call that waits for it ------------------


def test_nested_blocks_share_one_claim_and_a_finished_claim_is_not_reused() -> None:
    with holding_results() as outer:
        with holding_results() as inner:
            assert inner is outer
        assert not outer.closed  # the outer block still runs
        later = contextvars.copy_context()  # what a task started here and outliving the block gets
    assert outer.closed

    def own_claim() -> ResultClaim:
        with holding_results() as claim:
            assert not claim.closed
            return claim

    assert later.run(own_claim) is not outer


@asynccontextmanager
async def peer_link(
    budget: ByteBudget,
) -> AsyncIterator[tuple[ObjectReceiveStream[Any], Any, SocketStream, BufferedByteReceiveStream]]:
    """``ndjson_streams`` over a real Unix socket; the test plays the server at the other end."""
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # short: a socket path has ~100 bytes
        path = f"{where}/peer.sock"
        async with await anyio.create_unix_listener(path) as listener:
            client = await anyio.connect_unix(path)
            server = await listener.accept()
            async with server, client, ndjson_streams(client, budget=budget) as (reads, writes):
                yield reads, writes, server, BufferedByteReceiveStream(server)


def request(request_id: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={"name": "t"}))


def response(request_id: int, size: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"blob": "x" * size}}).encode() + b"\n"


NOTE = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}\n'


async def answer(server: SocketStream, lines: BufferedByteReceiveStream, request_id: int, size: int) -> None:
    """Read the request ``request_id`` the client sent, then write its ``size``-byte answer."""
    sent = json.loads(await lines.receive_until(b"\n", 1 * MiB))
    assert sent["id"] == request_id
    await server.send(response(request_id, size))


async def test_a_big_response_stays_charged_until_the_call_that_claimed_it_ends() -> None:
    budget = ByteBudget(16 * MiB, share=256 * 1024)
    async with peer_link(budget) as (reads, writes, server, lines):
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                with holding_results() as claim:
                    await writes.send(request(1))
                    group.start_soon(answer, server, lines, 1, 2 * MiB)
                    message = await reads.receive()
                    assert message.message.id == 1
                    await server.send(NOTE)  # the reader went on to the next message...
                    assert (await reads.receive()).message.method == "notifications/message"
                    await drained_to(budget, claim.held)
                    assert claim.held >= 2 * MiB - 64 * 1024  # ...while the result stays charged
                    assert len(message.message.result["blob"]) == 2 * MiB
                await drained(budget)  # the block ended: given back
                # ...and the parsed result dropped, though the session's receive loop still refers
                # to its last message (an idle connection would keep a big result alive otherwise).
                assert message.message.result == {}


async def drained_to(budget: ByteBudget, held: int) -> None:
    """Until the budget holds only ``held`` (the reader gave back its last message)."""
    while budget.held > held:
        await anyio.lowlevel.checkpoint()


async def test_a_response_to_a_call_that_already_ended_is_released_when_handed_on() -> None:
    budget = ByteBudget(16 * MiB, share=256 * 1024)
    async with peer_link(budget) as (reads, writes, server, lines):
        with anyio.fail_after(30):
            with holding_results() as claim:
                await writes.send(request(1))
            await answer(server, lines, 1, 2 * MiB)  # a late answer: nobody waits for it now
            assert (await reads.receive()).message.id == 1
            await drained(budget)
    assert claim.held == 0 and budget.high_water >= 2 * MiB - 64 * 1024


async def test_a_claim_gives_back_its_charge_before_it_waits_for_another_answer() -> None:
    budget = ByteBudget(16 * MiB, share=256 * 1024)
    async with peer_link(budget) as (reads, writes, server, lines):
        with anyio.fail_after(30):
            with holding_results() as claim:
                await writes.send(request(1))
                await answer(server, lines, 1, 2 * MiB)
                first = await reads.receive()
                assert claim.held >= 2 * MiB - 64 * 1024
                await writes.send(request(2))  # a second round of the same call: it must not wait holding
                assert claim.held == 0
                assert len(first.message.result["blob"]) == 2 * MiB  # still the call's to read
                await answer(server, lines, 2, 3 * MiB)
                assert (await reads.receive()).message.id == 2
                assert claim.held >= 3 * MiB - 64 * 1024
            assert budget.held == 0 and first.message.result == {}


async def test_a_cancelled_call_gives_back_the_charge_of_its_response() -> None:
    budget = ByteBudget(16 * MiB, share=256 * 1024)
    async with peer_link(budget) as (reads, writes, server, lines):
        with anyio.fail_after(30):
            with anyio.CancelScope() as scope, holding_results() as claim:
                await writes.send(request(1))
                await answer(server, lines, 1, 2 * MiB)
                await reads.receive()
                assert claim.held >= 2 * MiB - 64 * 1024
                scope.cancel()
                await anyio.sleep_forever()  # the call is processing its result when cancelled
            assert scope.cancelled_caught and claim.closed
            await drained(budget)


async def test_a_small_or_unclaimed_message_is_released_at_once() -> None:
    budget = ByteBudget(16 * MiB, share=256 * 1024)
    async with peer_link(budget) as (reads, writes, server, lines):
        with anyio.fail_after(30), holding_results() as claim:
            await writes.send(request(1))
            await answer(server, lines, 1, 100 * 1024)  # below the share: not worth keeping
            await reads.receive()
            await server.send(
                b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", '
                + b'"data": "'
                + b"y" * (2 * MiB)
                + b'"}}\n'
            )  # a big notification: nobody claims it
            await reads.receive()
            await drained(budget)
            assert claim.held == 0 and budget.high_water >= 2 * MiB - 64 * 1024


# -- several connectors returning big results at once ------------------------------------------


def big(name: str) -> RuntimeServer:
    return RuntimeServer(
        connector_id=f"con_{name}",
        name=name,
        target=fixture_server("big_output_server.py"),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )


@pytest.fixture
def fresh_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process budget of its own for this test (the Runtime sizes it from its settings)."""
    monkeypatch.setattr(budget_module, "_process", None)


async def call_all(tmp_path: Path, names: list[str], size: int, budget_bytes: int) -> list[str]:
    """Call every server's ``text`` at once; the servers answer together, once every call was sent
    (they wait for one release file), so their results race for the budget whatever the scheduling."""
    config = RuntimeConfig(project_id="prj_budget", workspace=str(tmp_path), servers=[big(n) for n in names])
    settings = Settings(home=tmp_path / "home", inflight_budget_bytes=budget_bytes, request_timeout=120)
    release = tmp_path / "release"
    texts: dict[str, str] = {}
    async with Runtime(config, settings=settings) as runtime:
        await runtime.list_tools()  # every server up before the results race

        async def one(name: str) -> None:
            arguments = {"size": size, "wait_for": str(release)}
            texts[name] = (await runtime.call(f"mcp.{name}.text", arguments)).text

        def all_sent() -> bool:
            started = [e for e in read_events(runtime.event_log_path) if e["type"] == "mcp.call.started"]
            return len(started) == len(names)

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
            await wait_until(all_sent)
            release.touch()
    return [texts[name] for name in names]


async def test_concurrent_big_results_stay_within_the_budget_and_arrive_intact(
    tmp_path: Path, fresh_budget: None
) -> None:
    names = ["b1", "b2", "b3", "b4"]
    size = 3 * MiB
    with anyio.fail_after(240):
        texts = await call_all(tmp_path, names, size, budget_bytes=4 * MiB)
    budget = process_budget()
    assert budget.limit == 4 * MiB
    assert budget.high_water <= budget.limit
    assert budget.high_water >= size  # each result was charged as it was read
    assert budget.waits > 0  # the others were held back while one result was read
    assert budget.held == 0
    for text in texts:
        assert len(text.encode()) == size and text.startswith("HEAD>") and text.endswith("<TAIL")


async def test_one_result_larger_than_the_whole_budget_still_arrives(tmp_path: Path, fresh_budget: None) -> None:
    size = 3 * MiB
    with anyio.fail_after(120):
        (text,) = await call_all(tmp_path, ["b1"], size, budget_bytes=1 * MiB)
    assert len(text.encode()) == size and text.endswith("<TAIL")
    assert process_budget().high_water > process_budget().limit and process_budget().held == 0


async def test_each_big_result_stays_charged_while_its_call_guards_it(
    tmp_path: Path, fresh_budget: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_while_guarding: list[int] = []
    guard = executor_module.mcp_result

    def observed(*args: Any) -> Any:  # runs in a worker thread for a result this big
        held_while_guarding.append(process_budget().held)
        return guard(*args)

    monkeypatch.setattr(executor_module, "mcp_result", observed)
    names = ["b1", "b2", "b3", "b4"]
    size = 3 * MiB
    with anyio.fail_after(240):
        texts = await call_all(tmp_path, names, size, budget_bytes=4 * MiB)
    budget = process_budget()
    assert len(held_while_guarding) == len(names)
    # The parsed result is charged until its guard is done: one result processed at a time.
    assert all(held >= size - 64 * 1024 for held in held_while_guarding), held_while_guarding
    assert budget.high_water <= budget.limit
    assert budget.held == 0
    for text in texts:
        assert len(text.encode()) == size and text.endswith("<TAIL")


async def test_a_timed_out_call_leaves_nothing_charged(tmp_path: Path, fresh_budget: None) -> None:
    config = RuntimeConfig(project_id="prj_budget", workspace=str(tmp_path), servers=[big("b1")])
    settings = Settings(home=tmp_path / "home", inflight_budget_bytes=4 * MiB, request_timeout=1)
    never = str(tmp_path / "never-created")
    with anyio.fail_after(120):
        async with Runtime(config, settings=settings) as runtime:
            with pytest.raises(ToolCallError) as caught:
                await runtime.call("mcp.b1.text", {"size": 3 * MiB, "wait_for": never})
            assert caught.value.reason is FailureReason.TIMEOUT
            assert process_budget().held == 0
            text = (await runtime.call("mcp.b1.text", {"size": 3 * MiB})).text  # the connection goes on
            assert len(text.encode()) == 3 * MiB and process_budget().held == 0
