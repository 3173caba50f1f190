"""Upstream elicitation for 2026-07-28 hosts: ``InputRequiredResult`` rounds of one call.

That protocol era has no server-to-client requests: a server that needs its user's input answers
``tools/call`` with an ``InputRequiredResult`` (``input_requests`` and an opaque
``request_state``), and the host retries the same call carrying ``input_responses`` and the
state. The gateway's governed call cannot be replayed (it is one call in the event log, already
running upstream), so :class:`InputRounds` keeps it running in a task of its own between the
rounds: the first request starts it; each upstream elicitation for it ends the current round with
an ``InputRequiredResult`` (one request, key ``elicitation-<n>``; ``request_state`` a random
token naming the suspended call); the host's retry delivers its answer and waits for the next
elicitation or the result.

A retry that does not come within ``patience`` seconds answers the upstream server ``cancel``
(and the call's outcome is dropped when it ends); a host that cancels a round's request cancels
the call; stopping the gateway cancels every suspended call. A retry naming an unknown or finished
state, or answering with something else than an elicitation result, is refused with a
``validation_error`` result. Only modes the host declared are asked; the others are declined.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.shared.dispatcher import ProgressFnT

from patchbay.core.errors import ValidationError
from patchbay.interfaces.gateway.approvals import reporting_to_host
from patchbay.interfaces.gateway.elicitation import declared_modes
from patchbay.runtime.connection.elicitation import relaying_elicitation
from patchbay.runtime.connection.exchange import relaying_progress

__all__ = ["InputRounds", "RoundedCall"]

RoundedCall = Callable[[], Awaitable[types.CallToolResult]]
"""``await run()``: the governed call (run with this module's elicitation relay and progress sink)."""


@dataclass(eq=False)
class _Ask:
    key: str
    params: types.ElicitRequestParams
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: types.ElicitResult = field(default_factory=lambda: types.ElicitResult(action="cancel"))


@dataclass(eq=False)
class _Suspended:
    scope: anyio.CancelScope
    events: Any  # the memory object stream pair of _Ask | CallToolResult | BaseException
    asking: dict[str, _Ask] = field(default_factory=dict)
    progress: ProgressFnT | None = None  # the report_progress of the round waiting now
    abandoned: bool = False  # a retry never came: nobody will take the outcome

    async def report(self, progress: float, total: float | None, message: str | None) -> None:
        if self.progress is not None:  # between rounds nobody waits: dropped
            await self.progress(progress, total, message)


class InputRounds:
    """The suspended calls of 2026-07-28 hosts (module docstring).

    Args:
        patience: seconds a round waits for the host's retry before the upstream server is
            answered ``cancel``.
    """

    def __init__(self, patience: float):
        self.patience = patience
        self._calls: dict[str, _Suspended] = {}
        self._group: TaskGroup | None = None
        self._ready = anyio.Event()

    async def run(self) -> None:
        """Until cancelled: host the suspended calls (cancelled with it)."""
        async with anyio.create_task_group() as group:
            self._group = group
            self._ready.set()
            await anyio.sleep_forever()

    async def call(
        self, ctx: Any, params: types.CallToolRequestParams, run: RoundedCall
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One round of a ``tools/call`` from a 2026-07-28 host: a first request starts ``run``,
        a retry (``params.request_state``) answers the round before it.

        Raises:
            ValidationError: ``validation_error`` for a retry naming no suspended call, or whose
                ``input_responses`` are not elicitation results.
        """
        if params.request_state is None:
            return await self._start(ctx, run)
        suspended = self._calls.get(params.request_state)
        if suspended is None:
            raise ValidationError("request_state names no call waiting for input", details={"field": "requestState"})
        suspended.progress = ctx.session.report_progress
        for key, response in (params.input_responses or {}).items():
            ask = suspended.asking.pop(key, None)
            if ask is None:
                continue
            if not isinstance(response, types.ElicitResult):
                raise ValidationError("an input response is not an elicitation result", details={"field": key})
            ask.answer = response
            ask.answered.set()
        return await self._next(params.request_state, suspended)

    async def _start(self, ctx: Any, run: RoundedCall) -> types.CallToolResult | types.InputRequiredResult:
        await self._ready.wait()
        assert self._group is not None
        modes = declared_modes(ctx.session.client_capabilities)
        token = secrets.token_urlsafe(24)
        send, receive = anyio.create_memory_object_stream[Any](8)
        suspended = _Suspended(anyio.CancelScope(), (send, receive), progress=ctx.session.report_progress)
        counter = itertools.count(1)

        async def relay(params: types.ElicitRequestParams) -> types.ElicitResult:
            mode = "url" if isinstance(params, types.ElicitRequestURLParams) else "form"
            if mode not in modes:
                return types.ElicitResult(action="decline")
            ask = _Ask(f"elicitation-{next(counter)}", params)
            suspended.asking[ask.key] = ask
            await send.send(ask)
            with anyio.move_on_after(self.patience):
                await ask.answered.wait()
            if not ask.answered.is_set():
                suspended.abandoned = True
            suspended.asking.pop(ask.key, None)
            return ask.answer

        async def governed() -> None:
            try:
                with send, suspended.scope:
                    try:
                        with (
                            relaying_progress(suspended.report),
                            relaying_elicitation(relay),
                            reporting_to_host(suspended.report),
                        ):
                            outcome: Any = await run()
                    except Exception as exc:  # handed to the round that waits
                        outcome = exc
                    with contextlib.suppress(anyio.BrokenResourceError):  # no round waits any more
                        await send.send(outcome)
            finally:
                if suspended.abandoned or suspended.scope.cancel_called:
                    self._calls.pop(token, None)
                    receive.close()

        self._calls[token] = suspended
        self._group.start_soon(governed)
        return await self._next(token, suspended)

    async def _next(self, token: str, suspended: _Suspended) -> types.CallToolResult | types.InputRequiredResult:
        """Wait for the call's next elicitation (a new round) or its end."""
        receive = suspended.events[1]
        try:
            event = await receive.receive()
        except BaseException:
            # the host cancelled this round's request (or the gateway stops): the call ends
            suspended.scope.cancel()
            self._calls.pop(token, None)
            receive.close()
            raise
        finally:
            suspended.progress = None
        if isinstance(event, _Ask):
            request = types.ElicitRequest(params=event.params.model_copy(update={"meta": None}))
            return types.InputRequiredResult(input_requests={event.key: request}, request_state=token)
        self._calls.pop(token, None)
        receive.close()
        if isinstance(event, BaseException):
            raise event
        result: types.CallToolResult = event
        return result
