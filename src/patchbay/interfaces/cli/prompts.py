"""``patchbay prompt list | get``: a connector's MCP prompts from a terminal.

``get NAME PROMPT key=value ...`` checks the arguments against the prompt's declaration before
anything is sent (an unknown argument, or a required one missing or empty, is refused with
``validation_error``), expands the prompt and prints its messages, which are user messages from
``mcp:<connector>:<prompt>``. Quote multi-word values for the shell: ``city="San Francisco"``.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    err_console,
    handle_errors,
    one_line,
    out_console,
    safe_text,
)
from patchbay.interfaces.cli._runtime import (
    connector_runtime,
    print_listing,
    print_session,
    run_governed,
    run_runtime,
)
from patchbay.interfaces.cli.resources import PROJECT_OPTION, SESSION_OPTION

__all__ = ["app"]

app = typer.Typer(help="List a connector's MCP prompts, or expand one with arguments.", no_args_is_help=True)


@app.command("list")
@handle_errors
def list_prompts(
    name: str = typer.Argument(..., help="Connector name."),
    project: Path = PROJECT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List a connector's prompts (every page) with their arguments (* = required)."""
    settings, config = connector_runtime(name, project)
    prompts = list(run_runtime(settings, config, lambda runtime: runtime.list_prompts(name)))
    if as_json:
        emit_json({"connector": name, "prompts": [prompt.to_dict() for prompt in prompts]})
        return
    table = Table("prompt", "arguments", "description")
    for prompt in prompts:
        arguments = ", ".join(f"{a.name}{'*' if a.required else ''}" for a in prompt.arguments) or "-"
        table.add_row(safe_text(prompt.name), safe_text(arguments), one_line(prompt.description or "", 80))
    print_listing(table, f"{name}: {len(prompts)} prompts")


@app.command("get")
@handle_errors
def get_prompt(
    name: str = typer.Argument(..., help="Connector name."),
    prompt: str = typer.Argument(..., help="Prompt name."),
    arguments: list[str] = typer.Argument(None, help='Arguments as key=value (quote spaces: key="two words").'),
    project: Path = PROJECT_OPTION,
    session: str | None = SESSION_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Expand a prompt; its messages are printed as the user messages they become."""
    from patchbay.runtime.context.prompts import parse_prompt_arguments

    values = parse_prompt_arguments(arguments or [])
    settings, config = connector_runtime(name, project)
    session_id, expanded = run_governed(
        settings, config, lambda runtime: runtime.expand_prompt(name, prompt, values), as_json=as_json, session=session
    )
    if as_json:
        emit_json(
            {
                "session_id": session_id,
                "server": expanded.server,
                "prompt": expanded.prompt,
                "prompt_call_id": expanded.prompt_call_id,
                "arguments": expanded.arguments,
                "description": expanded.description,
                "messages": [
                    {"role": m.role, "server_role": m.server_role, "source": m.source, "content": m.content}
                    for m in expanded.messages
                ],
            }
        )
        return
    for message in expanded.messages:
        kind = message.content.get("type")
        body = message.text if message.text or kind in ("text", "resource") else f"[{kind} content; see --json]"
        out_console.print(Text(f"{message.role}: {safe_text(body)}"))
    err_console.print(Text(f"expanded from [mcp:{safe_text(expanded.server)}:{safe_text(expanded.prompt)}]"))
    print_session(session_id)
