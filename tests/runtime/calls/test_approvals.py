"""patchbay.runtime.calls.approvals: the approval broker (pending approvals bound to one call,
answered once, expired by the clock, refused when stale), through a real PermissionEngine."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from patchbay.core.digest import json_digest
from patchbay.core.errors import ApprovalStaleError, FailureReason, NotFoundError, ValidationError
from patchbay.core.models import ConnectorSettings, RuntimeServer, StdioTarget, ToolSummary
from patchbay.core.redaction import REDACTED
from patchbay.runtime.calls.approvals import ApprovalBroker, ApprovalChange, PendingApproval
from patchbay.runtime.calls.permissions import PermissionEngine, Resolution, policy_fingerprint

pytestmark = pytest.mark.anyio

SERVER = RuntimeServer(
    connector_id="c1",
    name="jira",
    target=StdioTarget(command="jira-mcp"),
    settings=ConnectorSettings(approval_mode="ask"),
    tools=(ToolSummary(name="comment"),),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def ask(engine: PermissionEngine, arguments: dict[str, Any], out: list[Resolution]) -> None:
    decision = engine.evaluate(SERVER, "comment")
    out.append(
        await engine.ask(
            "jira",
            "comment",
            decision,
            name="mcp.jira.comment",
            arguments=arguments,
            policy=policy_fingerprint(SERVER, "comment", decision),
        )
    )


async def waiting(broker: ApprovalBroker, changes: Any) -> PendingApproval:
    with anyio.fail_after(5):
        change: ApprovalChange = await changes.receive()
    assert change.type == "added" and change.approval is not None
    return change.approval


async def test_a_pending_approval_is_bound_to_the_exact_call_and_an_allow_once_is_used_once() -> None:
    clock = Clock()
    broker = ApprovalBroker(expiry=600, clock=clock)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w"))
    out: list[Resolution] = []
    arguments = {"text": "hi", "api_key": "sk-live-0123456789abcdef"}
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, arguments, out)
        pending = await waiting(broker, changes)
        assert (pending.session_id, pending.workspace, pending.connector, pending.tool, pending.risk) == (
            "ses_1",
            "/w",
            "jira",
            "comment",
            "network",
        )
        assert pending.arguments == {"text": "hi", "api_key": REDACTED}
        assert pending.arguments_digest == json_digest(arguments)  # of the unredacted arguments
        assert (pending.created, pending.expires) == (1_000.0, 1_600.0)
        assert broker.pending() == [pending]
        broker.decide(pending.id, "allow_once", digest=pending.arguments_digest, policy=pending.policy)
        with pytest.raises(NotFoundError):  # used once
            broker.decide(pending.id, "allow_once")
        with anyio.fail_after(5):
            removed = await changes.receive()
        assert (removed.type, removed.id, removed.why) == ("removed", pending.id, "answered")
    assert out == [Resolution("allow", "user", "user_allow_once")]
    assert broker.pending() == []

    # an allow-once covers nothing else: the next call (other arguments) waits again
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {"text": "other"}, out)
        second = await waiting(broker, changes)
        assert second.id != pending.id and second.arguments_digest != pending.arguments_digest
        broker.decide(second.id, "deny")
    assert out[-1] == Resolution("deny", "user", "user_deny", FailureReason.PERMISSION_DENIED)


async def test_an_answer_for_other_arguments_or_another_policy_is_stale_and_the_call_keeps_waiting() -> None:
    broker = ApprovalBroker(expiry=600)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w"))
    out: list[Resolution] = []
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {"text": "rm -rf"}, out)
        pending = await waiting(broker, changes)
        with pytest.raises(ApprovalStaleError) as stale:
            broker.decide(pending.id, "allow_once", digest=json_digest({"text": "ls"}))
        assert (stale.value.code, stale.value.details["field"]) == ("approval_stale", "digest")
        with pytest.raises(ApprovalStaleError) as stale:
            broker.decide(pending.id, "allow_once", policy="0" * 64)
        assert stale.value.details["field"] == "policy"
        with pytest.raises(ValidationError):
            broker.decide(pending.id, "yes")
        assert broker.pending() == [pending] and out == []
        broker.decide(pending.id, "allow_session")
    assert out == [Resolution("allow", "user", "user_allow_session")]
    assert engine.session_allowed("jira", "comment")


async def test_an_approval_expires_by_the_clock_and_the_call_is_denied() -> None:
    clock = Clock()
    broker = ApprovalBroker(expiry=600, clock=clock)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w"))
    out: list[Resolution] = []
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(broker, changes)
        clock.now += 599
        assert broker.pending() == [pending]
        clock.now += 1
        assert broker.pending() == []  # swept: the call is woken and denied
        with anyio.fail_after(5):
            removed = await changes.receive()
        assert (removed.id, removed.why) == (pending.id, "expired")
        with pytest.raises(NotFoundError):
            broker.decide(pending.id, "allow_once")
    assert out == [Resolution("deny", "runtime", "approval_expired", FailureReason.PERMISSION_DENIED)]


async def test_an_approval_expires_in_real_time_too() -> None:
    broker = ApprovalBroker(expiry=0.05)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w"))
    out: list[Resolution] = []
    with anyio.fail_after(5):
        await ask(engine, {}, out)
    assert out[0].sourced_from == "approval_expired" and broker.pending() == []


async def test_a_cancelled_call_removes_its_approval() -> None:
    broker = ApprovalBroker()
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w"))
    out: list[Resolution] = []
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {}, out)
        pending = await waiting(broker, changes)
        group.cancel_scope.cancel()
    assert broker.pending() == [] and out == []
    with pytest.raises(NotFoundError):
        broker.decide(pending.id, "deny")


async def test_invalidate_from_a_worker_thread_ends_the_waiting_approval_as_stale() -> None:
    broker = ApprovalBroker(expiry=600)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w"))
    out: list[Resolution] = []
    broker.invalidate()  # nothing waits yet: nothing happens
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, engine, {"text": "hi"}, out)
        pending = await waiting(broker, changes)
        # as a ConnectorService.on_committed listener does, from a request's worker thread
        await anyio.to_thread.run_sync(broker.invalidate)
        with anyio.fail_after(5):
            removed = await changes.receive()
        assert (removed.type, removed.id, removed.why) == ("removed", pending.id, "invalidated")
        with pytest.raises(NotFoundError):
            broker.decide(pending.id, "allow_once")
    assert out == [Resolution("deny", "runtime", "approval_stale", FailureReason.PERMISSION_DENIED)]


async def test_a_parked_approval_outlives_its_call_and_the_identical_call_takes_its_answer() -> None:
    broker = ApprovalBroker(expiry=600)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w", patience=0.01))
    out: list[Resolution] = []
    with anyio.fail_after(5):
        await ask(engine, {"text": "hi"}, out)
    assert (out[0].decision, out[0].sourced_from, out[0].reason) == (
        "deny",
        "approval_pending",
        FailureReason.APPROVAL_PENDING,
    )
    [parked] = broker.pending()  # still listed and answerable
    assert out[0].details == {"approval_id": parked.id}
    with anyio.fail_after(5):  # another call (other arguments) is not the identical one: its own approval
        await ask(engine, {"text": "other"}, out)
    other = out[1].details["approval_id"]
    assert other != parked.id and {p.id for p in broker.pending()} == {parked.id, other}
    with anyio.fail_after(5):  # asked again before the answer: the same approval, still open
        await ask(engine, {"text": "hi"}, out)
    assert out[2].details["approval_id"] == parked.id
    broker.decide(parked.id, "allow_once", digest=parked.arguments_digest, policy=parked.policy)
    with anyio.fail_after(5):
        await ask(engine, {"text": "hi"}, out)
    assert out[3] == Resolution("allow", "user", "user_allow_once")
    assert [p.id for p in broker.pending()] == [other]  # used once
    with anyio.fail_after(5):  # the next identical call asks anew
        await ask(engine, {"text": "hi"}, out)
    assert out[4].details["approval_id"] not in (parked.id, other)


async def test_a_resumed_approval_is_answered_while_its_call_waits_again() -> None:
    broker = ApprovalBroker(expiry=600)
    out: list[Resolution] = []
    first = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w", patience=0.01))
    with anyio.fail_after(5):
        await ask(first, {"text": "hi"}, out)
    [parked] = broker.pending()
    resumed = anyio.Event()
    waits: list[PendingApproval] = []

    def announce(pending: PendingApproval) -> None:
        waits.append(pending)
        resumed.set()

    patient = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w", announce=announce))
    async with broker.subscribe() as changes, anyio.create_task_group() as group:
        group.start_soon(ask, patient, {"text": "hi"}, out)
        with anyio.fail_after(5):
            await resumed.wait()
        assert waits == [parked]
        broker.decide(parked.id, "deny")
        with anyio.fail_after(5):
            removed = await changes.receive()  # no second "added": it was listed all along
        assert (removed.type, removed.id, removed.why) == ("removed", parked.id, "answered")
    assert out[-1] == Resolution("deny", "user", "user_deny", FailureReason.PERMISSION_DENIED)


async def test_a_parked_approval_goes_when_it_expires_is_invalidated_or_discarded() -> None:
    clock = Clock()
    broker = ApprovalBroker(expiry=600, clock=clock)
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w", patience=0.01))
    out: list[Resolution] = []
    async with broker.subscribe() as changes:
        with anyio.fail_after(5):
            await ask(engine, {"n": 1}, out)
            await ask(engine, {"n": 2}, out)
        parked = {r.details["approval_id"] for r in out}
        for _ in range(2):
            assert (await changes.receive()).type == "added"
        clock.now += 600  # nobody waits on them: past their expiry they go
        assert broker.pending() == []
        removed = [await changes.receive() for _ in range(2)]
        assert {(c.id, c.why) for c in removed} == {(i, "expired") for i in parked}
    clock.now = 1_000.0
    out.clear()
    with anyio.fail_after(5):
        await ask(engine, {"n": 1}, out)
        await ask(engine, {"n": 2}, out)
    first, second = (r.details["approval_id"] for r in out)
    assert not {first, second} & parked  # an expired one is not resumed: the calls asked anew
    async with broker.subscribe() as changes:
        broker.invalidate()
        with anyio.fail_after(5):
            gone = [await changes.receive() for _ in range(2)]
        assert {(c.id, c.why) for c in gone} == {(first, "invalidated"), (second, "invalidated")}
        with anyio.fail_after(5):
            await ask(engine, {"n": 1}, out)
        third = out[-1].details["approval_id"]
        assert third != first
        assert (await changes.receive()).type == "added"
        await broker.discard_parked()
        with anyio.fail_after(5):
            last = await changes.receive()
        assert (last.id, last.why) == (third, "cancelled")
    assert broker.pending() == []


async def test_patience_must_be_positive() -> None:
    broker = ApprovalBroker()
    engine = PermissionEngine(session_id="ses_1", approver=broker.approver(workspace="/w", patience=0))
    out: list[Resolution] = []
    await ask(engine, {}, out)
    assert out[0].sourced_from == "approver_error"  # a misconfigured approver fails closed
