"""The in-flight byte budget: how many bytes of incoming messages all connections of a process may
buffer at once.

:class:`ByteBudget` is shared by the NDJSON readers of stdio and socket connectors
(:func:`patchbay.adapters.transports.socket.ndjson_streams`); each reader charges a
:class:`BudgetLease` for the incomplete message it holds and stops reading while the budget is
used up (backpressure: nothing is dropped). A call path run inside :func:`holding_results` gets a
:class:`ResultClaim` that keeps a big result charged until its call is done. HTTP transports are
not budgeted.

Design: docs/egress.md
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from contextlib import contextmanager

import anyio

__all__ = ["BudgetLease", "ByteBudget", "ResultClaim", "current_claim", "holding_results", "process_budget"]

_MIN_SHARE = 64 * 1024


class ByteBudget:
    """A budget of ``limit`` bytes shared by readers; inspectable for tests and diagnostics.

    Args:
        limit: bytes all readers together may hold (positive).
        share: bytes one reader may hold without owning the budget; default ``limit // 64``
            (at least 64 KiB, at most ``limit``).

    Attributes:
        held: bytes charged now.
        high_water: the most bytes ever charged at once.
        waits: how many times a reader had to wait (once per wait, however often it woke).

    Raises:
        ValueError: ``limit`` is not positive.
    """

    def __init__(self, limit: int, *, share: int | None = None):
        if limit <= 0:
            raise ValueError("a byte budget needs a positive limit")
        self.limit = limit
        self.share = min(limit, share if share is not None else max(_MIN_SHARE, limit // 64))
        self.held = 0
        self.high_water = 0
        self.waits = 0
        self._owner: BudgetLease | None = None
        self._holders: set[BudgetLease] = set()
        self._waiting: set[BudgetLease] = set()
        self._sleepers: dict[BudgetLease, anyio.Event] = {}

    def lease(self) -> BudgetLease:
        """A new reader's account (one per connection)."""
        return BudgetLease(self)

    def resize(self, limit: int) -> None:
        """Change the limit (the process's setting changed); waiting readers look again."""
        if limit <= 0:
            raise ValueError("a byte budget needs a positive limit")
        self.limit = limit
        self.share = min(limit, max(_MIN_SHARE, limit // 64))
        self._notify()

    def _may_take(self, lease: BudgetLease, total: int) -> bool:
        if total > self.share and self._owner is not lease:
            if self._owner is not None:
                return False
            self._owner = lease
        if self.held - lease.held + total <= self.limit:
            return True
        if self._owner is not lease:
            return False
        others = self._holders - {lease}
        return not others or others <= self._waiting

    async def _charge(self, lease: BudgetLease, total: int) -> None:
        if not self._may_take(lease, total):
            self.waits += 1
            if lease.held:
                self._waiting.add(lease)
                if self._owner is not None and self._owner is not lease:
                    self._wake(self._owner)  # this may be what the owner's deadlock rule waits for
            try:
                while not self._may_take(lease, total):
                    wakeup = self._sleepers[lease] = anyio.Event()
                    try:
                        await wakeup.wait()
                    finally:
                        if self._sleepers.get(lease) is wakeup:
                            del self._sleepers[lease]
            finally:
                self._waiting.discard(lease)
        self.held += total - lease.held
        lease.held = total
        if total:
            self._holders.add(lease)
        self.high_water = max(self.high_water, self.held)

    def _release(self, lease: BudgetLease) -> None:
        self.held -= lease.held
        lease.held = 0
        self._holders.discard(lease)
        if self._owner is lease:
            self._owner = None
        self._notify()

    def _wake(self, lease: BudgetLease) -> None:
        wakeup = self._sleepers.pop(lease, None)
        if wakeup is not None:
            wakeup.set()

    def _notify(self) -> None:
        sleepers, self._sleepers = self._sleepers, {}
        for wakeup in sleepers.values():
            wakeup.set()


class BudgetLease:
    """One reader's charge on a :class:`ByteBudget`.

    Usage (what the NDJSON reader does)::

        lease = budget.lease()
        await lease.hold(len(buffer))  # after each read, before the next
        ...  # a whole message was parsed and handed on
        lease.release()
        await lease.hold(len(rest))    # what is left of the next message
    """

    def __init__(self, budget: ByteBudget):
        self.budget = budget
        self.held = 0

    async def hold(self, total: int) -> None:
        """Hold ``total`` bytes in all (more or less than now), waiting while the budget is used
        up (see the module docstring). Cancellation leaves the charge as it was."""
        if total <= self.held:
            if total < self.held:
                self.budget.held -= self.held - total
                self.held = total
                if not total:
                    self.budget._release(self)
                else:
                    self.budget._notify()
            return
        await self.budget._charge(self, total)

    def release(self) -> None:
        """Give back everything this reader holds (its message was handed on, or it stopped)."""
        if self.held or self.budget._owner is self:
            self.budget._release(self)

    def park(self) -> None:
        """Keep the charge but stop growing: the lease's message is complete and kept by a
        :class:`ResultClaim`. It gives up being the owner, so another reader may grow a large
        message within what is left of the limit (and past it only once this is released)."""
        if self.budget._owner is self:
            self.budget._owner = None
            self.budget._notify()


class ResultClaim:
    """The charges of the big responses to one call's requests, kept until the call is done.

    Made by :func:`holding_results`; the NDJSON reader registers the call's requests
    (:meth:`register`) and parks the leases of their big responses here (:meth:`keep`).
    """

    def __init__(self) -> None:
        self.closed = False
        self._leases: list[BudgetLease] = []
        self._forget: list[Callable[[], None]] = []
        self._tickets: list[tuple[MutableMapping[Hashable, ResultClaim], Hashable]] = []

    @property
    def held(self) -> int:
        """Bytes kept now."""
        return sum(lease.held for lease in self._leases)

    def register(self, table: MutableMapping[Hashable, ResultClaim], request_id: Hashable) -> None:
        """Note that the request ``request_id`` of a connection (whose ``table`` maps request ids
        to claims) was sent under this claim. What the claim keeps is given back first: the call
        is waiting for another answer, and it must not wait for a reader while holding budget."""
        if self.closed:
            return
        self._give_back()
        table[request_id] = self
        self._tickets.append((table, request_id))

    def keep(self, lease: BudgetLease, forget: Callable[[], None] | None = None) -> bool:
        """Take over ``lease`` (a complete response's charge) until the call is done.

        Args:
            lease: the charge of the response.
            forget: run when the charge is given back, to drop the parsed response (the session's
                receive loop keeps its last message until the next one arrives).

        Returns:
            False when the call already ended: the caller releases the lease itself.
        """
        if self.closed:
            return False
        lease.park()
        self._leases.append(lease)
        if forget is not None:
            self._forget.append(forget)
        return True

    def release(self) -> None:
        """The call is done: give back every charge kept and forget its requests."""
        self.closed = True
        self._give_back(forget=True)
        for table, request_id in self._tickets:
            if table.get(request_id) is self:
                del table[request_id]
        self._tickets.clear()

    def _give_back(self, *, forget: bool = False) -> None:
        if forget:  # only once the call is done: before, its later rounds may still read them
            drops, self._forget = self._forget, []
            for drop in drops:
                drop()
        leases, self._leases = self._leases, []
        for lease in leases:
            lease.release()


_claim: contextvars.ContextVar[ResultClaim | None] = contextvars.ContextVar("patchbay_result_claim", default=None)


def current_claim() -> ResultClaim | None:
    """The claim of the call running in this task (None outside :func:`holding_results`)."""
    return _claim.get()


@contextmanager
def holding_results() -> Iterator[ResultClaim]:
    """Keep the budget charged for the big responses to the requests sent inside the block until
    the block ends (normally, by an error, a timeout or a cancellation). Nested blocks share the
    outer block's claim. Only transports framed by the NDJSON reader (stdio, socket) keep charges;
    for others the claim stays empty."""
    outer = _claim.get()
    if outer is not None and not outer.closed:  # a closed one came with a task that outlived it
        yield outer
        return
    claim = ResultClaim()
    token = _claim.set(claim)
    try:
        yield claim
    finally:
        _claim.reset(token)
        claim.release()


_process: ByteBudget | None = None


def process_budget(limit: int | None = None) -> ByteBudget:
    """The budget every connection of this process shares.

    Args:
        limit: bytes (the ``inflight_budget_bytes`` setting); given, it sets the size (the first
            call creates the budget with it); None: the current budget, 256 MiB if none yet.
    """
    global _process
    if _process is None:
        _process = ByteBudget(limit or 256 * 1024 * 1024)
    elif limit is not None and limit != _process.limit:
        _process.resize(limit)
    return _process
