"""Pending approvals in the ``pending_approvals`` table: calls waiting for a person's answer,
shared by every instance on one store.

The instance whose call waits writes the row (:meth:`ApprovalStore.add`); any instance lists the
rows still waiting (:meth:`ApprovalStore.pending`) and answers one (:meth:`ApprovalStore.decide`)
with a compare-and-set: the ``UPDATE`` applies only while ``decision`` is NULL and the row has
not expired, so of two answers (on one instance or two) exactly one wins and the other is
``not_found``. The waiter reads its row back (:meth:`ApprovalStore.get`) as the authority and
removes it once it has its answer (:meth:`ApprovalStore.remove`); rows whose waiter is gone are
deleted by :meth:`ApprovalStore.sweep` after their expiry.

A row never holds the call's arguments: only their SHA-256 digest and a redacted preview
(:func:`~patchbay.core.redaction.redact_value`, cut to :data:`PREVIEW_MAX_CHARS`). Times are Unix
milliseconds. Writes here do not move the store's change counter (no runtime projects them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, get_args

from sqlalchemy import and_, delete, insert, or_, select, update

from patchbay.adapters.store._rows import check_choice
from patchbay.adapters.store._transactions import Transactions
from patchbay.adapters.store.tables import pending_approvals
from patchbay.core.errors import ApprovalStaleError, NotFoundError
from patchbay.core.models import GrantKind
from patchbay.core.policy import Risk
from patchbay.core.redaction import redact_value

__all__ = ["DECISIONS", "PREVIEW_MAX_CHARS", "ApprovalRow", "ApprovalStore", "preview_json"]

DECISIONS = ("allow_once", "allow_session", "deny")
"""The answers a row can hold."""

PREVIEW_MAX_CHARS = 8000
"""Longest argument preview kept as JSON; a longer one is replaced by a cut string of it."""

DECIDED_KEPT_MS = 60_000
"""How long after its expiry :meth:`ApprovalStore.sweep` keeps a decided row its waiter has not
removed yet (the waiter may still be about to read it)."""

_C = pending_approvals.c


def preview_json(arguments: Any) -> str:
    """The redacted arguments as compact JSON text, at most about :data:`PREVIEW_MAX_CHARS`
    characters (a longer preview becomes ``{"[truncated]": "<its first 2000 characters>"}``)."""
    text = json.dumps(redact_value(arguments), separators=(",", ":"), ensure_ascii=False, default=str)
    if len(text) > PREVIEW_MAX_CHARS:
        text = json.dumps({"[truncated]": text[:2000]}, separators=(",", ":"), ensure_ascii=False)
    return text


@dataclass(frozen=True, slots=True)
class ApprovalRow:
    """One pending approval as stored.

    Attributes:
        approval_id: ``apr_`` + 24 hex chars.
        session_id / workspace: the session asking and its workspace path.
        instance: the id of the instance whose call waits (:mod:`patchbay.core.instance`).
        name / connector / tool / kind: canonical name, connector, original tool name, ``tool``
            or ``resource``.
        risk: ``read``, ``destructive`` or ``network``.
        arguments_digest: SHA-256 hex of the unredacted arguments' canonical JSON.
        policy: the fingerprint of the policy that decided ``ask``.
        preview: the redacted arguments (see :func:`preview_json`).
        created_at / expires_at: Unix milliseconds.
        decision / decided_at / actor: None until answered; then one of :data:`DECISIONS`, Unix
            milliseconds and ``user``.
    """

    approval_id: str
    session_id: str
    instance: str
    workspace: str
    name: str
    connector: str
    tool: str
    kind: GrantKind
    risk: Risk
    arguments_digest: str
    policy: str
    preview: dict[str, Any]
    created_at: int
    expires_at: int
    decision: str | None = None
    decided_at: int | None = None
    actor: str | None = None


def _row(mapping: Any) -> ApprovalRow:
    values = dict(mapping)
    preview = json.loads(values.pop("preview_json"))
    return ApprovalRow(**values, preview=preview if isinstance(preview, dict) else {"value": preview})


class ApprovalStore:
    """Reads and answers the pending approvals (``Repository.approvals``).

    Usage::

        repo.approvals.add(row)                       # the waiting instance
        for row in repo.approvals.pending():          # any instance
            repo.approvals.decide(row.approval_id, "allow_once", digest=row.arguments_digest)
        repo.approvals.get(row.approval_id).decision  # the waiter re-reads: "allow_once"
    """

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def add(self, row: ApprovalRow) -> None:
        """Store a new, undecided approval (its ``decision`` fields are ignored).

        Raises:
            ConfigError: ``invalid_config`` for a kind or risk the table does not know.
            sqlalchemy.exc.IntegrityError: an approval of that id exists already.
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        check_choice("kind", row.kind, get_args(GrantKind))
        check_choice("risk", row.risk, get_args(Risk))
        values = {
            "approval_id": row.approval_id,
            "session_id": row.session_id,
            "instance": row.instance,
            "workspace": row.workspace,
            "name": row.name,
            "connector": row.connector,
            "tool": row.tool,
            "kind": row.kind,
            "risk": row.risk,
            "arguments_digest": row.arguments_digest,
            "policy": row.policy,
            "preview_json": preview_json(row.preview),
            "created_at": row.created_at,
            "expires_at": row.expires_at,
        }
        with self._tx.write() as conn:
            conn.execute(insert(pending_approvals).values(values))

    def get(self, approval_id: str) -> ApprovalRow | None:
        """The row of ``approval_id`` (decided or not, expired or not), or None.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        with self._tx.read() as conn:
            found = conn.execute(select(pending_approvals).where(_C.approval_id == approval_id)).mappings().first()
        return None if found is None else _row(found)

    def pending(self, *, now: int | None = None) -> list[ApprovalRow]:
        """Every undecided approval that has not expired by ``now`` (Unix ms; default the
        store's clock), oldest first, whichever instance waits for it.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        at = self._tx.clock() if now is None else now
        query = (
            select(pending_approvals)
            .where(_C.decision.is_(None), _C.expires_at > at)
            .order_by(_C.created_at, _C.approval_id)
        )
        with self._tx.read() as conn:
            return [_row(m) for m in conn.execute(query).mappings().all()]

    def decide(
        self,
        approval_id: str,
        decision: str,
        *,
        digest: str | None = None,
        policy: str | None = None,
        now: int | None = None,
    ) -> ApprovalRow:
        """Answer an approval once, by compare-and-set; returns the decided row.

        Args:
            decision: one of :data:`DECISIONS`.
            digest / policy: what the person was shown; when given they must match the row.
            now: Unix ms (default the store's clock): a row expired by then cannot be answered.

        Raises:
            ConfigError: ``invalid_config`` for another decision.
            NotFoundError: ``not_found`` when no undecided, unexpired row of that id exists
                (answered already, on this instance or another; expired; never).
            ApprovalStaleError: ``approval_stale`` (``details.field`` ``digest`` or ``policy``)
                when they no longer match; the row stays undecided.
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        check_choice("decision", decision, DECISIONS)
        at = self._tx.clock() if now is None else now
        with self._tx.write() as conn:
            current = (
                conn.execute(
                    select(pending_approvals).where(
                        _C.approval_id == approval_id, _C.decision.is_(None), _C.expires_at > at
                    )
                )
                .mappings()
                .first()
            )
            if current is None:
                raise NotFoundError(
                    f"no pending approval {approval_id[:60]!r}", details={"approval_id": approval_id[:60]}
                )
            for what, given, held in (
                ("digest", digest, current["arguments_digest"]),
                ("policy", policy, current["policy"]),
            ):
                if given is not None and given != held:
                    raise ApprovalStaleError(
                        f"the approval's {what} no longer matches the waiting call",
                        details={"approval_id": approval_id, "field": what},
                    )
            changed = conn.execute(
                update(pending_approvals)
                .where(_C.approval_id == approval_id, _C.decision.is_(None), _C.expires_at > at)
                .values(decision=decision, decided_at=at, actor="user")
            ).rowcount
            if changed != 1:  # another writer answered between the read and the update
                raise NotFoundError(
                    f"no pending approval {approval_id[:60]!r}", details={"approval_id": approval_id[:60]}
                )
        return _row({**current, "decision": decision, "decided_at": at, "actor": "user"})

    def state_version(self) -> int:
        """The store's change counter (see
        :meth:`~patchbay.adapters.store.repository.Repository.state_version`): a waiter that
        finds it moved since its call asked knows the committed policy may have changed.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        return self._tx.state_version()

    def remove(self, approval_id: str) -> None:
        """Delete the row of ``approval_id`` (its waiter has its answer, or stopped waiting);
        nothing happens for none.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        with self._tx.write() as conn:
            conn.execute(delete(pending_approvals).where(_C.approval_id == approval_id))

    def sweep(self, *, now: int | None = None) -> int:
        """Delete the rows nobody will use any more: undecided ones expired by ``now`` (Unix ms,
        default the store's clock), and decided ones :data:`DECIDED_KEPT_MS` after their expiry
        (a waiter that died never removed them). Returns how many went.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        at = self._tx.clock() if now is None else now
        with self._tx.write() as conn:
            gone = conn.execute(
                delete(pending_approvals).where(
                    or_(
                        and_(_C.decision.is_(None), _C.expires_at <= at),
                        _C.expires_at <= at - DECIDED_KEPT_MS,
                    )
                )
            ).rowcount
        return max(0, int(gone))
