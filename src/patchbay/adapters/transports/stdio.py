"""stdio transport: a server process whose stdin/stdout carry newline-delimited JSON-RPC.

Contract:

* The command is run directly (``execve`` of the resolved executable), never through a shell. A
  missing executable fails with ``command_not_found`` before anything is spawned; an exec failure
  is ``spawn_failed``.
* stderr is read continuously into a ring buffer of the last ``stderr_tail_bytes`` bytes,
  redacted when read.
* The server runs in its own process group with the SDK's minimal environment plus the connector's
  bindings. On exit stdin is closed, the server gets :data:`PROCESS_EXIT_GRACE` seconds, then the
  whole group is SIGTERMed and SIGKILLed; shutdown is shielded and every wait in it is bounded.
* With resource limits, and on Linux always, the server is spawned through
  :mod:`patchbay.adapters.transports.rlimit_exec` (:attr:`StdioLink.limit_exceeded` reads its
  marker), so it dies with this process.

Design: docs/egress.md
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import psutil
from anyio.abc import Process
from anyio.streams.stapled import StapledByteStream
from mcp.client.stdio import get_default_environment

from patchbay.adapters.transports.rlimit_exec import launcher_argv, limit_from_marker
from patchbay.adapters.transports.sdk_private import TransportStreams
from patchbay.adapters.transports.socket import ndjson_streams
from patchbay.core.errors import ConfigError, ErrorCode, ProbeError
from patchbay.core.models import ResourceLimits, StdioTarget
from patchbay.core.redaction import redact_text

__all__ = ["StderrTail", "StdioLink", "open_stdio", "process_group_alive", "resolve_command", "workspace_cwd"]

PROCESS_EXIT_GRACE = 2.0
"""Seconds a server gets to exit on its own after its stdin closed (the SDK's value)."""
_GROUP_TERM_GRACE = 1.0
_GROUP_REAP_GRACE = 3.0
_GROUP_POLL = 0.02


class StderrTail:
    """The last ``limit`` bytes a server wrote to stderr (a ring buffer)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._buffer = bytearray()
        self.total_bytes = 0

    def feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        self._buffer += data
        overflow = len(self._buffer) - self.limit
        if overflow > 0:
            del self._buffer[:overflow]

    def text(self, known_secrets: tuple[str, ...] = ()) -> str:
        """The tail decoded as UTF-8 (lossy) and redacted.

        When older bytes were dropped, the buffer starts in the middle of a line, possibly in the
        middle of a secret whose recognisable prefix (``token=``, ``sk-``) is gone; that partial
        first line is dropped so redaction never sees an unrecognisable fragment.
        """
        data = bytes(self._buffer)
        if self.total_bytes > len(data):
            newline = data.find(b"\n")
            data = data[newline + 1 :] if newline >= 0 else b""
        return redact_text(data.decode("utf-8", errors="replace"), known_secrets)

    async def pump(self, fd: int) -> None:
        """Read ``fd`` until EOF; meant to run as a task for the life of the connection."""
        while True:
            await anyio.wait_readable(fd)
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                return
            self.feed(data)

    def drain(self, fd: int) -> None:
        """Read what ``fd`` already holds without waiting (the last words of a dying server).

        Bounded (64 reads of 64 KiB), so a writer that escaped the group cannot keep it spinning.
        """
        for _ in range(64):
            try:
                data = os.read(fd, 65536)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            self.feed(data)


@dataclass
class StdioLink:
    """A live stdio connection: the SDK streams plus the child's identity and stderr tail."""

    streams: TransportStreams
    stderr: StderrTail
    pgid: int | None = None
    """The server's process group id, or None if the child was gone before we saw it.

    It is the pid of the process spawned: the server itself, or, with limits, the
    ``rlimit_exec`` launcher, which leads the group the server and its children run in."""
    command: str = ""
    extra: dict[str, object] = field(default_factory=dict)
    limits: ResourceLimits | None = None
    """The setrlimit bounds the server runs under (None: no launcher, no limits)."""
    stderr_closed: anyio.Event | None = field(default=None, repr=False)
    """Set when stderr reached EOF (every process holding the pipe is gone) or the link closed."""
    process: Process | None = field(default=None, repr=False)
    """The spawned process (its ``returncode`` is the exit status once it has been reaped)."""

    @property
    def http_status(self) -> None:
        return None

    def stderr_tail(self, known_secrets: tuple[str, ...] = ()) -> str:
        """The redacted stderr tail, ``known_secrets`` masked."""
        return self.stderr.text(known_secrets)

    def limit_exceeded(self) -> str | None:
        """The limit that stopped the server, as far as stderr has been read so far.

        Returns ``"cpu_seconds"``, ``"address_space_bytes"`` or ``"open_files"`` when the launcher's
        marker line is the last line of stderr, else None (also when no limits were set). Reliable
        once the link has closed (the pipe is drained then) or :meth:`wait_limit_exceeded` returned;
        while the server is alive it is None. A server that prints the marker itself can only
        misname why it stopped; it is never treated as anything but a stopped server.
        """
        if self.limits is None or not self.limits.any:
            return None
        return limit_from_marker(self.stderr.text())

    async def wait_limit_exceeded(self, grace: float = 2.0) -> str | None:
        """Like :meth:`limit_exceeded`, after waiting up to ``grace`` seconds for stderr's EOF.

        Use it when a call failed because the connection dropped: the server's stdout closes as
        it dies, possibly before the launcher has written its marker and exited.
        """
        if self.limits is None or not self.limits.any:
            return None
        if self.stderr_closed is not None:
            with anyio.move_on_after(grace):
                await self.stderr_closed.wait()
        return self.limit_exceeded()


def workspace_cwd(workspace: Path, relative: str) -> Path:
    """The real directory a stdio server runs in: ``workspace / relative`` with symlinks resolved.

    Raises:
        ConfigError: ``invalid_config`` (field ``cwd``) when a symlink leads outside the workspace
            (cwd must be inside the workspace).
    """
    root = workspace.resolve()
    real = (root / relative).resolve() if relative else root
    if real != root and not real.is_relative_to(root):
        raise ConfigError("cwd", f"{relative!r} resolves to {real}, outside the workspace {root}")
    return real


def resolve_command(command: str, env_path: str | None = None, base: Path | None = None) -> str:
    """Resolve ``command`` to an executable path the way ``execvp`` would, without a shell.

    A relative path with a separator (``./server.sh``) is taken relative to ``base`` (the
    server's working directory), not to the current directory of this process.

    Raises:
        ProbeError: ``command_not_found`` when no such executable exists on PATH / at the path,
            ``spawn_failed`` when it exists but is not executable.
    """
    if os.sep in command or (os.altsep and os.altsep in command):
        path = Path(command).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.exists():
            raise ProbeError(
                f"command not found: {command}", code=ErrorCode.COMMAND_NOT_FOUND, details={"command": command}
            )
        if path.is_dir() or not os.access(path, os.X_OK):
            raise ProbeError(
                f"command is not executable: {command}", code=ErrorCode.SPAWN_FAILED, details={"command": command}
            )
        return str(path)
    found = shutil.which(command, path=env_path if env_path is not None else os.environ.get("PATH"))
    if found is None:
        raise ProbeError(
            f"command not found on PATH: {command}", code=ErrorCode.COMMAND_NOT_FOUND, details={"command": command}
        )
    return found


def process_group_alive(pgid: int) -> bool:
    """Whether any process is still in group ``pgid`` (signal 0; only ESRCH proves it gone)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _stop(process: Process, pgid: int) -> None:
    """The spec's shutdown sequence: close stdin, give the server ``PROCESS_EXIT_GRACE`` seconds
    to exit on its own, then SIGTERM/SIGKILL its whole group (bounded waits; run shielded)."""
    assert process.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    # Polling returncode, not process.wait(): that also waits for stdout EOF, which a grandchild
    # holding the pipe would delay.
    await _wait_until(lambda: process.returncode is None, PROCESS_EXIT_GRACE)
    await _kill_group(pgid)
    await _wait_until(lambda: process.returncode is None, _GROUP_REAP_GRACE)


async def _close_process(process: Process) -> None:
    with anyio.CancelScope(shield=True):
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.aclose()
        if process.returncode is None:  # pragma: no cover - the group kill above made it exit
            with contextlib.suppress(ProcessLookupError):
                process.kill()


def _group_members(pgid: int) -> list[psutil.Process]:
    """The processes whose process group is ``pgid`` (zombies included)."""
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
    return members


def _group_running(pgid: int) -> bool:
    """Whether a not-yet-dead (non-zombie) process is in group ``pgid``."""
    if not process_group_alive(pgid):
        return False
    for proc in _group_members(pgid):
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


def _reap_adopted_zombies(pgid: int) -> None:
    """Reap dead members of the group that were re-parented to us (we are PID 1 or a subreaper).

    Never the group leader: it is the child we spawned, and the event loop's child watcher must
    be the one to collect its exit status.
    """
    me = os.getpid()
    for proc in _group_members(pgid):
        with contextlib.suppress(psutil.Error, ChildProcessError, OSError):
            if proc.pid != pgid and proc.ppid() == me and proc.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(proc.pid, os.WNOHANG)


async def _wait_until(predicate_false: Callable[[], bool], seconds: float) -> bool:
    """Poll until ``predicate_false()`` is False, at most ``seconds``; True if it became False."""
    with anyio.move_on_after(seconds):
        while predicate_false():
            await anyio.sleep(_GROUP_POLL)
        return True
    return False


async def _kill_group(pgid: int) -> None:
    """SIGTERM whatever is left in the group, wait briefly, then SIGKILL; then wait for reaping.

    Every wait is bounded. Killed grandchildren are orphans, so their parent is init (or the
    nearest subreaper), and until it reaps them they still count for ``kill(-pgid, 0)``; some
    container inits reap only every second or so, hence the separate, bounded reap wait.
    """
    if not process_group_alive(pgid):
        return
    if _group_running(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        if not await _wait_until(lambda: _group_running(pgid), _GROUP_TERM_GRACE):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            await _wait_until(lambda: _group_running(pgid), _GROUP_TERM_GRACE)

    def unreaped() -> bool:
        _reap_adopted_zombies(pgid)
        return process_group_alive(pgid)

    await _wait_until(unreaped, _GROUP_REAP_GRACE)


_DIES_WITH_PARENT = sys.platform.startswith("linux")
"""Whether servers are tied to this process's life (``PR_SET_PDEATHSIG`` through the launcher)."""


@asynccontextmanager
async def open_stdio(
    target: StdioTarget,
    *,
    workspace: Path,
    env: dict[str, str] | None = None,
    stderr_tail_bytes: int = 16 * 1024,
    limits: ResourceLimits | None = None,
) -> AsyncIterator[StdioLink]:
    """Spawn ``target`` and yield a :class:`StdioLink` whose streams an ``mcp.Client`` can use.

    Args:
        target: the validated command, args and workspace-relative cwd.
        workspace: the canonical workspace root; the child runs in ``workspace / target.cwd``.
        env: extra environment variables, merged over the SDK's minimal inherited set (HOME, PATH,
            ...); Patchbay's own environment is not passed on.
        stderr_tail_bytes: bytes of stderr kept.
        limits: setrlimit bounds for the server; when any is set the command runs through the
            ``rlimit_exec`` launcher (POSIX only), see the module docstring.

    Raises:
        ProbeError: ``command_not_found``, ``spawn_failed`` (not executable, exec failed, bad cwd,
            limits asked for where ``setrlimit`` does not exist).
    """
    try:
        cwd = workspace_cwd(workspace, target.cwd)
    except ConfigError as exc:
        raise ProbeError(exc.message, code=ErrorCode.INVALID_CONFIG, details={"field": "cwd"}) from None
    if not cwd.is_dir():
        raise ProbeError(
            f"working directory does not exist: {cwd}", code=ErrorCode.SPAWN_FAILED, details={"field": "cwd"}
        )
    search_path = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    executable = resolve_command(target.command, search_path, base=cwd)
    command, args = executable, list(target.args)
    limited = limits is not None and limits.any
    if limited and sys.platform == "win32":  # pragma: no cover - no setrlimit on Windows
        raise ProbeError(
            "resource limits need setrlimit (POSIX)", code=ErrorCode.SPAWN_FAILED, details={"field": "limits"}
        )
    if limited or _DIES_WITH_PARENT:
        try:
            command, *args = launcher_argv(
                executable,
                args,
                cpu_seconds=limits.cpu_seconds if limits is not None and limited else None,
                address_space_bytes=limits.address_space_bytes if limits is not None and limited else None,
                open_files=limits.open_files if limits is not None and limited else None,
                # The server dies with this process even if it is SIGKILLed. The death signal
                # follows the spawning thread: anyio spawns on the event loop's own thread.
                parent_pid=os.getpid() if _DIES_WITH_PARENT else None,
            )
        except RuntimeError as exc:
            if limited:
                raise ProbeError(str(exc), code=ErrorCode.SPAWN_FAILED, details={"field": "limits"}) from None
            # No interpreter to run the launcher with (an embedded Python): spawn directly, untied.
    if not limited:
        limits = None
    child_env = get_default_environment() | (env or {})

    tail = StderrTail(stderr_tail_bytes)
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    errlog = os.fdopen(write_fd, "w")
    group: list[int] = []
    stderr_closed = anyio.Event()

    async def pump() -> None:
        await tail.pump(read_fd)
        stderr_closed.set()

    async def kill_leftovers() -> None:
        with anyio.CancelScope(shield=True):
            for pgid in group:
                await _kill_group(pgid)

    try:
        # Exit runs in reverse: the SDK's shutdown (stderr still pumped), then the group kill,
        # then what is left in the pipe is read and the pump is cancelled.
        async with AsyncExitStack() as stack:
            pump_group = await stack.enter_async_context(anyio.create_task_group())
            pump_group.start_soon(pump)
            stack.callback(pump_group.cancel_scope.cancel)
            stack.callback(stderr_closed.set)
            stack.callback(tail.drain, read_fd)
            stack.push_async_callback(kill_leftovers)
            try:
                process = await anyio.open_process(
                    [command, *args], env=child_env, cwd=str(cwd), stderr=errlog, start_new_session=True
                )
            except (OSError, ValueError) as exc:
                code = ErrorCode.COMMAND_NOT_FOUND if isinstance(exc, FileNotFoundError) else ErrorCode.SPAWN_FAILED
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise ProbeError(f"could not start {target.command}: {reason}", code=code) from None
            finally:
                # Only the child keeps the write end now, so EOF means every holder is gone.
                errlog.close()
            pgid = process.pid  # the leader of its own new session and process group
            group.append(pgid)
            stack.push_async_callback(_close_process, process)
            assert process.stdin is not None and process.stdout is not None
            streams = await stack.enter_async_context(
                ndjson_streams(
                    StapledByteStream(process.stdin, process.stdout), close=functools.partial(_stop, process, pgid)
                )
            )
            yield StdioLink(
                streams=streams,
                stderr=tail,
                pgid=pgid,
                command=target.command,
                limits=limits,
                stderr_closed=stderr_closed,
                process=process,
            )
    finally:
        os.close(read_fd)
