"""The in-flight byte budget shared by every connection's NDJSON reader: backpressure without
loss, never past the limit while several big results arrive at once, no deadlock (a message larger
than the budget still goes through alone). The concurrent cases use real stdio fixture servers."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

import patchbay.adapters.transports.budget as budget_module
from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.adapters.transports.budget import ByteBudget, process_budget
from patchbay.core.models import ConnectorSettings
from support import fixture_server

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024


async def waiting(budget: ByteBudget, count: int = 1) -> None:
    """Until ``count`` waits began (a poll of the budget's own counter; callers bound it)."""
    while budget.waits < count:
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
    config = RuntimeConfig(project_id="prj_budget", workspace=str(tmp_path), servers=[big(n) for n in names])
    settings = Settings(home=tmp_path / "home", inflight_budget_bytes=budget_bytes, request_timeout=120)
    texts: dict[str, str] = {}
    async with Runtime(config, settings=settings) as runtime:
        await runtime.list_tools()  # every server up before the results race

        async def one(name: str) -> None:
            texts[name] = (await runtime.call(f"mcp.{name}.text", {"size": size})).text

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
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
