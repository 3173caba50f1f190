"""The pending_approvals table: rows any instance lists, answered once by compare-and-set, swept
after their expiry; arguments only as a redacted preview (SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from sqlalchemy import select

from patchbay.adapters.store import Repository
from patchbay.adapters.store.approvals import DECIDED_KEPT_MS, ApprovalRow
from patchbay.adapters.store.tables import pending_approvals
from patchbay.core.errors import ApprovalStaleError, ConfigError, ErrorCode, NotFoundError

NOW = 1_800_000_000_000


def _row(approval_id: str = "apr_000000000000000000000001", *, created: int = NOW, **changes: object) -> ApprovalRow:
    row = ApprovalRow(
        approval_id=approval_id,
        session_id="ses_00000000000000aa",
        instance="host-1-aa",
        workspace="/work/ws",
        name="mcp.time.get_current_time",
        connector="time",
        tool="get_current_time",
        kind="tool",
        risk="network",
        arguments_digest="d" * 64,
        policy="p" * 64,
        preview={"timezone": "UTC", "api_key": "sk-live-0123456789abcdef0123"},
        created_at=created,
        expires_at=created + 600_000,
    )
    return dataclasses.replace(row, **changes)  # type: ignore[arg-type]


def test_a_row_is_listed_until_answered_and_holds_only_a_redacted_preview(any_repo: Repository) -> None:
    version = any_repo.state_version()
    any_repo.approvals.add(_row())
    any_repo.approvals.add(_row("apr_000000000000000000000002", created=NOW + 5))
    listed = any_repo.approvals.pending(now=NOW + 10)
    assert [r.approval_id for r in listed] == ["apr_000000000000000000000001", "apr_000000000000000000000002"]
    assert listed[0].preview == {"timezone": "UTC", "api_key": "[REDACTED]"}
    with any_repo.engine.connect() as conn:
        stored = conn.execute(select(pending_approvals.c.preview_json)).scalars().all()
    assert all("sk-live" not in text for text in stored)
    assert any_repo.state_version() == version  # no hosted session rebuilds for an approval

    decided = any_repo.approvals.decide(listed[0].approval_id, "allow_session", now=NOW + 20)
    assert (decided.decision, decided.decided_at, decided.actor) == ("allow_session", NOW + 20, "user")
    assert [r.approval_id for r in any_repo.approvals.pending(now=NOW + 30)] == ["apr_000000000000000000000002"]
    again = any_repo.approvals.get(listed[0].approval_id)
    assert again is not None and again.decision == "allow_session"


def test_a_second_answer_is_not_found_and_a_stale_one_leaves_the_row_waiting(any_repo: Repository) -> None:
    any_repo.approvals.add(_row())
    rid = "apr_000000000000000000000001"
    with pytest.raises(ApprovalStaleError) as stale:
        any_repo.approvals.decide(rid, "allow_once", digest="0" * 64, now=NOW + 1)
    assert stale.value.code == ErrorCode.APPROVAL_STALE and stale.value.details["field"] == "digest"
    with pytest.raises(ApprovalStaleError):
        any_repo.approvals.decide(rid, "allow_once", policy="0" * 64, now=NOW + 1)
    assert any_repo.approvals.decide(rid, "deny", digest="d" * 64, policy="p" * 64, now=NOW + 2).decision == "deny"
    with pytest.raises(NotFoundError) as second:
        any_repo.approvals.decide(rid, "allow_once", now=NOW + 3)
    assert second.value.code == ErrorCode.NOT_FOUND
    row = any_repo.approvals.get(rid)
    assert row is not None and row.decision == "deny"
    with pytest.raises(ConfigError):
        any_repo.approvals.decide(rid, "yes", now=NOW + 3)
    with pytest.raises(NotFoundError):
        any_repo.approvals.decide("apr_nope", "deny", now=NOW + 3)


def test_concurrent_answers_have_exactly_one_winner(any_repo: Repository) -> None:
    any_repo.approvals.add(_row())
    outcomes: list[str] = []
    lock = threading.Lock()

    def answer(decision: str) -> None:
        try:
            any_repo.approvals.decide("apr_000000000000000000000001", decision, now=NOW + 1)
            result = decision
        except NotFoundError:
            result = "not_found"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=answer, args=(d,)) for d in ("allow_once", "deny") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(outcomes) == 8 and outcomes.count("not_found") == 7
    row = any_repo.approvals.get("apr_000000000000000000000001")
    assert row is not None and row.decision in outcomes


def test_an_expired_row_cannot_be_answered_and_is_swept(any_repo: Repository) -> None:
    any_repo.approvals.add(_row())
    any_repo.approvals.add(_row("apr_000000000000000000000002"))
    expiry = NOW + 600_000
    any_repo.approvals.decide("apr_000000000000000000000002", "allow_once", now=expiry - 1)
    assert any_repo.approvals.pending(now=expiry) == []
    with pytest.raises(NotFoundError):
        any_repo.approvals.decide("apr_000000000000000000000001", "allow_once", now=expiry)
    assert any_repo.approvals.sweep(now=expiry) == 1  # the decided one waits for its waiter a while
    assert any_repo.approvals.get("apr_000000000000000000000001") is None
    assert any_repo.approvals.get("apr_000000000000000000000002") is not None
    assert any_repo.approvals.sweep(now=expiry + DECIDED_KEPT_MS) == 1
    assert any_repo.approvals.get("apr_000000000000000000000002") is None


def test_the_waiter_removes_its_row(any_repo: Repository) -> None:
    any_repo.approvals.add(_row())
    any_repo.approvals.remove("apr_000000000000000000000001")
    any_repo.approvals.remove("apr_000000000000000000000001")  # twice: nothing to do
    assert any_repo.approvals.get("apr_000000000000000000000001") is None


def test_an_unknown_risk_is_refused_before_any_sql(any_repo: Repository) -> None:
    with pytest.raises(ConfigError):
        any_repo.approvals.add(_row(risk="extreme"))
