"""The runtime behind a gateway, rebuilt when the workspace's projection changes.

A :class:`RuntimeOwner` holds one workspace's :class:`~patchbay.runtime.Runtime` for the gateways
that serve it (one over stdio; one per mode over HTTP), each runtime entered and exited by an
owner task of its own (anyio cancel scopes belong to the task that opened them). When told that
something was committed (:meth:`RuntimeOwner.changed`, from any thread: the control plane's
commit listener in the same process, :meth:`RuntimeOwner.follow` woken by a commit of another
instance on the same Redis (:mod:`~patchbay.interfaces.gateway.fanout`), or :meth:`RuntimeOwner.watch`
reading the store's change counter for commits of other processes: the fallback for a lost
wake-up, a degraded Redis or a process that announces nothing, such as the CLI), it loads the
projection again; when that differs from
the one it serves (a grant, a connector added, removed, disabled or enabled, a new cached
catalog), it applies it. When only policy changed (grants, include/exclude, the approval mode,
the cached catalog) the runtime takes it in place (:meth:`Runtime.reproject`): every connection
stays, and the gateways tell their hosts ``list_changed``. Otherwise (a connector added,
removed, enabled or disabled, or its target, options or credential bindings changed) it holds
the gateways' new requests (:meth:`Gateway.hold`), lets the calls running on the old runtime
finish (at most :data:`RETIRE_GRACE` seconds), exits it, enters a runtime of the new projection
in the same event-log session and hands it to every gateway
(:meth:`Gateway.use_runtime`: the held requests run on it, and hosts are told ``list_changed``).
A commit that leaves the projection as it was changes nothing. A new runtime restarts every
connection of the workspace (lazily, on first use, unless the connector is
``eager``/``keep_alive``).

Every runtime advertises elicitation to its servers: an elicitation made for a host's call is
relayed to that host, any other one is declined (:mod:`patchbay.interfaces.gateway.elicitation`).

A reload whose projection cannot be loaded (the store unavailable, a bad projection) keeps the
runtime it had and logs a warning; one whose new runtime cannot be entered serves the previous
projection again. The next change tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from anyio.lowlevel import EventLoopToken

from patchbay.adapters.wakeups import Wakeups
from patchbay.core.errors import PatchbayError
from patchbay.core.live_status import StatusRegistry
from patchbay.core.models import RuntimeConfig
from patchbay.core.settings import Settings
from patchbay.interfaces.gateway.elicitation import decline_elicitation
from patchbay.interfaces.gateway.fanout import PROJECTION_TOPIC
from patchbay.interfaces.gateway.server import Gateway
from patchbay.runtime import Runtime
from patchbay.runtime.calls.permissions import Approver

__all__ = ["RETIRE_GRACE", "ApproverFor", "ConfigSource", "RuntimeOwner"]

logger = logging.getLogger("patchbay.interfaces.gateway")

RETIRE_GRACE = 10.0
"""Seconds a replaced runtime waits for the calls running on it before it exits."""

ApproverFor = Callable[[str], Approver]
"""``approver_for(workspace) -> Approver``: who answers the ``ask`` calls of a workspace's runtime
(:meth:`patchbay.interfaces.gateway.approvals.GatewayApprovals.approver`)."""
_FOLLOW_WAIT = 3600.0
"""Seconds :meth:`RuntimeOwner.follow` waits per round (a wake-up ends the wait at once)."""

ConfigSource = Callable[[], RuntimeConfig]
"""``load() -> RuntimeConfig``: the workspace's projection as committed now (run in a worker
thread; may raise :class:`~patchbay.core.errors.PatchbayError`)."""


class RuntimeOwner:
    """One workspace's runtime for its gateways, reloaded on projection changes (module docstring).

    Usage::

        async with anyio.create_task_group() as group:
            owner = RuntimeOwner(settings, load)
            runtime = await owner.start(group)           # the first runtime, entered
            owner.add(Gateway(runtime, "direct"))
            group.start_soon(owner.watch, state_version, 2.0)
            await group.start(owner.follow, wakeups)     # other instances' commits, at once
            ...
            owner.close()                                 # every runtime exits

    Args:
        settings: passed to every runtime.
        load: see :data:`ConfigSource`.
        status: the live status registry the runtimes publish to (None: none).
        session_id: the event-log session every runtime of this owner appends to (default: a new
            one, kept across reloads).
        approver_for: see :data:`ApproverFor`; None: ``ask`` calls end ``approval_unavailable``.
    """

    def __init__(
        self,
        settings: Settings,
        load: ConfigSource,
        *,
        status: StatusRegistry | None = None,
        session_id: str | None = None,
        approver_for: ApproverFor | None = None,
    ):
        self.settings = settings
        self._approver_for = approver_for
        self._load = load
        self._status = status
        self._session_id = session_id
        self._gateways: list[Gateway] = []
        self._config: RuntimeConfig | None = None
        self._runtime: Runtime | None = None
        self._retire: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._tg: TaskGroup | None = None
        self._token: EventLoopToken | None = None
        self._loop_thread: int | None = None
        self._loop_scope = anyio.CancelScope()
        self._wanted = anyio.Event()
        self._reloads = 0

    @property
    def runtime(self) -> Runtime:
        """The runtime served now.

        Raises:
            RuntimeError: before :meth:`start`.
        """
        if self._runtime is None:
            raise RuntimeError("the RuntimeOwner is not started")
        return self._runtime

    @property
    def reloads(self) -> int:
        """How many times a runtime of a new projection replaced the one served."""
        return self._reloads

    def add(self, gateway: Gateway) -> None:
        """Hand every later runtime to ``gateway`` too (it serves :attr:`runtime` already)."""
        self._gateways.append(gateway)

    async def start(self, task_group: TaskGroup, *, config: RuntimeConfig | None = None) -> Runtime:
        """Load the projection (or take ``config``), enter its runtime in an owner task of
        ``task_group`` and start listening for changes there; returns the runtime.

        Raises:
            PatchbayError: what loading or entering the runtime raises (``invalid_config``...).
        """
        self._tg = task_group
        self._loop_thread = threading.get_ident()
        if config is None:
            config = await anyio.to_thread.run_sync(self._load)
        self._runtime, self._retire, self._done = await task_group.start(self._own, config)
        self._session_id = self._runtime.session_id
        self._config = config
        self._token = anyio.lowlevel.current_token()
        task_group.start_soon(self._reload_loop)
        return self._runtime

    async def _own(
        self, config: RuntimeConfig, *, task_status: TaskStatus[tuple[Runtime, anyio.Event, anyio.Event]]
    ) -> None:
        retire, done = anyio.Event(), anyio.Event()
        try:
            approver = self._approver_for(config.workspace) if self._approver_for is not None else None
            runtime = Runtime(
                config,
                settings=self.settings,
                session_id=self._session_id,
                status=self._status,
                approver=approver,
                # elicitation is advertised upstream; a host's call relays it, the rest is declined
                elicitation_handler=decline_elicitation,
            )
            async with runtime:
                task_status.started((runtime, retire, done))
                await retire.wait()
                with anyio.move_on_after(RETIRE_GRACE):
                    for gateway in self._gateways:
                        await gateway.drained(runtime)
        finally:
            done.set()

    def changed(self) -> None:
        """Something was committed: reload soon (coalesced; never blocks, callable from any
        thread, does nothing before :meth:`start` or after :meth:`close`)."""
        token = self._token
        if token is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wanted.set()
            return
        try:
            anyio.from_thread.run_sync(lambda: self._wanted.set(), token=token)
        except RuntimeError:
            pass  # the event loop is gone: nothing to reload

    async def _reload_loop(self) -> None:
        with self._loop_scope:
            while True:
                await self._wanted.wait()
                self._wanted = anyio.Event()
                await self.reload()

    async def reload(self) -> bool:
        """Load the projection now and, when it differs from the one served, apply it: in place
        when only policy changed (:meth:`Runtime.reproject`: no connection restarts), else by
        switching every gateway to a runtime of it; returns whether it changed anything (a
        failure is logged: False)."""
        if self._tg is None or self._runtime is None:
            raise RuntimeError("the RuntimeOwner is not started")
        try:
            config = await anyio.to_thread.run_sync(self._load)
        except PatchbayError as exc:
            logger.warning("gateway runtime reload failed; serving the previous projection: %s", exc.message)
            return False
        if config == self._config:
            return False
        if self._runtime.reproject(config):  # only policy changed: every connection stays
            self._config = config
            self._reloads += 1
            for gateway in self._gateways:
                gateway.use_runtime(self._runtime)
            return True
        for gateway in self._gateways:
            gateway.hold()
        # the event-log session is written by one runtime at a time: the old one exits first
        assert self._retire is not None and self._done is not None and self._config is not None
        self._retire.set()
        await self._done.wait()
        switched = True
        try:
            self._runtime, self._retire, self._done = await self._tg.start(self._own, config)
            self._config = config
            self._reloads += 1
        except Exception as exc:
            logger.warning("gateway runtime reload failed; serving the previous projection: %s", exc)
            self._runtime, self._retire, self._done = await self._tg.start(self._own, self._config)
            switched = False
        for gateway in self._gateways:
            gateway.use_runtime(self._runtime)
        return switched

    async def watch(self, state_version: Callable[[], Awaitable[int]], interval: float) -> None:
        """Until cancelled: read the store's change counter every ``interval`` seconds and call
        :meth:`changed` when it moved (a commit of another process: the CLI, a second serve).
        A reading that fails is skipped."""
        last: int | None = None
        while True:
            try:
                version = await state_version()
            except PatchbayError:
                version = None
            if version is not None:
                if last is not None and version != last:
                    self.changed()
                last = version
            await anyio.sleep(interval)

    async def follow(self, wakeups: Wakeups, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: call :meth:`changed` on every wake-up of
        :data:`~patchbay.interfaces.gateway.fanout.PROJECTION_TOPIC` (a commit announced by a
        :class:`~patchbay.interfaces.gateway.fanout.ChangeFanout` of this process or, through
        Redis, of another instance; also every re-subscription after Redis came back, since
        messages may have been lost). ``task_group.start(owner.follow, wakeups)`` returns once it
        watches; the caller runs ``wakeups.run`` for the other instances' wake-ups to arrive."""
        async with wakeups.watch(PROJECTION_TOPIC) as watch:
            task_status.started()
            while True:
                if await watch.wait(_FOLLOW_WAIT):
                    self.changed()

    def close(self) -> None:
        """Retire every runtime (each waits for its calls, then exits: its servers stop) and
        stop listening. The owner tasks end; the task group of :meth:`start` may then exit."""
        self._token = None
        self._loop_scope.cancel()
        if self._retire is not None:
            self._retire.set()
        for gateway in self._gateways:
            gateway.close()
