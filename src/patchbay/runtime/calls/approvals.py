"""The approval broker: approvals a person answers elsewhere (the settings page, the REST API).

One broker per ``serve`` process. A session opened with browser approvals gets
:meth:`ApprovalBroker.approver` as its :data:`~patchbay.runtime.calls.permissions.Approver`: each
``ask`` becomes a :class:`PendingApproval` bound to the exact call (session, connector, tool, the
SHA-256 digest of the unredacted arguments, the policy fingerprint, risk) with an expiry, and the
call waits until :meth:`ApprovalBroker.decide` answers it or it expires.

Contract:

* an answer is used once: the pending approval is removed when it is answered or expires; a
  second answer for its id is ``not_found``;
* an answer may name the ``digest`` and ``policy`` its author was shown; one that no longer
  matches is refused with ``approval_stale`` (:class:`~patchbay.core.errors.ApprovalStaleError`)
  and the call keeps waiting;
* expiry (``Settings.approval_expiry``, default 10 minutes) raises
  :class:`~patchbay.core.errors.ApprovalExpiredError` in the approver, which the permission engine
  turns into a denial (``permission_denied``); a cancelled call removes its approval;
* the wait happens before the call reaches its server connection, so it does not count against
  the call's ``request_timeout``;
* a wait with a ``patience`` (the gateway's: a host would time out) that runs out leaves the
  approval *parked*: still listed and answerable until its expiry, its row kept, and the call
  ends with :class:`~patchbay.core.errors.ApprovalPendingError`; the identical call made again
  (same session, workspace, name, arguments digest and policy fingerprint) resumes it and takes
  the answer given meanwhile, or waits again. A parked approval goes when it expires, when
  :meth:`ApprovalBroker.invalidate` runs, or with :meth:`ApprovalBroker.discard_parked`;
* subscribers (:meth:`ApprovalBroker.subscribe`) receive ``added``/``removed`` changes; a
  subscriber that falls behind by more than :data:`SUBSCRIBER_BUFFER` changes is dropped (its
  stream ends) so it can never block a call.

Shared (several instances on one store): given a ``store`` (the canonical store's
:class:`~patchbay.adapters.store.approvals.ApprovalStore`) and ``wakeups``, each waiting call also
writes its row there, so every instance lists it (:meth:`ApprovalBroker.listing`) and any
instance answers it (:meth:`ApprovalBroker.answer`, a compare-and-set on the row: one answer
wins, a second is ``not_found``). The answering instance notifies the topic
``approval:<id>``; the waiter, woken by it (or, when wake-ups are degraded or a message was lost,
after at most ``recheck`` seconds), re-reads its row, which is the only authority for the
answer. An allow read from the row counts only while the store's change counter is where it was
when the call asked: a mutation committed on any instance meanwhile ends the wait as stale,
as a mutation committed on the waiting instance does at once (:meth:`ApprovalBroker.invalidate`).
Every add and removal also notifies :data:`CHANGED_TOPIC`, on which :meth:`run` re-reads
the rows of the other instances and tells this instance's subscribers what came and went. When
the store cannot take a row, the call waits in this process only (as without a store) and only
this instance can answer it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.lowlevel import EventLoopToken
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from patchbay.adapters.store.approvals import ApprovalRow, ApprovalStore
from patchbay.adapters.wakeups import LocalWakeups, Wakeups
from patchbay.core.errors import (
    ApprovalExpiredError,
    ApprovalPendingError,
    ApprovalStaleError,
    CanonicalStateUnavailable,
    NotFoundError,
    ValidationError,
)
from patchbay.core.instance import instance_id
from patchbay.core.models import GrantKind
from patchbay.core.policy import Risk
from patchbay.runtime.calls.permissions import ApprovalAnswer, ApprovalRequest, Approver

__all__ = [
    "ANSWERS",
    "CHANGED_TOPIC",
    "SUBSCRIBER_BUFFER",
    "ApprovalBroker",
    "ApprovalChange",
    "PendingApproval",
    "StoreOpener",
]

logger = logging.getLogger(__name__)

CHANGED_TOPIC = "approvals"
"""The wake-up topic notified whenever a shared approval is added, answered or removed."""

StoreOpener = Callable[[], ApprovalStore]
"""``opener() -> ApprovalStore``: the shared store (called in a worker thread, so it may open the
database; raises ``CanonicalStateUnavailable`` when it cannot)."""

ANSWERS: tuple[ApprovalAnswer, ...] = ("allow_once", "allow_session", "deny")
"""The answers :meth:`ApprovalBroker.decide` accepts."""

SUBSCRIBER_BUFFER = 256
"""Changes a subscriber may have unread before it is dropped."""

Clock = Callable[[], float]
"""``clock() -> float``: wall-clock seconds since the epoch (``time.time``; tests inject one)."""

_CallKey = tuple[str, str, str, str, str, str]
"""What makes a call identical for a parked approval: session, workspace, kind, canonical name,
arguments digest, policy fingerprint."""

Announce = Callable[["PendingApproval"], None]
"""``announce(pending)``: told which approval a call waits on, once it waits (new or resumed)."""


@dataclass(eq=False, slots=True)
class PendingApproval:
    """One call waiting for a person's answer.

    Attributes:
        id: ``apr_`` + 24 hex chars, unguessable.
        session_id / workspace: the session asking and its workspace path.
        name / connector / tool / kind: the canonical name, connector, original tool name, and
            ``tool`` or ``resource``.
        arguments: the arguments, redacted.
        arguments_digest: SHA-256 hex of the unredacted arguments' canonical JSON.
        policy: the fingerprint of the policy that decided ``ask``.
        risk: ``read``, ``destructive`` or ``network``.
        created / expires: wall-clock seconds since the epoch.
        instance: the id of the instance whose call waits.
    """

    id: str
    session_id: str
    workspace: str
    name: str
    connector: str
    tool: str
    kind: GrantKind
    arguments: dict[str, Any]
    arguments_digest: str
    policy: str
    risk: Risk
    created: float
    expires: float
    instance: str = ""
    _answered: anyio.Event = field(default_factory=anyio.Event, repr=False)
    _answer: ApprovalAnswer | None = field(default=None, repr=False)
    _expired: bool = field(default=False, repr=False)
    _invalidated: bool = field(default=False, repr=False)
    _shared: bool = field(default=False, repr=False)
    _parked: bool = field(default=False, repr=False)
    _version: int | None = field(default=None, repr=False)
    _wake: Callable[[], None] | None = field(default=None, repr=False)

    @classmethod
    def from_row(cls, row: ApprovalRow) -> PendingApproval:
        """The approval a stored row describes (its expiry kept exactly ``expires_at -
        created_at`` after its creation)."""
        created = row.created_at / 1000
        return cls(
            id=row.approval_id,
            session_id=row.session_id,
            workspace=row.workspace,
            name=row.name,
            connector=row.connector,
            tool=row.tool,
            kind=row.kind,
            arguments=dict(row.preview),
            arguments_digest=row.arguments_digest,
            policy=row.policy,
            risk=row.risk,
            created=created,
            expires=created + (row.expires_at - row.created_at) / 1000,
            instance=row.instance,
            _shared=True,
        )

    def to_row(self) -> ApprovalRow:
        """The row to store for this approval (milliseconds; the arguments as a preview)."""
        created = round(self.created * 1000)
        return ApprovalRow(
            approval_id=self.id,
            session_id=self.session_id,
            instance=self.instance,
            workspace=self.workspace,
            name=self.name,
            connector=self.connector,
            tool=self.tool,
            kind=self.kind,
            risk=self.risk,
            arguments_digest=self.arguments_digest,
            policy=self.policy,
            preview=self.arguments,
            created_at=created,
            expires_at=created + max(1, round((self.expires - self.created) * 1000)),
        )


@dataclass(frozen=True, slots=True)
class ApprovalChange:
    """What a subscriber receives: ``added`` with the approval, or ``removed`` with its id and
    why (``answered``, ``expired``, ``cancelled``, ``invalidated``; ``elsewhere`` for another
    instance's approval that is no longer waiting)."""

    type: Literal["added", "removed"]
    approval: PendingApproval | None = None
    id: str = ""
    why: str = ""


class ApprovalBroker:
    """Pending approvals of every browser-approved session of one process.

    Usage::

        broker = ApprovalBroker(expiry=600.0)
        session = await host.open(workspace, approver=broker.approver(workspace=str(workspace)))
        for pending in broker.pending():
            broker.decide(pending.id, "allow_once", digest=pending.arguments_digest)

    Args:
        expiry: seconds an approval waits (> 0).
        clock: see :data:`Clock`; :meth:`sweep` expires what is due by it.
        store: opens the shared store (see :data:`StoreOpener`); None keeps approvals in this
            process only.
        wakeups: how answers and changes reach the other instances (default in process).
        recheck: seconds (> 0) after which a waiter re-reads its row without a wake-up.
        instance: the id stored as the waiter's instance (default this process's).

    Use it from one event loop; with a store, run :meth:`run` in the background while it serves.
    """

    def __init__(
        self,
        *,
        expiry: float = 600.0,
        clock: Clock = time.time,
        store: StoreOpener | None = None,
        wakeups: Wakeups | None = None,
        recheck: float = 2.0,
        instance: str | None = None,
    ):
        if expiry <= 0:
            raise ValueError("expiry must be > 0 seconds")
        if recheck <= 0:
            raise ValueError("recheck must be > 0 seconds")
        self.expiry = expiry
        self.recheck = recheck
        self.instance = instance or instance_id()
        self.wakeups: Wakeups = wakeups or LocalWakeups()
        self._opener = store
        self._store: ApprovalStore | None = None
        self._remote: dict[str, PendingApproval] = {}
        self._clock = clock
        self._pending: dict[str, PendingApproval] = {}
        self._parked: dict[_CallKey, PendingApproval] = {}
        self._orphans: set[str] = set()  # rows of parked approvals dropped in sync code, to remove
        self._subscribers: set[MemoryObjectSendStream[ApprovalChange]] = set()
        self._loop: EventLoopToken | None = None
        self._loop_thread: int | None = None

    # -- the runtime's side ----------------------------------------------------------------

    def approver(self, *, workspace: str, patience: float | None = None, announce: Announce | None = None) -> Approver:
        """An approver for sessions of ``workspace``: each request waits for :meth:`decide`
        (``patience`` and ``announce`` as for :meth:`wait`).

        The approver returns the answer, or raises ApprovalExpiredError (``approval_expired``)
        when the approval expired unanswered, ApprovalPendingError (``approval_pending``) when
        ``patience`` ran out first."""

        async def approve(request: ApprovalRequest) -> ApprovalAnswer:
            return await self.wait(request, workspace=workspace, patience=patience, announce=announce)

        return approve

    async def wait(
        self,
        request: ApprovalRequest,
        *,
        workspace: str,
        patience: float | None = None,
        announce: Announce | None = None,
    ) -> ApprovalAnswer:
        """Add a pending approval for ``request`` and wait for its answer (see :meth:`approver`).

        Args:
            request: the call asking.
            workspace: its workspace path (shown, and part of what makes a call identical).
            patience: seconds (> 0) to wait before leaving the approval open (*parked*: still
                listed and answerable until it expires) and raising ApprovalPendingError; the
                identical request made later (same session, workspace, kind, name, arguments
                digest and policy fingerprint) resumes that approval: it gets the answer given
                meanwhile at once, else waits again. None waits until answered or expired.
            announce: see :data:`Announce`.

        Raises:
            ApprovalExpiredError: ``approval_expired`` when nobody answered by its expiry.
            ApprovalStaleError: ``approval_stale`` when :meth:`invalidate` ended it (the policy
                changed while it waited).
            ApprovalPendingError: ``approval_pending`` (``details.approval_id``) when ``patience``
                ran out first.
        """
        if patience is not None and patience <= 0:
            raise ValueError("patience must be > 0 seconds")
        if self._loop is None:
            self._loop, self._loop_thread = anyio.lowlevel.current_token(), threading.get_ident()
        key: _CallKey = (
            request.session_id,
            workspace,
            request.kind,
            request.name,
            request.arguments_digest,
            request.policy,
        )
        await self._remove_orphans()
        resumed = await self._resume(key)
        if resumed is not None:
            return await self._wait_again(resumed, request, key, patience, announce)
        now = round(self._clock() * 1000) / 1000
        pending = PendingApproval(
            id=f"apr_{secrets.token_hex(12)}",
            session_id=request.session_id,
            workspace=workspace,
            name=request.name,
            connector=request.connector,
            tool=request.tool,
            kind=request.kind,
            arguments=dict(request.arguments),
            arguments_digest=request.arguments_digest,
            policy=request.policy,
            risk=request.risk,
            created=now,
            expires=now + self.expiry,
            instance=self.instance,
        )
        if self._opener is None:
            return await self._wait(pending, request, key=key, patience=patience, announce=announce)
        async with self.wakeups.watch(f"approval:{pending.id}") as watch:
            pending._wake = watch.wake
            try:
                store = await self._open()
                pending._version = await anyio.to_thread.run_sync(store.state_version)
                await anyio.to_thread.run_sync(store.add, pending.to_row())
            except CanonicalStateUnavailable as exc:
                logger.warning("approval %s waits in this process only: %s", pending.id, exc.message)
                return await self._wait(pending, request, key=key, patience=patience, announce=announce)
            pending._shared = True
            await self.wakeups.notify(CHANGED_TOPIC)
            try:
                return await self._wait(
                    pending, request, key=key, patience=patience, announce=announce, store=store, watch_wait=watch.wait
                )
            finally:  # its row was removed as the wait ended (unless it was parked)
                if not pending._parked:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        await self.wakeups.notify(CHANGED_TOPIC)

    async def _resume(self, key: _CallKey) -> PendingApproval | None:
        """The parked approval of the identical call, if it can still be answered (one that
        expired or was invalidated is dropped: the call asks anew)."""
        parked = self._parked.pop(key, None)
        if parked is None:
            return None
        parked._parked = False
        if parked.expires > self._clock() and not parked._invalidated and parked.id in self._pending:
            return parked
        await self._drop(parked, "invalidated" if parked._invalidated else "expired")
        return None

    async def _wait_again(
        self,
        pending: PendingApproval,
        request: ApprovalRequest,
        key: _CallKey,
        patience: float | None,
        announce: Announce | None,
    ) -> ApprovalAnswer:
        if not pending._shared:
            return await self._wait(pending, request, key=key, patience=patience, announce=announce)
        async with self.wakeups.watch(f"approval:{pending.id}") as watch:
            pending._wake = watch.wake
            store = await self._open()
            # the identical call (its policy fingerprint included) asks again: what counts now is
            # that nothing is committed while it waits from here
            try:
                pending._version = await anyio.to_thread.run_sync(store.state_version)
            except CanonicalStateUnavailable:
                pending._version = None
            try:
                return await self._wait(
                    pending, request, key=key, patience=patience, announce=announce, store=store, watch_wait=watch.wait
                )
            finally:
                if not pending._parked:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        await self.wakeups.notify(CHANGED_TOPIC)

    async def _drop(self, pending: PendingApproval, why: str) -> None:
        """Remove a parked approval that nobody waits on (its row too)."""
        if pending._shared:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                with contextlib.suppress(CanonicalStateUnavailable):
                    store = await self._open()
                    await anyio.to_thread.run_sync(store.remove, pending.id)
                await self.wakeups.notify(CHANGED_TOPIC)
        if self._pending.pop(pending.id, None) is not None:
            self._publish(ApprovalChange("removed", id=pending.id, why=why))

    async def _remove_orphans(self) -> None:
        if not self._orphans or self._store is None:
            return
        orphans, self._orphans = self._orphans, set()
        with contextlib.suppress(CanonicalStateUnavailable):
            for approval_id in orphans:
                await anyio.to_thread.run_sync(self._store.remove, approval_id)
        await self.wakeups.notify(CHANGED_TOPIC)

    async def discard_parked(self) -> None:
        """Remove every parked approval (its call will not be made again: the process stops)."""
        parked, self._parked = list(self._parked.values()), {}
        for pending in parked:
            pending._parked = False
            await self._drop(pending, "cancelled")

    async def _open(self) -> ApprovalStore:
        if self._store is None:
            assert self._opener is not None
            self._store = await anyio.to_thread.run_sync(self._opener)
        return self._store

    async def _until_answered(
        self,
        pending: PendingApproval,
        store: ApprovalStore,
        watch_wait: Callable[[float], Awaitable[bool]],
        patience: float | None = None,
    ) -> bool:
        """Re-read the row until it holds an answer, the approval ends here (invalidated), or it
        expires; woken early by a notify of its topic. Returns whether ``patience`` seconds ran
        out first (each reading comes before that check: an answer already stored is taken)."""
        give_up = math.inf if patience is None else time.monotonic() + patience
        while not pending._answered.is_set():
            remaining = pending.expires - self._clock()
            if remaining <= 0:
                pending._expired = True
                return False
            try:
                row = await anyio.to_thread.run_sync(store.get, pending.id)
            except CanonicalStateUnavailable:
                pass  # unreadable for now: look again after the next wake-up or recheck
            else:
                if row is None:
                    pending._expired = True  # swept: nobody can answer it any more
                    return False
                if row.decision == "deny":
                    pending._answer = "deny"
                    return False
                if row.decision is not None:
                    # an allow counts only if nothing was committed since the call asked (on any
                    # instance: this one's commits also invalidate() at once, another's only move
                    # the store's change counter), as a commit here ends the wait
                    try:
                        moved = await anyio.to_thread.run_sync(store.state_version) != pending._version
                    except CanonicalStateUnavailable:
                        moved = True  # cannot tell: fail closed
                    if moved:
                        pending._invalidated = True
                    else:
                        pending._answer = cast(ApprovalAnswer, row.decision)
                    return False
            if pending._answered.is_set():
                return False
            left = give_up - time.monotonic()
            if left <= 0:
                return True
            await watch_wait(min(self.recheck, max(remaining, 0.001), left))
        return False

    async def _wait(
        self,
        pending: PendingApproval,
        request: ApprovalRequest,
        *,
        key: _CallKey,
        patience: float | None = None,
        announce: Announce | None = None,
        store: ApprovalStore | None = None,
        watch_wait: Callable[[float], Awaitable[bool]] | None = None,
    ) -> ApprovalAnswer:
        if pending.id not in self._pending:  # a resumed approval is listed already
            self._pending[pending.id] = pending
            self._publish(ApprovalChange("added", approval=pending, id=pending.id))
        if announce is not None:
            announce(pending)
        why = "cancelled"
        try:
            if store is None or watch_wait is None:
                with anyio.move_on_after(math.inf if patience is None else patience) as patient:
                    with anyio.move_on_after(max(0.0, pending.expires - self._clock())):
                        await pending._answered.wait()
                out_of_patience = patient.cancelled_caught
            else:
                out_of_patience = await self._until_answered(pending, store, watch_wait, patience)
            if out_of_patience and pending._answer is None and not (pending._expired or pending._invalidated):
                pending._parked = True
                self._parked[key] = pending
                why = "parked"
                raise ApprovalPendingError(
                    f"the approval of {request.name} is still open: the identical call made again takes its answer",
                    details={"approval_id": pending.id},
                )
            if pending._invalidated:
                why = "invalidated"
                raise ApprovalStaleError(
                    f"the policy changed while the approval of {request.name} waited: the call asks again",
                    details={"approval_id": pending.id, "field": "policy"},
                )
            if pending._answer is None or pending._expired:
                why = "expired"
                raise ApprovalExpiredError(
                    f"nobody answered the approval of {request.name} within {self.expiry:g} s",
                    details={"approval_id": pending.id},
                )
            why = "answered"
            return pending._answer
        finally:
            if why != "parked":
                if store is not None:  # the row goes first: once "removed" is said, no answer may land
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        with contextlib.suppress(CanonicalStateUnavailable):
                            await anyio.to_thread.run_sync(store.remove, pending.id)
                if self._pending.pop(pending.id, None) is not None:
                    self._publish(ApprovalChange("removed", id=pending.id, why=why))

    # -- the person's side -----------------------------------------------------------------

    def pending(self) -> list[PendingApproval]:
        """Every approval still waiting (expired ones are swept first), oldest first."""
        self.sweep()
        waiting = (p for p in self._pending.values() if not p._answered.is_set())
        return sorted(waiting, key=lambda p: p.created)

    def get(self, approval_id: str) -> PendingApproval:
        """One waiting approval. Raises NotFoundError (``not_found``) for none of that id."""
        self.sweep()
        pending = self._pending.get(approval_id)
        if pending is None or pending._answered.is_set():
            raise NotFoundError(f"no pending approval {approval_id[:60]!r}", details={"approval_id": approval_id[:60]})
        return pending

    def decide(
        self, approval_id: str, answer: str, *, digest: str | None = None, policy: str | None = None
    ) -> PendingApproval:
        """Answer a waiting approval (once); returns it.

        Args:
            answer: one of :data:`ANSWERS`.
            digest / policy: what the person was shown; when given, they must still match.

        Raises:
            ValidationError: ``validation_error`` for another answer (``details.field`` ``answer``).
            NotFoundError: ``not_found`` when nothing of that id waits (answered, expired, never).
            ApprovalStaleError: ``approval_stale`` when ``digest`` or ``policy`` no longer match;
                the approval keeps waiting.
            RuntimeError: the approval is shared (in the store): answer it with :meth:`answer`.
        """
        if answer not in ANSWERS:
            raise ValidationError(f"answer must be one of {', '.join(ANSWERS)}", details={"field": "answer"})
        pending = self.get(approval_id)
        if pending._shared:
            raise RuntimeError("a shared approval is answered through the store: use answer()")
        for what, given, held in (("digest", digest, pending.arguments_digest), ("policy", policy, pending.policy)):
            if given is not None and given != held:
                raise ApprovalStaleError(
                    f"the approval's {what} no longer matches the waiting call",
                    details={"approval_id": pending.id, "field": what},
                )
        pending._answer = answer
        pending._answered.set()
        return pending

    async def listing(self) -> list[PendingApproval]:
        """Every approval still waiting, oldest first: with a store, those of every instance
        (read from the store, expired rows swept first; arguments as their redacted preview),
        plus any that wait in this process only; else :meth:`pending`.

        Raises:
            CanonicalStateUnavailable: ``canonical_state_unavailable`` when the store cannot be read.
        """
        local = self.pending()
        if self._opener is None:
            return local
        store = await self._open()
        await self._remove_orphans()
        now = round(self._clock() * 1000)
        await anyio.to_thread.run_sync(lambda: store.sweep(now=now))
        rows = await anyio.to_thread.run_sync(lambda: store.pending(now=now))
        listed = [PendingApproval.from_row(row) for row in rows]
        listed += [p for p in local if not p._shared]
        return sorted(listed, key=lambda p: (p.created, p.id))

    async def answer(
        self, approval_id: str, answer: str, *, digest: str | None = None, policy: str | None = None
    ) -> PendingApproval:
        """Answer a waiting approval once, whichever instance's call waits for it; returns it.

        Without a store, or for an approval that waits in this process only, this is
        :meth:`decide`. Otherwise the answer is written to the store by compare-and-set (only
        while the row is undecided and unexpired, and ``digest``/``policy``, when given, match
        it), then ``approval:<id>`` is notified so the waiter re-reads its row at once.

        Raises:
            ValidationError: ``validation_error`` for another answer (``details.field`` ``answer``).
            NotFoundError: ``not_found`` when nothing of that id waits (answered, expired, never).
            ApprovalStaleError: ``approval_stale`` when ``digest`` or ``policy`` no longer match.
            CanonicalStateUnavailable: ``canonical_state_unavailable``.
        """
        if answer not in ANSWERS:
            raise ValidationError(f"answer must be one of {', '.join(ANSWERS)}", details={"field": "answer"})
        local = self._pending.get(approval_id)
        if self._opener is None or (local is not None and not local._shared):
            return self.decide(approval_id, answer, digest=digest, policy=policy)
        store = await self._open()
        now = round(self._clock() * 1000)
        row = await anyio.to_thread.run_sync(
            lambda: store.decide(approval_id, answer, digest=digest, policy=policy, now=now)
        )
        await self.wakeups.notify(f"approval:{approval_id}")
        await self.wakeups.notify(CHANGED_TOPIC)
        return PendingApproval.from_row(row)

    def invalidate(self) -> None:
        """End every waiting approval as stale: the policy it was asked under changed (a committed
        mutation; its call is denied, ``sourcedFrom`` ``approval_stale``, and a retry asks under
        the new policy). Safe to call from any thread, e.g. a ``ConnectorService.on_committed``
        listener running in a request's worker thread."""
        if self._loop is None:
            return  # nothing has ever waited
        if threading.get_ident() == self._loop_thread:
            self._invalidate_now()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nothing waits any more
                anyio.from_thread.run_sync(self._invalidate_now, token=self._loop)

    def _forget_parked(self, pending: PendingApproval, why: str) -> None:
        """Drop a parked approval in sync code; its row goes on the next async step."""
        self._parked = {k: p for k, p in self._parked.items() if p is not pending}
        pending._parked = False
        if pending._shared:
            self._orphans.add(pending.id)
        if self._pending.pop(pending.id, None) is not None:
            self._publish(ApprovalChange("removed", id=pending.id, why=why))

    def _invalidate_now(self) -> None:
        for pending in list(self._pending.values()):
            if pending._parked:
                self._forget_parked(pending, "invalidated")
            elif not pending._answered.is_set():
                pending._invalidated = True
                pending._answered.set()
                if pending._wake is not None:
                    pending._wake()

    def sweep(self) -> None:
        """Expire every approval whose expiry has passed by the clock (its call is denied)."""
        now = self._clock()
        for pending in list(self._pending.values()):
            if pending._parked and pending.expires <= now:  # nobody waits on it: it goes
                self._forget_parked(pending, "expired")
            elif pending.expires <= now and not pending._answered.is_set():
                pending._expired = True
                pending._answered.set()
                if pending._wake is not None:
                    pending._wake()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow the other instances' approvals until cancelled (a no-op without a store): on
        every wake-up of :data:`CHANGED_TOPIC` (and every ``recheck`` seconds while anyone
        subscribes: a process without shared wake-ups, such as a stdio gateway, is seen that late) re-read the store and publish ``added`` for a row of another instance that
        came and ``removed`` (why ``elsewhere``) for one that went. A store that cannot be read
        (or opened) is logged and tried again on the next round; this never raises.
        ``task_group.start(broker.run)`` returns once it is watching."""
        if self._opener is None:
            task_status.started()
            await anyio.sleep_forever()
        async with self.wakeups.watch(CHANGED_TOPIC) as watch:
            task_status.started()
            while True:
                woken = await watch.wait(self.recheck)
                if woken or self._subscribers:
                    try:
                        await self._follow()
                    except Exception as exc:  # a background follower must never end the app's lifespan
                        logger.warning("could not read the other instances' approvals: %s", exc)

    async def _follow(self) -> None:
        store = await self._open()
        now = round(self._clock() * 1000)
        rows = await anyio.to_thread.run_sync(lambda: store.pending(now=now))
        current = {r.approval_id: r for r in rows if r.approval_id not in self._pending}
        for gone in [i for i in self._remote if i not in current]:
            del self._remote[gone]
            self._publish(ApprovalChange("removed", id=gone, why="elsewhere"))
        for approval_id, row in current.items():
            if approval_id not in self._remote:
                self._remote[approval_id] = PendingApproval.from_row(row)
                self._publish(ApprovalChange("added", approval=self._remote[approval_id], id=approval_id))

    # -- change stream ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[MemoryObjectReceiveStream[ApprovalChange]]:
        """A stream of :class:`ApprovalChange` from now on, until the block exits (or the
        subscriber falls :data:`SUBSCRIBER_BUFFER` changes behind: the stream then ends)."""
        send, receive = anyio.create_memory_object_stream[ApprovalChange](SUBSCRIBER_BUFFER)
        self._subscribers.add(send)
        try:
            with receive:
                yield receive
        finally:
            self._subscribers.discard(send)
            send.close()

    def _publish(self, change: ApprovalChange) -> None:
        for send in list(self._subscribers):
            try:
                send.send_nowait(change)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.discard(send)
                send.close()
