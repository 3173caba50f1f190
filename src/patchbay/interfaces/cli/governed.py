"""``patchbay probe | tools | grant | call | events``: the governed path from a terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import typer
from rich.table import Table
from rich.text import Text

from patchbay.control.decisions import tool_signature
from patchbay.core.errors import ConfigError, FailureReason, PatchbayError, ToolCallError, ValidationError
from patchbay.core.models import RESOURCE_SUBJECT, GrantKind
from patchbay.core.names import tool_name_problem
from patchbay.core.validation import validate_tool_arguments
from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    err_console,
    handle_errors,
    one_line,
    out_console,
    safe_text,
    state,
)
from patchbay.interfaces.cli._runtime import approver_for, print_session, project_snapshot, run_governed

PROJECT_OPTION = typer.Option(
    None, "--project", help="Show decisions in this workspace's project (default: the global decisions)."
)


@handle_errors
def probe(
    name: str,
    project: Path = typer.Option(Path("."), "--project", help="Workspace the server runs in."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Connect for real (initialize, tools/list, resources/list), cache the catalog. Exit 0 only when ready.

    A disabled connector is probed too (to check it before enabling it), and the output says it is
    disabled and how to enable it: no runtime or gateway uses it until then. `--json` carries
    `enabled` and `warnings` (`[{"code": "disabled", "message", "hint"}]`, the connector status
    name; empty for an enabled connector)."""
    service = state.service()
    workspace = service.queries.project(project).path
    enabled = service.get(name).settings.enabled
    with err_console.status(f"probing {name}…", spinner="dots") if not as_json and err_console.is_terminal else _null():
        result = anyio.run(lambda: service.probe(name, workspace=Path(workspace)))
    warnings = [] if enabled else [_disabled_warning(name)]
    if as_json:
        emit_json(
            result.model_dump(mode="json", exclude={"tools", "resources"})
            | {"tools": [t.name for t in result.tools], "enabled": enabled, "warnings": warnings}
        )
    else:
        disabled = "" if enabled else "; connector disabled"
        out_console.print(f"{result.connector}: {result.state} ({result.duration_ms} ms{disabled})")
        for warning in warnings:
            out_console.print(Text(f"  {warning['message']} (enable: {warning['hint']})"))
        if result.state == "ready":
            info = result.server_info or {}
            out_console.print(
                safe_text(
                    f"  server: {info.get('name', '?')} {info.get('version', '')}  protocol {result.protocol_version}"
                )
            )
            out_console.print(f"  tools: {result.tool_count}  resources: {result.resource_count}")
            for diagnostic in result.diagnostics:
                if diagnostic.get("tool") is None:  # a list's paging
                    what = "warning"
                else:
                    what = "flagged" if diagnostic.get("problem") == "name" else "left out"
                out_console.print(Text(f"  {what}: {one_line(str(diagnostic.get('message', '')))}"))
        else:
            out_console.print(Text(f"  error[{result.code}]: {one_line(result.message or '')}"))
        if result.stderr_tail:
            out_console.print("  stderr (tail):")
            for line in result.stderr_tail.rstrip().splitlines()[-20:]:
                out_console.print(Text(f"    {safe_text(line)}"))
    if result.state != "ready":
        raise typer.Exit(1)


def _disabled_warning(name: str) -> dict[str, str]:
    """What ``probe`` says about a disabled connector."""
    return {
        "code": "disabled",
        "message": f"{name} is disabled: no runtime or gateway uses it until it is enabled",
        "hint": f"patchbay connector enable {name}",
    }


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@handle_errors
def tools(name: str, project: Path | None = PROJECT_OPTION, as_json: bool = JSON_OPTION) -> None:
    """List a connector's cached tools with their arguments and effective decision (probe first).

    `--json` gives each tool's whole input schema (`input_schema`)."""
    view = state.service().queries.tools(name, project=project)
    if as_json:
        emit_json(
            {
                "connector": view.connector.name,
                "project": view.project.model_dump() if view.project else None,
                "cache": view.cache,
                "tools": [t.__dict__ for t in view.tools],
                "unmatched_grants": [g.model_dump() for g in view.unmatched_grants],
                "resource_reads": vars(view.resource_reads),
                "prompt_grants": [g.model_dump() for g in view.prompt_grants],
            }
        )
        return
    if view.cache != "fresh":
        hint = "no cached tools" if view.cache == "missing" else "cached tools are stale (config changed)"
        err_console.print(f"{view.connector.name}: {hint}; run: patchbay probe {view.connector.name}")
    table = Table("tool", "decision", "source", "risk", "global", "project", "flag")
    for t in view.tools:
        decision = t.decision if t.visible else "hidden"
        risk = f"{t.risk} ({t.risk_reason})" if t.risk_reason else t.risk
        table.add_row(
            Text(tool_signature(t.canonical_name, t.input_schema)),
            decision,
            t.source,
            risk,
            t.global_grant or "-",
            t.project_grant or "-",
            "name" if t.name_flag else "-",
        )
    if view.tools:
        out_console.print(table)
    for t in view.tools:
        if t.name_flag:  # repr: an invisible character shows as an escape
            out_console.print(Text(f"flagged: {t.name!r}: its name {t.name_flag}"))
    reads = view.resource_reads
    out_console.print(f"resource reads: {reads.decision} ({reads.source})")
    for g in view.prompt_grants:
        out_console.print(Text(f"prompt {g.tool_name!r}: {g.decision} ({'project' if g.project_id else 'global'})"))
    for g in view.unmatched_grants:
        scope = "project" if g.project_id else "global"
        out_console.print(Text(f"grant matches no known tool: {g.tool_name} = {g.decision} ({scope})"))


@handle_errors
def grant(
    name: str,
    tool: str | None = typer.Argument(None, help="The server's tool name (not with --resources or --prompt)."),
    decision: str | None = typer.Argument(None, help="allow, ask or deny (a prompt: allow or deny)"),
    clear: bool = typer.Option(False, "--clear", help="Remove the grant so the tool inherits again."),
    resources: bool = typer.Option(
        False, "--resources", help="Grant the connector's resource reads (explicit includes), not a tool."
    ),
    prompt: str | None = typer.Option(
        None, "--prompt", help="Grant one prompt ('*': every prompt) of the connector: allow or deny."
    ),
    project: Path | None = typer.Option(
        None, "--project", help="Set the grant in this workspace's project (default: the global grant)."
    ),
    unknown_ok: bool = typer.Option(
        False,
        "--unknown-ok",
        help="Store a tool grant even when the probed catalog lacks the tool (it may come later).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Set or clear a tool, resource-read or prompt grant, globally or for one project.

    Tools, resource reads and prompts are separate key spaces: `grant NAME TOOL allow` never
    touches resource reads (`grant NAME --resources allow`) or prompts (`grant NAME --prompt P deny`).

    A tool name is checked against the connector's probed (cached, fresh) catalog: one it does not
    list is refused (`not_found`, with the closest names) unless `--unknown-ok`; without a probed
    catalog the grant is stored with a warning that the name could not be checked. `--json` says
    which (`tool_check`: `known`, `unknown` or `unchecked`).
    """
    service = state.service()
    scope = f"project {project}" if project else "global"
    kind: GrantKind = "tool"
    if resources or prompt is not None:
        if resources and prompt is not None:
            raise ConfigError("prompt", "give either --resources or --prompt, not both")
        if decision is not None:
            raise ConfigError("tool", "no tool name with --resources or --prompt: give only the decision")
        kind, decision = ("resource", tool) if resources else ("prompt", tool)
        subject = RESOURCE_SUBJECT if resources else cast(str, prompt)
    elif tool is None:
        raise ConfigError("tool", "missing: give a tool name (or --resources, or --prompt PROMPT)")
    else:
        subject = tool
    label = "resources" if kind == "resource" else f"prompt {subject}"
    if unknown_ok and (kind != "tool" or clear):
        raise ConfigError(
            "unknown_ok", "--unknown-ok goes with setting a tool grant: grant NAME TOOL DECISION --unknown-ok"
        )
    if clear:
        if decision is not None:
            raise ConfigError("decision", "give either a decision or --clear, not both")
        existed = service.clear_grant(name, subject, project=project, kind=kind)
        result: dict[str, Any] = {"connector": name, "kind": kind, "tool": subject, "cleared": existed, "scope": scope}
    else:
        if decision is None:
            choices = "allow or deny" if kind == "prompt" else "allow, ask or deny"
            raise ConfigError("decision", f"missing: give {choices} (or --clear)")
        g = service.grant(name, subject, decision, project=project, kind=kind, refuse_unknown=not unknown_ok)
        result = {
            "connector": name,
            "kind": kind,
            "tool": subject,
            "decision": g.decision,
            "scope": scope,
            "project_id": g.project_id,
        }
    if kind == "tool":
        try:  # the grant is saved; a failing read-back must not make the command report failure
            known: set[str] | None = {t.name for t in service.queries.tools(name, project=project).tools}
        except PatchbayError:
            known = None
        result["matches_known_tool"] = None if known is None else subject in known
    check = service.queries.check_tool_name(service.get(name), subject) if kind == "tool" and not clear else None
    if check is not None:
        result["tool_check"] = {"state": check.state, "cache": check.cache}
    if check is not None and check.state == "unchecked":
        why = "it was never probed" if check.cache == "missing" else "its configuration changed since its last probe"
        err_console.print(
            Text(
                f"warning: {subject!r} could not be checked against {name}'s tools ({why}); the grant is stored "
                f"and matches nothing until a probe lists the tool (check: patchbay probe {name})"
            )
        )
    if as_json:
        emit_json(result)
        return
    what = ("cleared" if result["cleared"] else "no grant to clear") if clear else result["decision"]
    out_console.print(
        Text(f"{name}.{subject}: {what} ({scope})" if kind == "tool" else f"{name} {label}: {what} ({scope})")
    )
    if check is not None and check.state == "unknown":  # stored with --unknown-ok
        err_console.print(
            Text(
                f"note: {subject!r} is not in {name}'s probed tools; the grant is kept but matches nothing until a "
                "probe lists the tool"
            )
        )


def _tool_question(request: Any) -> tuple[Text, Text]:
    """What a terminal asks before a tool runs."""
    described = Text.assemble(
        (safe_text(request.tool), "bold"),
        f" from connector {safe_text(request.connector)} wants to run (risk: {request.risk}) with arguments ",
        one_line(json.dumps(request.arguments, ensure_ascii=False), 2000),
    )
    problem = tool_name_problem(request.tool)
    if problem is not None:  # a lookalike of a tool you trust must not pass unnoticed
        described.append(Text(f"\nwarning: the tool's name {request.tool!r} {problem}", "bold"))
    return described, Text("Allow? [o]nce, for this [s]ession, [d]eny")


@handle_errors
def call(
    tool: str = typer.Argument(..., help="Canonical tool name: mcp.<connector>.<tool>"),
    arguments: str | None = typer.Argument(None, help="Tool arguments as a JSON object."),
    project: Path = typer.Option(Path("."), "--project", help="Workspace directory (default: current)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve once when the decision is ask."),
    session: str | None = typer.Option(None, "--session", help="Append to this session's event log."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Call a tool through the governed path; asks on the terminal when the decision is ask."""
    args = _parse_arguments(arguments)
    service = state.service()
    config = project_snapshot(service, project)

    def explain(failure: ToolCallError) -> tuple[ToolCallError, str | None]:
        failure = _explain_disabled(service, tool, failure, project)
        if failure.reason is FailureReason.APPROVAL_UNAVAILABLE and not yes:
            failure = failure.with_message(
                f"{tool[:200]} needs approval (its decision is ask) and there is no terminal to ask on: "
                "pass --yes to approve this call once"
            )
            connector, _, name = tool.removeprefix("mcp.").partition(".")
            if tool.startswith("mcp.") and connector and name:
                return (
                    failure,
                    f"hint: or allow it for good: patchbay grant {connector} {name} allow --project {project}",
                )
        if failure.reason is FailureReason.MCP_SERVER_UNAVAILABLE and failure.details.get("connector"):
            return failure, f"hint: patchbay probe {failure.details['connector']} --project {project}"
        return failure, None

    session_id, result = run_governed(
        service.settings,
        config,
        lambda runtime: runtime.call(tool, args),
        as_json=as_json,
        approver=approver_for(yes, _tool_question),
        session=session,
        explain=explain,
    )
    if as_json:
        emit_json(
            {
                "session_id": session_id,
                "tool_call_id": result.tool_call_id,
                "content": result.content,
                "structured_content": result.structured_content,
            }
        )
        return
    for block in result.content:
        if block.get("type") == "text":
            out_console.print(Text(safe_text(block.get("text", ""))))
        elif block.get("type") == "resource_link":
            out_console.print(
                Text(f"[resource link: {safe_text(str(block.get('uri')))} {safe_text(str(block.get('name') or ''))}]")
            )
        else:
            mime = block.get("mimeType") or (block.get("resource") or {}).get("mimeType") or ""
            out_console.print(Text(f"[{block.get('type')} content {mime}, {len(json.dumps(block))} bytes; see --json]"))
    print_session(session_id)


def _parse_arguments(text: str | None) -> dict[str, Any]:
    """Tool arguments from the command line: a JSON object, checked before anything is logged.

    Raises:
        ValidationError: ``validation_error`` (field ``arguments``).
    """
    if not text:
        return {}

    def no_constants(name: str) -> None:
        raise ValidationError(f"arguments: {name} is not valid JSON", details={"field": "arguments"})

    try:
        value = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"arguments: not valid JSON ({exc.msg} at position {exc.pos})", details={"field": "arguments"}
        ) from None
    except RecursionError:
        raise ValidationError("arguments: nested too deeply", details={"field": "arguments"}) from None
    return validate_tool_arguments(value)


def _explain_disabled(service: Any, tool: str, failure: ToolCallError, project: Path) -> ToolCallError:
    """``failure``, or for an ``unknown_tool`` failure of a connector that exists but is disabled
    one that says so; so for a tool the snapshot hides because a grant denies it (a denied
    tool is excluded from the snapshot)."""
    if failure.reason is not FailureReason.UNKNOWN_TOOL or not tool.startswith("mcp."):
        return failure
    name, _, original = tool[4:].partition(".")
    try:
        connector = service.get(name)
    except PatchbayError:
        return failure
    if not connector.settings.enabled:
        message = f"connector {name!r} is disabled; enable it with: patchbay connector enable {name}"
        return failure.with_message(message, connector=name)
    try:
        view = next((t for t in service.queries.tools(name, project=project).tools if t.name == original), None)
    except PatchbayError:
        return failure
    if view is not None and view.decision == "deny":
        why = view.source.replace("_", " ")
        return failure.with_message(
            f"{tool} is not in this workspace's runtime: {why} (see: patchbay tools {name} --project {project})",
            connector=name,
            source=view.source,
        )
    return failure


@handle_errors
def events(
    session_id: str,
    after_seq: int = typer.Option(0, "--after-seq", min=0, help="Show only the events after this seq."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Show at most this many events (default: all)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print a session's event log in order (find sessions with: patchbay sessions).

    With a PostgreSQL store the events come from its table, whichever instance wrote them, and
    their hash chain is checked (event_chain_broken when it does not verify)."""
    from patchbay.runtime.events import MAX_PAGE
    from patchbay.runtime.events.backend import session_logs
    from patchbay.runtime.events.log import session_log_path

    session_log_path(state.settings.sessions_dir, session_id)  # a bad id is validation_error
    logs = session_logs(state.settings)
    wanted = limit
    page = logs.page(session_id, after_seq=after_seq, limit=min(MAX_PAGE, wanted or MAX_PAGE))
    items = list(page.events)
    while page.has_more and (wanted is None or len(items) < wanted):
        step = MAX_PAGE if wanted is None else min(MAX_PAGE, wanted - len(items))
        page = logs.page(session_id, after_seq=page.next_after_seq, limit=step)
        items.extend(page.events)
    if as_json:
        emit_json({"session_id": session_id, "events": items})
        return
    for event in items:
        payload = json.dumps(event.get("payload", {}), ensure_ascii=False, separators=(",", ":"))
        if len(payload) > 160:
            payload = payload[:157] + "..."
        out_console.print(Text(f"{event['seq']:>4}  {event['ts']}  {event['type']:<28} {safe_text(payload)}"))
