"""What the governed CLI commands (``patchbay call``, ``resource``, ``prompt``) share: a runtime
built from the workspace's projected snapshot, the approver that ``--yes`` or a terminal gives it,
one governed operation run on it, and how listings, sessions and governed failures are printed.

Approvals (DESIGN.md "Permissions"): ``--yes`` approves once; a terminal on stdin and stderr asks;
otherwise there is no approver and an ``ask`` decision is refused with ``approval_unavailable``.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import typer
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from patchbay.core.errors import NotFoundError, ToolCallError
from patchbay.interfaces.cli._context import emit_json, err_console, error_line, out_console, safe_text, state

__all__ = [
    "approver_for",
    "connector_runtime",
    "print_listing",
    "print_session",
    "project_snapshot",
    "report_failure",
    "run_governed",
    "run_runtime",
    "run_stoppable",
    "terminal_approver",
]

_T = TypeVar("_T")
_ANSWERS = {"o": "allow_once", "s": "allow_session", "d": "deny"}


def project_snapshot(service: Any, project: Path) -> Any:
    """The runtime config of workspace ``project``: its snapshot, built in memory from the store
    (the runtime reads nothing else). The workspace file is re-written too, for runtimes in other
    processes, but never read back here: anything that can write the workspace could replace it
    between the write and a read.

    Args:
        service: the :class:`~patchbay.control.connectors.ConnectorService`.
        project: the workspace directory.

    Raises:
        ConfigError: ``invalid_config`` (field ``path``) for an unusable workspace path.
    """
    prj = service.queries.project(project)
    service.projector.project(prj)
    return service.projector.runtime_config(prj)


def connector_runtime(name: str, project: Path) -> tuple[Any, Any]:
    """``(settings, config)`` for a runtime of ``project`` that will use connector ``name``, built
    as :func:`project_snapshot` builds it.

    Raises:
        NotFoundError: ``not_found``: no connector ``name``, or it is disabled (the message says
            how to enable it).
    """
    service = state.service()
    connector = service.get(name)
    if not connector.settings.enabled:
        raise NotFoundError(
            f"connector {name!r} is disabled; enable it with: patchbay connector enable {name}",
            details={"connector": name, "disabled": True},
        )
    return service.settings, project_snapshot(service, project)


def terminal_approver(question: Callable[[Any], tuple[Text, Text]]) -> Callable[[Any], Awaitable[str]]:
    """An approver that asks on the terminal (off the event loop): ``question(request)`` gives the
    line that describes the request and the prompt text; the answer is ``o`` (allow once), ``s``
    (allow for this session) or ``d`` (deny, the default). The end of input (Ctrl-D) is a denial,
    said as such: the person answered, just not in words."""

    async def approve(request: Any) -> str:
        def ask() -> str:
            described, prompt = question(request)
            err_console.print(described)
            try:
                choice = Prompt.ask(prompt, choices=list(_ANSWERS), default="d", console=err_console)
            except EOFError:
                err_console.print(Text("(end of input: denied)"))
                return _ANSWERS["d"]
            return _ANSWERS[choice]

        return await anyio.to_thread.run_sync(ask)

    return approve


async def _yes(request: Any) -> str:
    return "allow_once"


def approver_for(yes: bool, question: Callable[[Any], tuple[Text, Text]]) -> Any:
    """``--yes`` approves once; a terminal on stdin and stderr asks with :func:`terminal_approver`
    (``question``); otherwise None (headless)."""
    if yes:
        return _yes
    return terminal_approver(question) if sys.stdin.isatty() and sys.stderr.isatty() else None


def run_runtime(settings: Any, config: Any, operation: Callable[[Any], Awaitable[_T]]) -> _T:
    """``await operation(runtime)`` on a runtime without approver or session log option, closed
    afterwards; errors propagate (the CLI's error handling prints them)."""
    from patchbay.runtime import Runtime

    async def run() -> _T:
        async with Runtime(config, settings=settings) as runtime:
            return await operation(runtime)

    return _run_stoppable(run)


def run_stoppable(run: Callable[[], Awaitable[_T]]) -> _T:
    """``anyio.run(run)``, stopped by SIGTERM as by Ctrl-C (see :func:`_run_stoppable`)."""
    return _run_stoppable(run)


def _run_stoppable(run: Callable[[], Awaitable[_T]]) -> _T:
    """``anyio.run(run)``, where SIGTERM stops it the way Ctrl-C does: the operation is cancelled
    (a call in flight ends ``cancelled``), the runtime exits and stops its servers, then
    KeyboardInterrupt is raised (the CLI reports ``cancelled``)."""
    import signal

    stopped: list[int] = []
    results: list[_T] = []
    errors: list[Exception] = []

    async def main() -> None:
        operation = anyio.CancelScope()

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                async for signum in signals:
                    stopped.append(signum)
                    operation.cancel()
                    return

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            try:
                with operation:
                    results.append(await run())
            except Exception as exc:  # kept apart: the task group would wrap it in a group
                errors.append(exc)
            finally:
                group.cancel_scope.cancel()

    anyio.run(main)
    if errors:
        raise errors[0]
    if stopped or not results:
        raise KeyboardInterrupt
    return results[0]


def run_governed(
    settings: Any,
    config: Any,
    operation: Callable[[Any], Awaitable[_T]],
    *,
    as_json: bool,
    approver: Any = None,
    session: str | None = None,
    explain: Callable[[ToolCallError], tuple[ToolCallError, str | None]] | None = None,
) -> tuple[str, _T]:
    """``await operation(runtime)`` through the governed path of one runtime (appending to session
    ``session`` when given), closed afterwards.

    Args:
        as_json: how a failure is printed (see :func:`report_failure`).
        approver: from :func:`approver_for`; None is headless.
        explain: called with a failure before it is printed; returns the failure to print (it, or
            a new one that says more: :meth:`~patchbay.core.errors.PatchbayError.with_message`) and
            a hint line to print, or None.

    Returns:
        ``(session_id, result)``.

    Raises:
        typer.Exit: code 1 when the operation raised :class:`ToolCallError` (printed first).
    """
    from patchbay.runtime import Runtime

    async def run() -> tuple[str, _T | None, ToolCallError | None]:
        async with Runtime(config, settings=settings, approver=approver, session_id=session) as runtime:
            try:
                return runtime.session_id, await operation(runtime), None
            except ToolCallError as exc:
                return runtime.session_id, None, exc

    session_id, result, failure = _run_stoppable(run)
    if failure is not None:
        hint = None
        if explain is not None:
            failure, hint = explain(failure)
        report_failure(session_id, failure, as_json, hint=hint)
    return session_id, cast(_T, result)  # no failure: the operation returned it


def print_listing(table: Table, summary: str) -> None:
    """A listing: ``table`` on stdout when it has rows, then the one-line ``summary`` on stderr."""
    if table.row_count:
        out_console.print(table)
    err_console.print(summary)


def print_session(session_id: str) -> None:
    """The closing stderr line of a governed command: where its events are."""
    err_console.print(f"session {session_id}: patchbay events {session_id}")


def report_failure(session_id: str, failure: ToolCallError, as_json: bool, *, hint: str | None = None) -> None:
    """Print a governed failure as :func:`run_governed` does, then exit 1: ``{"session_id",
    "error"}`` with ``--json``; else ``error[<reason>]``, the server's stderr tail, ``hint`` and
    the session line."""
    if as_json:
        emit_json({"session_id": session_id, "error": failure.to_dict()})
    else:
        probe_code = failure.details.get("code")
        error_line(str(failure.reason), failure.message + (f" [{probe_code}]" if probe_code else ""))
        tail = str(failure.details.get("stderrTail") or "").rstrip()
        if tail:
            err_console.print("server stderr (tail):")
            for line in tail.splitlines()[-10:]:
                err_console.print(Text(f"  {safe_text(line)}"))
        if hint:
            err_console.print(Text(hint))
        print_session(session_id)
    raise typer.Exit(1)
