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
* subscribers (:meth:`ApprovalBroker.subscribe`) receive ``added``/``removed`` changes; a
  subscriber that falls behind by more than :data:`SUBSCRIBER_BUFFER` changes is dropped (its
  stream ends) so it can never block a call.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.lowlevel import EventLoopToken
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from patchbay.core.errors import ApprovalExpiredError, ApprovalStaleError, NotFoundError, ValidationError
from patchbay.core.models import GrantKind
from patchbay.core.policy import Risk
from patchbay.runtime.calls.permissions import ApprovalAnswer, ApprovalRequest, Approver

__all__ = ["ANSWERS", "SUBSCRIBER_BUFFER", "ApprovalBroker", "ApprovalChange", "PendingApproval"]

ANSWERS: tuple[ApprovalAnswer, ...] = ("allow_once", "allow_session", "deny")
"""The answers :meth:`ApprovalBroker.decide` accepts."""

SUBSCRIBER_BUFFER = 256
"""Changes a subscriber may have unread before it is dropped."""

Clock = Callable[[], float]
"""``clock() -> float``: wall-clock seconds since the epoch (``time.time``; tests inject one)."""


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
    _answered: anyio.Event = field(default_factory=anyio.Event, repr=False)
    _answer: ApprovalAnswer | None = field(default=None, repr=False)
    _expired: bool = field(default=False, repr=False)
    _invalidated: bool = field(default=False, repr=False)


@dataclass(frozen=True, slots=True)
class ApprovalChange:
    """What a subscriber receives: ``added`` with the approval, or ``removed`` with its id and
    why (``answered``, ``expired``, ``cancelled``)."""

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

    Use it from one event loop.
    """

    def __init__(self, *, expiry: float = 600.0, clock: Clock = time.time):
        if expiry <= 0:
            raise ValueError("expiry must be > 0 seconds")
        self.expiry = expiry
        self._clock = clock
        self._pending: dict[str, PendingApproval] = {}
        self._subscribers: set[MemoryObjectSendStream[ApprovalChange]] = set()
        self._loop: EventLoopToken | None = None
        self._loop_thread: int | None = None

    # -- the runtime's side ----------------------------------------------------------------

    def approver(self, *, workspace: str) -> Approver:
        """An approver for sessions of ``workspace``: each request waits for :meth:`decide`.

        The approver returns the answer, or raises ApprovalExpiredError (``approval_expired``)
        when the approval expired unanswered."""

        async def approve(request: ApprovalRequest) -> ApprovalAnswer:
            return await self.wait(request, workspace=workspace)

        return approve

    async def wait(self, request: ApprovalRequest, *, workspace: str) -> ApprovalAnswer:
        """Add a pending approval for ``request`` and wait for its answer (see :meth:`approver`).

        Raises:
            ApprovalExpiredError: ``approval_expired`` when nobody answered by its expiry.
            ApprovalStaleError: ``approval_stale`` when :meth:`invalidate` ended it (the policy
                changed while it waited).
        """
        if self._loop is None:
            self._loop, self._loop_thread = anyio.lowlevel.current_token(), threading.get_ident()
        now = self._clock()
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
        )
        self._pending[pending.id] = pending
        self._publish(ApprovalChange("added", approval=pending, id=pending.id))
        why = "cancelled"
        try:
            with anyio.move_on_after(max(0.0, pending.expires - self._clock())):
                await pending._answered.wait()
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
        """
        if answer not in ANSWERS:
            raise ValidationError(f"answer must be one of {', '.join(ANSWERS)}", details={"field": "answer"})
        pending = self.get(approval_id)
        for what, given, held in (("digest", digest, pending.arguments_digest), ("policy", policy, pending.policy)):
            if given is not None and given != held:
                raise ApprovalStaleError(
                    f"the approval's {what} no longer matches the waiting call",
                    details={"approval_id": pending.id, "field": what},
                )
        pending._answer = answer
        pending._answered.set()
        return pending

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

    def _invalidate_now(self) -> None:
        for pending in list(self._pending.values()):
            if not pending._answered.is_set():
                pending._invalidated = True
                pending._answered.set()

    def sweep(self) -> None:
        """Expire every approval whose expiry has passed by the clock (its call is denied)."""
        now = self._clock()
        for pending in list(self._pending.values()):
            if pending.expires <= now and not pending._answered.is_set():
                pending._expired = True
                pending._answered.set()

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
