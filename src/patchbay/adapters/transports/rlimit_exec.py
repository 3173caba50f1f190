"""A tiny launcher that runs a stdio server under setrlimit bounds.

The SDK spawns a stdio server itself and offers no hook between fork and exec, so when a connector
has resource limits, and on Linux always (to tie the server's life to Patchbay's), Patchbay spawns
this launcher instead::

    python -I -S .../rlimit_exec.py [--cpu-seconds N] [--address-space-bytes N] [--open-files N] \\
        [--parent-pid N] -- /resolved/server arg...

With limits it forks once; the child applies them with ``setrlimit`` (soft and hard) and
``execve``\\ s the server with exactly the environment the launcher was given, nothing expanded.
Without limits it ``execve``\\ s the server in place. The launcher stays the process-group leader,
never reads the server's stdin or stdout, relays its stderr byte for byte, forwards ``SIGTERM``,
``SIGINT`` and ``SIGHUP`` to it, and exits with its status (``128 + signal`` for a signal). When a
configured limit explains an abnormal exit, the last line of stderr is a marker such as
``patchbay: server stopped by its cpu_seconds limit (2 s)``; :func:`limit_from_marker` trusts only
the last line. With ``--parent-pid`` (Linux) the launcher and the server get ``SIGKILL`` when
Patchbay dies (exit status 125 if it was gone already); spawn it from the event loop's thread, never
from a worker thread that may exit, since the death signal follows the spawning thread.

It imports a few standard-library modules only and runs with ``-I -S``, so nothing in the server's
environment (``PYTHONPATH``, ``PYTHONHOME``...) can change it.

Design: docs/security.md
"""

from __future__ import annotations

import os
import select
import signal
import sys

__all__ = ["LIMIT_NAMES", "MARKER_PREFIX", "launcher_argv", "limit_from_marker", "main", "marker_line"]

LIMIT_NAMES = ("cpu_seconds", "address_space_bytes", "open_files")
"""The limit names, as in :class:`patchbay.core.models.ResourceLimits` and in the marker line."""
MARKER_PREFIX = "patchbay: server stopped by its "
_UNITS = {"cpu_seconds": "s", "address_space_bytes": "bytes", "open_files": "files"}
_FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP")
_TAIL_BYTES = 8192
_MEMORY_WORDS = (b"memoryerror", b"cannot allocate memory", b"out of memory", b"allocation failed", b"bad_alloc")
_FILES_WORDS = (b"too many open files", b"emfile")
_MEMORY_SIGNALS = ("SIGSEGV", "SIGABRT", "SIGBUS")
_COERCED_LC_CTYPE = (b"C.UTF-8", b"C.utf8", b"UTF-8")


def launcher_argv(
    command: str,
    args: list[str] | tuple[str, ...] = (),
    *,
    cpu_seconds: int | None = None,
    address_space_bytes: int | None = None,
    open_files: int | None = None,
    parent_pid: int | None = None,
    python: str | None = None,
) -> list[str]:
    """The argv that runs ``command *args`` through this launcher under the given limits.

    Args:
        command: the resolved executable path (it is ``execve``\\ d, never looked up on PATH).
        args: its arguments, passed as they are.
        cpu_seconds / address_space_bytes / open_files: positive limits; ``None`` = not limited.
        parent_pid: the pid of the process spawning the launcher (``os.getpid()``): on Linux the
            server then dies with it (``PR_SET_PDEATHSIG``), even when it is SIGKILLed.
        python: the interpreter to run the launcher with; default ``sys.executable``.

    Raises:
        RuntimeError: when there is no interpreter path to run the launcher with.
    """
    interpreter = python or sys.executable
    if not interpreter:
        raise RuntimeError("no Python interpreter path (sys.executable is empty) to run the limit launcher")
    argv = [interpreter, "-I", "-S", os.path.abspath(__file__)]
    for option, value in (
        ("--cpu-seconds", cpu_seconds),
        ("--address-space-bytes", address_space_bytes),
        ("--open-files", open_files),
        ("--parent-pid", parent_pid),
    ):
        if value is not None:
            argv += [option, str(int(value))]
    return [*argv, "--", command, *args]


def marker_line(limit: str, value: int) -> str:
    """The line the launcher writes when ``limit`` (one of :data:`LIMIT_NAMES`) stopped the server."""
    return f"{MARKER_PREFIX}{limit} limit ({value} {_UNITS[limit]})"


def limit_from_marker(stderr_text: str) -> str | None:
    """The limit named by the launcher's marker, if it is the last non-empty line of ``stderr_text``.

    Returns one of :data:`LIMIT_NAMES`, or None.
    """
    lines = [line for line in stderr_text.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith(MARKER_PREFIX):
        return None
    name = lines[-1][len(MARKER_PREFIX) :].split(" ", 1)[0]
    return name if name in LIMIT_NAMES else None


# -- the launcher process ---------------------------------------------------------------------


def _given_environ() -> dict[bytes, bytes]:
    """The environment this process was started with, before Python changed ``os.environ``."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            raw = handle.read()
    except OSError:  # pragma: no cover - not Linux
        env = dict(os.environb)
        env.pop(b"__PYVENV_LAUNCHER__", None)
        # Coercion only ever sets one of these values, and only when LC_ALL is unset; an explicit
        # LC_CTYPE with the same value is indistinguishable here and is dropped as well.
        if b"LC_ALL" not in env and env.get(b"LC_CTYPE") in _COERCED_LC_CTYPE:
            del env[b"LC_CTYPE"]
        return env
    env = {}
    for entry in raw.split(b"\0"):
        key, sep, value = entry.partition(b"=")
        if sep and key:
            env.setdefault(key, value)
    return env


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int | None) -> None:
    """Ask the kernel for SIGKILL when our parent dies, then make sure it has not died already.

    ``PR_SET_PDEATHSIG`` survives ``execve`` (for a binary that is not set-user-ID) but not
    ``fork``, so the launcher and the server it forks each set it. Linux only; elsewhere nothing.

    Raises:
        _ParentGone: the parent had already exited before the request took effect.
    """
    if parent_pid is None or not sys.platform.startswith("linux"):
        return
    import ctypes  # Linux only, and only when asked: keeps the launcher's start-up small

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    # The parent may have died between fork and prctl: then we were re-parented already and
    # the death signal will never come.
    if os.getppid() != parent_pid:
        raise _ParentGone


class _ParentGone(Exception):
    pass


def _set_limit(which: str, soft: int, hard: int) -> None:
    import resource  # POSIX only; this module stays importable elsewhere for its helpers

    which_id = getattr(resource, which)
    _, current_hard = resource.getrlimit(which_id)
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
        soft = min(soft, hard)
    resource.setrlimit(which_id, (soft, hard))


def _exec_child(
    options: _Options,
    env: dict[bytes, bytes],
    stderr_fd: int,
    close: tuple[int, ...] | list[int],
    mask: set[int | signal.Signals],
    ignored: tuple[int, ...] | list[int],
    launcher: int | None,
) -> None:
    """In the forked child: restore signals, move stderr, apply the limits, tie its life to the
    launcher's (``launcher``: its pid, when the launcher itself is tied to Patchbay's), exec.
    Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        for name in (*_FORWARDED, "SIGCHLD", "SIGPIPE", "SIGXFSZ"):
            signum = getattr(signal, name)
            signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)
        os.dup2(stderr_fd, 2)
        for fd in close:
            os.close(fd)
        if options.cpu_seconds is not None:
            # SIGXCPU at the soft limit; the kernel's SIGKILL one second later if it is ignored.
            _set_limit("RLIMIT_CPU", options.cpu_seconds, options.cpu_seconds + 1)
        if options.address_space_bytes is not None:
            _set_limit("RLIMIT_AS", options.address_space_bytes, options.address_space_bytes)
        if options.open_files is not None:
            _set_limit("RLIMIT_NOFILE", options.open_files, options.open_files)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _die_with_parent(launcher)
        os.execve(options.command[0], options.command, env)
    except _ParentGone:
        os._exit(125)
    except BaseException as exc:  # nothing may escape a forked child
        os.write(2, f"patchbay: could not start {options.command[0]}: {exc}\n".encode(errors="replace"))
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _explain(options: _Options, status: int, cpu_used: float, tail: bytes) -> str | None:
    """The limit that explains an abnormal end with wait ``status``, if any."""
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if signum is None and os.WEXITSTATUS(status) == 0:
        return None
    if options.cpu_seconds is not None and (
        signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_used >= options.cpu_seconds - 0.01)
    ):
        return "cpu_seconds"
    lowered = tail.lower()
    if options.address_space_bytes is not None and any(word in lowered for word in _MEMORY_WORDS):
        return "address_space_bytes"
    if options.open_files is not None and any(word in lowered for word in _FILES_WORDS):
        return "open_files"
    if options.address_space_bytes is not None and signum in {getattr(signal, name) for name in _MEMORY_SIGNALS}:
        return "address_space_bytes"
    return None


class _Relay:
    """Copies the server's stderr to ours and keeps the last bytes for :func:`_explain`."""

    def __init__(self) -> None:
        self.tail = bytearray()
        self.open = True

    def feed(self, data: bytes) -> None:
        self.tail += data
        del self.tail[:-_TAIL_BYTES]
        view = memoryview(data)
        while self.open and view:
            try:
                view = view[os.write(2, view) :]
            except OSError:  # our reader is gone: keep draining so the server never blocks
                self.open = False


class _Options:
    """The parsed command line: the limits (None = not limited) and the command to exec."""

    def __init__(self, command: list[str], limits: dict[str, int | None]):
        self.command = command
        self.cpu_seconds = limits["cpu_seconds"]
        self.address_space_bytes = limits["address_space_bytes"]
        self.open_files = limits["open_files"]
        self.parent_pid = limits["parent_pid"]

    @property
    def limited(self) -> bool:
        return any(getattr(self, name) is not None for name in LIMIT_NAMES)


class _UsageError(Exception):
    pass


def _parse(argv: list[str] | tuple[str, ...]) -> _Options:
    """``[--cpu-seconds N] [--address-space-bytes N] [--open-files N] [--parent-pid N] -- command [args...]``."""
    limits: dict[str, int | None] = dict.fromkeys((*LIMIT_NAMES, "parent_pid"))
    index = 0
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        name = option[2:].replace("-", "_") if option.startswith("--") else ""
        if name not in limits or index + 1 >= len(argv):
            raise _UsageError(f"unknown option or missing value: {option}")
        try:
            value = int(argv[index + 1])
        except ValueError:
            raise _UsageError(f"{option} needs an integer, not {argv[index + 1]!r}") from None
        if value <= 0:
            raise _UsageError(f"{option} must be positive")
        limits[name] = value
        index += 2
    command = list(argv[index + 1 :])
    if not command:
        raise _UsageError("no command given after --")
    return _Options(command, limits)


def main(argv: list[str] | tuple[str, ...] | None = None) -> int:
    """Run the launcher; returns the exit status to use (the server's, ``128 + signal`` for a signal)."""
    try:
        options = _parse(sys.argv[1:] if argv is None else argv)
    except _UsageError as exc:
        os.write(
            2,
            f"rlimit_exec: {exc}\nusage: rlimit_exec [--cpu-seconds N] [--address-space-bytes N] "
            "[--open-files N] [--parent-pid N] -- command [args...]\n".encode(),
        )
        return 2
    env = _given_environ()
    try:
        _die_with_parent(options.parent_pid)
    except _ParentGone:
        return 125
    except OSError as exc:
        os.write(2, f"patchbay: could not tie {options.command[0]} to its parent: {exc}\n".encode(errors="replace"))
        return 126
    if not options.limited:
        return _exec_in_place(options, env)
    err_r, err_w = os.pipe()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    child = 0

    def forward(signum: int, _frame: object) -> None:
        if child > 0:
            try:
                os.kill(child, signum)
            except ProcessLookupError:
                pass

    # Signals stay blocked across the fork, so neither side handles one before it is ready.
    # Python ignores SIGPIPE/SIGXFSZ itself (the SDK's spawn had reset them to the default);
    # any other signal found ignored here was ignored by whoever started us.
    ignored = [
        getattr(signal, name) for name in _FORWARDED if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN
    ]
    forwarded = [getattr(signal, name) for name in _FORWARDED if getattr(signal, name) not in ignored]
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [*forwarded, signal.SIGCHLD])
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    for signum in forwarded:
        signal.signal(signum, forward)
    launcher = os.getpid() if options.parent_pid is not None else None  # read before the fork
    try:
        child = os.fork()
    except OSError as exc:
        os.write(2, f"patchbay: could not start {options.command[0]}: {exc}\n".encode(errors="replace"))
        return 126
    if child == 0:
        _exec_child(options, env, err_w, (err_r, err_w, wake_r, wake_w), mask, ignored, launcher)
    os.close(err_w)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    relay = _Relay()
    readers = [err_r, wake_r]
    while True:
        ready, _, _ = select.select(readers, [], [])
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 512):
                        break
                except BlockingIOError:
                    break
        if err_r in ready:
            data = os.read(err_r, 65536)
            if data:
                relay.feed(data)
            else:
                readers.remove(err_r)
        pid, status, usage = os.wait4(child, os.WNOHANG)
        if pid:
            break
    # What the server wrote just before it died; descendants that keep writing are not waited for.
    if err_r in readers:
        os.set_blocking(err_r, False)
        for _ in range(64):
            try:
                data = os.read(err_r, 65536)
            except BlockingIOError:
                break
            if not data:
                break
            relay.feed(data)
    limit = _explain(options, status, usage.ru_utime + usage.ru_stime, bytes(relay.tail))
    if limit is not None and relay.open:
        prefix = b"" if not relay.tail or relay.tail.endswith(b"\n") else b"\n"
        try:
            os.write(2, prefix + (marker_line(limit, getattr(options, limit)) + "\n").encode())
        except OSError:
            pass
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _exec_in_place(options: _Options, env: dict[bytes, bytes]) -> int:
    """Without limits there is nothing to watch: become the server (same pid, same group), with
    the signal dispositions Python changed at start-up put back. Returns only on failure."""
    for name in ("SIGPIPE", "SIGXFSZ"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execve(options.command[0], options.command, env)
    except OSError as exc:
        os.write(2, f"patchbay: could not start {options.command[0]}: {exc}\n".encode(errors="replace"))
        return 127 if isinstance(exc, FileNotFoundError) else 126


if __name__ == "__main__":
    os._exit(main())
