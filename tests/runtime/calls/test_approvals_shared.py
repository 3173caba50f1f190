"""patchbay.runtime.calls.approvals with a store: two brokers (two instances) on one SQLite store;
a call waiting on A is listed and answered by B, woken by a wake-up or found by its bounded
re-read; through a real PermissionEngine."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay.adapters.store import Repository, create_engine_for, upgrade_to_head
from patchbay.adapters.store.approvals import ApprovalStore
from patchbay.adapters.wakeups import LocalWakeups
from patchbay.core.errors import CanonicalStateUnavailable, FailureReason, NotFoundError
from patchbay.core.models import ConnectorSettings, RuntimeServer, StdioTarget, ToolSummary
from patchbay.runtime.calls.approvals import CHANGED_TOPIC, ApprovalBroker, ApprovalChange, PendingApproval
from patchbay.runtime.calls.permissions import PermissionEngine, Resolution, policy_fingerprint

pytestmark = pytest.mark.anyio

SERVER = RuntimeServer(
    connector_id="c1",
    name="jira",
    target=StdioTarget(command="jira-mcp"),
    settings=ConnectorSettings(approval_mode="ask"),
    tools=(ToolSummary(name="comment"),),
)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repository]:
    engine = create_engine_for(f"sqlite:///{tmp_path / 'patchbay.db'}")
    upgrade_to_head(engine)
    repository = Repository(engine)
    yield repository
    repository.close()


def opener(repo: Repository) -> Any:
    return lambda: repo.approvals


async def ask(engine: PermissionEngine, arguments: dict[str, Any], out: list[Resolution]) -> None:
    decision = engine.evaluate(SERVER, "comment")
    policy = policy_fingerprint(SERVER, "comment", decision)
    out.append(
        await engine.ask("jira", "comment", decision, name="mcp.jira.comment", arguments=arguments, policy=policy)
    )


async def waiting(changes: Any) -> PendingApproval:
    with anyio.fail_after(5):
        change: ApprovalChange = await changes.receive()
    assert change.type == "added" and change.approval is not None
    return change.approval


async def test_a_call_waiting_on_a_is_listed_by_b_and_woken_by_its_answer(repo: Repository) -> None:
    wakeups = LocalWakeups()  # one channel both reach (Redis between processes)
    a = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60, instance="a")
    b = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60, instance="b")
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with a.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {"text": "hi", "api_key": "sk-live-0123456789abcdef"}, out)
        pending = await waiting(changes)
        [listed] = await b.listing()
        assert (listed.id, listed.instance, listed.arguments) == (pending.id, "a", pending.arguments)
        assert listed.arguments["api_key"] == "[REDACTED]" and listed.expires - listed.created == 600
        with pytest.raises(RuntimeError):
            a.decide(pending.id, "allow_once")  # shared: only through the store
        with anyio.fail_after(5):  # far sooner than the 60 s re-read
            await b.answer(pending.id, "allow_session", digest=pending.arguments_digest, policy=pending.policy)
            while (await changes.receive()).type != "removed":
                pass
        with pytest.raises(NotFoundError):
            await a.answer(pending.id, "deny")  # used once, on either instance
    assert out == [Resolution("allow", "user", "user_allow_session")]
    assert engine.session_allowed("jira", "comment")
    assert repo.approvals.get(pending.id) is None and await b.listing() == []  # the waiter removed its row


async def test_without_a_wake_up_the_waiter_finds_the_answer_by_its_re_read(repo: Repository) -> None:
    a = ApprovalBroker(store=opener(repo), wakeups=LocalWakeups(), recheck=0.2)
    b = ApprovalBroker(store=opener(repo), wakeups=LocalWakeups(), recheck=0.2)  # its notify reaches only B
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with a.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(changes)
        await b.answer(pending.id, "deny")
        with anyio.fail_after(5):
            removed = await changes.receive()
        assert (removed.id, removed.why) == (pending.id, "answered")
    assert out == [Resolution("deny", "user", "user_deny", FailureReason.PERMISSION_DENIED)]


async def test_a_policy_change_on_the_waiting_instance_ends_the_shared_approval(repo: Repository) -> None:
    a = ApprovalBroker(store=opener(repo), recheck=60)
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with a.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(changes)
        await anyio.to_thread.run_sync(a.invalidate)
        with anyio.fail_after(5):
            removed = await changes.receive()
        assert (removed.id, removed.why) == (pending.id, "invalidated")
    assert out == [Resolution("deny", "runtime", "approval_stale", FailureReason.PERMISSION_DENIED)]
    assert repo.approvals.get(pending.id) is None


async def test_a_cancelled_call_removes_its_row_and_an_expired_one_cannot_be_answered(repo: Repository) -> None:
    a = ApprovalBroker(store=opener(repo), recheck=60)
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with a.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(changes)
        group.cancel_scope.cancel()
    assert out == [] and repo.approvals.get(pending.id) is None

    hasty = ApprovalBroker(store=opener(repo), expiry=0.3, recheck=60)
    engine = PermissionEngine(session_id="ses_2", approver=hasty.approver(workspace="/w"))
    with anyio.fail_after(5):
        await ask(engine, {}, out)
    assert out == [Resolution("deny", "runtime", "approval_expired", FailureReason.PERMISSION_DENIED)]
    assert await hasty.listing() == []


async def test_a_store_that_cannot_take_the_row_leaves_the_approval_in_this_process(tmp_path: Path) -> None:
    def unavailable() -> ApprovalStore:
        raise CanonicalStateUnavailable("the store at test is unavailable: locked")

    a = ApprovalBroker(store=unavailable, recheck=60)
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with a.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(changes)
        assert a.pending() == [pending]
        await a.answer(pending.id, "allow_once")
    assert out == [Resolution("allow", "user", "user_allow_once")]


async def test_the_follower_tells_subscribers_of_the_other_instances_approvals(repo: Repository) -> None:
    wakeups = LocalWakeups()
    a = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60)
    b = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60)
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with anyio.create_task_group() as follow:
        await follow.start(b.run)
        async with b.subscribe() as heard, a.subscribe() as changes, anyio.create_task_group() as group:
            await wakeups.notify(CHANGED_TOPIC)  # nothing waits yet: the follower hears nothing
            group.start_soon(ask, engine, {}, out)
            pending = await waiting(changes)
            added = await waiting(heard)
            assert added.id == pending.id
            await b.answer(pending.id, "allow_once")
            with anyio.fail_after(5):
                removed = await heard.receive()
            assert (removed.type, removed.id, removed.why) == ("removed", pending.id, "elsewhere")
        follow.cancel_scope.cancel()
    assert out == [Resolution("allow", "user", "user_allow_once")]


async def test_the_follower_outlives_a_store_it_cannot_open() -> None:
    opened = threading.Semaphore(0)

    def broken() -> ApprovalStore:
        opened.release()
        raise RuntimeError("no such database driver")

    wakeups = LocalWakeups()
    b = ApprovalBroker(store=broken, wakeups=wakeups, recheck=60)
    async with anyio.create_task_group() as follow:
        await follow.start(b.run)
        for _ in range(2):  # the second round proves the first failure did not end it
            await wakeups.notify(CHANGED_TOPIC)
            assert await anyio.to_thread.run_sync(lambda: opened.acquire(timeout=5))
        follow.cancel_scope.cancel()


async def test_an_allow_after_a_commit_on_another_instance_ends_the_call_as_stale(repo: Repository) -> None:
    wakeups = LocalWakeups()
    a = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60)
    b = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60)
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w"))
    out: list[Resolution] = []
    async with a.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(changes)
        # another instance commits a mutation (its on_committed reaches only its own broker)
        await anyio.to_thread.run_sync(lambda: repo.connectors.create("time", "Time", StdioTarget(command="t")))
        await b.answer(pending.id, "allow_once")
        with anyio.fail_after(5):
            removed = await changes.receive()
        assert (removed.id, removed.why) == (pending.id, "invalidated")
    assert out == [Resolution("deny", "runtime", "approval_stale", FailureReason.PERMISSION_DENIED)]


async def test_a_parked_approval_keeps_its_row_for_b_to_answer_and_the_identical_call_on_a_takes_it(
    repo: Repository,
) -> None:
    wakeups = LocalWakeups()
    a = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60, instance="a")
    b = ApprovalBroker(store=opener(repo), wakeups=wakeups, recheck=60, instance="b")
    engine = PermissionEngine(session_id="ses_1", approver=a.approver(workspace="/w", patience=0.01))
    out: list[Resolution] = []
    with anyio.fail_after(5):
        await ask(engine, {"text": "hi"}, out)
    assert out[0].reason is FailureReason.APPROVAL_PENDING
    [listed] = await b.listing()  # the row outlives the call
    assert (listed.id, listed.instance) == (out[0].details["approval_id"], "a")
    await b.answer(listed.id, "allow_once", digest=listed.arguments_digest, policy=listed.policy)
    assert await b.listing() == []
    with anyio.fail_after(5):
        await ask(engine, {"text": "hi"}, out)
    assert out[1] == Resolution("allow", "user", "user_allow_once")
    assert repo.approvals.get(listed.id) is None  # used once: the row went with the call

    with anyio.fail_after(5):  # a stopping process takes its parked rows with it
        await ask(engine, {"text": "again"}, out)
    assert [p.id for p in await b.listing()] == [out[2].details["approval_id"]]
    await a.discard_parked()
    assert await b.listing() == [] and a.pending() == []
