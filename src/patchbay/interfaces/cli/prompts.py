"""``patchbay prompt list | get``: a connector's MCP prompts from a terminal (seed 000 §8).

``get NAME PROMPT key=value ...`` checks the arguments against the prompt's declaration before
anything is sent (an unknown argument, or a required one missing or empty, is refused with
``validation_error``), expands the prompt and prints its messages, which are user messages from
``mcp:<connector>:<prompt>``. Quote multi-word values for the shell: ``city="San Francisco"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import typer
from rich.table import Table
from rich.text import Text

from patchbay.core.errors import ToolCallError
from patchbay.interfaces.cli._context import (
    JSON_OPTION,
    emit_json,
    err_console,
    handle_errors,
    one_line,
    out_console,
    safe_text,
)
from patchbay.interfaces.cli.resources import PROJECT_OPTION, SESSION_OPTION, report_failure, workspace_runtime

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
    from patchbay.runtime import Runtime

    settings, config = workspace_runtime(name, project)

    async def run() -> list[Any]:
        async with Runtime(config, settings=settings) as runtime:
            return list(await runtime.list_prompts(name))

    prompts = anyio.run(run)
    if as_json:
        emit_json({"connector": name, "prompts": [prompt.to_dict() for prompt in prompts]})
        return
    table = Table("prompt", "arguments", "description")
    for prompt in prompts:
        arguments = ", ".join(f"{a.name}{'*' if a.required else ''}" for a in prompt.arguments) or "-"
        table.add_row(safe_text(prompt.name), safe_text(arguments), one_line(prompt.description or "", 80))
    if prompts:
        out_console.print(table)
    err_console.print(f"{name}: {len(prompts)} prompts")


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
    from patchbay.runtime import Runtime
    from patchbay.runtime.prompts import parse_prompt_arguments

    values = parse_prompt_arguments(arguments or [])
    settings, config = workspace_runtime(name, project)

    async def run() -> Any:
        async with Runtime(config, settings=settings, session_id=session) as runtime:
            try:
                return runtime.session_id, await runtime.expand_prompt(name, prompt, values), None
            except ToolCallError as exc:
                return runtime.session_id, None, exc

    session_id, expanded, failure = anyio.run(run)
    if failure is not None:
        report_failure(session_id, failure, as_json)
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
    err_console.print(f"session {session_id}: patchbay events {session_id}")
