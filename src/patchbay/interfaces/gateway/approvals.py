"""Ask decisions for gateway hosts: the person answers on the settings page, never the host.

An MCP host cannot be trusted to approve on the person's behalf, and under stdio there is no
terminal to ask in. A gateway's runtime therefore gets :meth:`GatewayApprovals.approver`; for an
``ask`` call it:

* ends the call ``approval_unavailable`` when no settings page runs to show the approval
  (``page()`` is None: no ``patchbay serve`` on this data home), with a hint saying how to allow
  the tool;
* else adds a pending approval to the broker, shared through the store (so the settings page of
  the ``patchbay serve`` on the same data home lists and answers it) and waits up to ``patience``
  seconds, telling the host every ``progress_interval`` seconds (as ``notifications/progress``,
  when its request carried a progress token) where the approval waits;
* answered in time: the call goes on (allow) or is denied; else the call ends
  ``approval_pending`` naming the approval's URL (``<page>/ui#approval-<id>``), the approval stays
  open until it expires, and the identical call made again (same arguments) takes the answer
  (:meth:`~patchbay.runtime.calls.approvals.ApprovalBroker.wait`).

Never auto-approves, and never asks the host (no elicitation form a model could answer).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

import anyio
from mcp.shared.dispatcher import ProgressFnT

from patchbay.core.errors import ApprovalPendingError, ApprovalUnavailableError
from patchbay.runtime.calls.approvals import ApprovalBroker, PendingApproval
from patchbay.runtime.calls.permissions import ApprovalAnswer, ApprovalRequest, Approver

__all__ = ["GatewayApprovals", "PageLocator", "approval_url", "reporting_to_host"]

PageLocator = Callable[[], str | None]
"""``page() -> base URL | None``: where the settings page is served now (``http://host:port``),
None when no settings page runs."""

_HOST_PROGRESS: ContextVar[ProgressFnT | None] = ContextVar("patchbay_gateway_host_progress", default=None)

NO_PAGE_HINT = (
    "Start `patchbay serve` (its settings page shows the approval) and call again, or allow the tool "
    "with `patchbay grant`."
)


def approval_url(page: str, approval_id: str) -> str:
    """Where a person answers ``approval_id``: the settings page at its approval."""
    return f"{page.rstrip('/')}/ui#approval-{approval_id}"


@contextlib.contextmanager
def reporting_to_host(sink: ProgressFnT) -> Iterator[None]:
    """Within the block, an approval waited for reports its progress to ``sink(progress, total,
    message)`` (the host's request: a no-op unless it sent a progress token)."""
    token = _HOST_PROGRESS.set(sink)
    try:
        yield
    finally:
        _HOST_PROGRESS.reset(token)


class GatewayApprovals:
    """The approvals of a gateway's calls (see the module docstring).

    Args:
        broker: holds the pending approvals (give it the store, so the settings page of another
            process lists them).
        page: see :data:`PageLocator`; read at each ``ask``.
        patience: seconds (> 0) a call waits for the answer before it ends ``approval_pending``.
        progress_interval: seconds (> 0) between the progress reports while it waits.
    """

    def __init__(
        self, broker: ApprovalBroker, page: PageLocator, *, patience: float = 50.0, progress_interval: float = 5.0
    ):
        if patience <= 0 or progress_interval <= 0:
            raise ValueError("patience and progress_interval must be > 0 seconds")
        self.broker = broker
        self._page = page
        self.patience = patience
        self.progress_interval = progress_interval

    def approver(self, *, workspace: str) -> Approver:
        """The approver for a runtime of ``workspace``.

        It returns the person's answer, or raises ApprovalUnavailableError
        (``approval_unavailable``, ``details.hint``), ApprovalPendingError (``approval_pending``,
        ``details.approval_id`` and ``approval_url``) or ApprovalExpiredError
        (``approval_expired``)."""

        async def approve(request: ApprovalRequest) -> ApprovalAnswer:
            return await self._approve(request, workspace)

        return approve

    async def _approve(self, request: ApprovalRequest, workspace: str) -> ApprovalAnswer:
        page = self._page()
        if page is None:
            raise ApprovalUnavailableError(
                f"{request.name} needs the person's approval and no settings page runs to ask them",
                details={"hint": NO_PAGE_HINT},
            )
        sink = _HOST_PROGRESS.get()
        waiting: list[PendingApproval] = []
        announced = anyio.Event()

        def announce(pending: PendingApproval) -> None:
            waiting.append(pending)
            announced.set()

        async def report() -> None:
            assert sink is not None
            await announced.wait()
            where = approval_url(page, waiting[0].id)
            elapsed = 0.0
            while True:
                with contextlib.suppress(Exception):  # a host gone away must not end the wait
                    await sink(elapsed, None, f"waiting for the person's approval at {where}")
                await anyio.sleep(self.progress_interval)
                elapsed += self.progress_interval

        failure: Exception | None = None
        answer: ApprovalAnswer = "deny"
        async with anyio.create_task_group() as group:
            if sink is not None:
                group.start_soon(report)
            try:
                answer = await self.broker.wait(request, workspace=workspace, patience=self.patience, announce=announce)
            except Exception as exc:  # raised after the group: it would wrap it in an ExceptionGroup
                failure = exc
            finally:
                group.cancel_scope.cancel()
        if isinstance(failure, ApprovalPendingError):
            approval_id = str(failure.details.get("approval_id", ""))
            raise failure.with_details(approval_url=approval_url(page, approval_id)) from None
        if failure is not None:
            raise failure
        return answer
