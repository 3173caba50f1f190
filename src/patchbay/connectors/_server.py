"""The MCP server side every built-in connector shares (the SDK's low-level ``Server`` over stdio).

A connector module declares its tools (:class:`BuiltinTool`: a strict pydantic argument model and
an async handler) and its origins, and calls :func:`run`. This module:

* lists every tool with ``readOnlyHint: true`` (and ``openWorldHint: true``: the data is public
  and external) and the argument model's JSON Schema, which is strict: ``additionalProperties:
  false``, bounded strings, bounded numbers;
* validates every call's arguments against the model again (a client that skips the schema gets
  the same refusal): an unknown field or a bad value is a tool error result with code
  ``validation_error`` naming the fields, never quoting the values;
* answers a handler's record as ``structuredContent`` plus the same JSON as one text block, and a
  :class:`~patchbay.core.errors.PatchbayError` as an error result ``{"code", "message",
  "details"}``.

Command line (what the registry's stdio target runs)::

    python -I -m patchbay.connectors.paper_search [--audit-file HOME/egress-audit.jsonl --connector-id ID]
        [--base-url http://127.0.0.1:PORT]

With ``--audit-file`` and ``--connector-id`` every request the egress guard judged is one
``mcp_builtin_request`` line of the egress audit (:func:`audit_observer`).

``--base-url`` is the loopback-only test override of :class:`~patchbay.connectors._http.SourceClient`.

Design: docs/builtins.md
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pydantic
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from patchbay.adapters.egress_audit import AUDIT_FILE, EgressAudit
from patchbay.adapters.transports.egress import EgressDecision
from patchbay.connectors._http import Origin, SourceClient, checked_override
from patchbay.core.errors import ErrorCode, PatchbayError, ValidationError
from patchbay.core.version import __version__

__all__ = [
    "Arguments",
    "BuiltinTool",
    "Handler",
    "audit_observer",
    "build_server",
    "call",
    "main",
    "provenance",
    "tool_listing",
]


class Arguments(pydantic.BaseModel):
    """Base of every tool's arguments: unknown fields are refused, values are not coerced from
    other JSON types (``"5"`` is no integer)."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)


Handler = Callable[[Any, SourceClient], Awaitable[dict[str, Any]]]
"""``await handler(arguments, http)`` → the result record (JSON-able)."""


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """One tool of a built-in connector.

    Attributes:
        name: the MCP tool name.
        title: a short human title.
        description: what it does, for a model (mention limits and paging).
        arguments: the strict argument model (a subclass of :class:`Arguments`).
        handler: ``await handler(arguments, http)`` → the result record.
    """

    name: str
    title: str
    description: str
    arguments: type[Arguments]
    handler: Handler


def tool_listing(tool: BuiltinTool) -> types.Tool:
    """The ``tools/list`` entry of ``tool``: strict schema, read-only annotations."""
    schema = tool.arguments.model_json_schema()
    schema.pop("title", None)
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=schema,
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True, idempotent_hint=True),
    )


def _result(record: Mapping[str, Any], *, error: bool = False) -> types.CallToolResult:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=None if error else dict(record),
        is_error=error,
    )


def _refusal(exc: pydantic.ValidationError) -> ValidationError:
    problems = [
        {"field": ".".join(str(part) for part in error["loc"]) or "(arguments)", "problem": error["type"]}
        for error in exc.errors(include_input=False, include_url=False)
    ]
    fields = ", ".join(problem["field"] for problem in problems)
    return ValidationError(f"the arguments do not match the tool's schema ({fields})", details={"errors": problems})


async def call(tool: BuiltinTool, arguments: Mapping[str, Any] | None, http: SourceClient) -> types.CallToolResult:
    """Validate ``arguments`` and run ``tool``; every failure becomes an error result (never raises
    for a :class:`PatchbayError`)."""
    try:
        parsed = tool.arguments.model_validate(dict(arguments or {}))
    except pydantic.ValidationError as exc:
        return _result(_refusal(exc).to_dict(), error=True)
    try:
        return _result(await tool.handler(parsed, http))
    except PatchbayError as exc:
        return _result(exc.to_dict(), error=True)


def build_server(name: str, tools: Sequence[BuiltinTool], http: SourceClient) -> Server[Any]:
    """The low-level SDK server of one connector, its calls going out through ``http``."""
    by_name = {tool.name: tool for tool in tools}
    listing = [tool_listing(tool) for tool in tools]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            unknown = PatchbayError(f"no tool named {params.name!r}", code=ErrorCode.NOT_FOUND)
            return _result(unknown.to_dict(), error=True)
        return await call(tool, params.arguments, http)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def provenance(source: str, endpoint: str, retrieved_at: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance block of a result: where, when and with which effective parameters (never a
    credential: handlers pass the parameters they chose, not the query that carried a key)."""
    return {"source": source, "endpoint": endpoint, "retrieved_at": retrieved_at, "request": dict(request)}


def audit_observer(audit_file: str, connector_id: str) -> Callable[[EgressDecision], None]:
    """An egress guard observer appending one ``mcp_builtin_request`` line per verdict to
    ``audit_file`` (metadata only: origin, time, approved; see :mod:`patchbay.adapters.egress_audit`).

    Raises:
        ValueError: ``audit_file`` is not an absolute path to a file named ``egress-audit.jsonl``.
    """
    path = Path(audit_file)
    if not path.is_absolute() or path.name != AUDIT_FILE:
        raise ValueError(f"--audit-file must be an absolute path to {AUDIT_FILE}")
    audit = EgressAudit(path)

    def observe(decision: EgressDecision) -> None:
        try:
            audit.record(
                "mcp_builtin_request",
                connector_id=connector_id,
                origin=decision.origin,
                project_id=None,
                approved=decision.approved,
            )
        except ValueError:  # an origin the audit does not take: nothing but metadata is written
            pass

    return observe


async def _serve(
    name: str,
    tools: Sequence[BuiltinTool],
    origins: Mapping[str, Origin],
    base_url: str | None,
    observer: Callable[[EgressDecision], None] | None,
) -> None:
    async with SourceClient(origins, base_url=base_url, observer=observer) as http:
        server = build_server(name, tools, http)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main(
    name: str, tools: Sequence[BuiltinTool], origins: Mapping[str, Origin], argv: Sequence[str] | None = None
) -> None:
    """Parse the command line and serve ``tools`` over stdio until stdin closes.

    Raises:
        SystemExit: a bad command line (``--base-url`` that is not loopback: exit status 2).
    """
    parser = argparse.ArgumentParser(prog=f"python -m patchbay.connectors.{name.replace('-', '_')}")
    parser.add_argument("--base-url", default=None, help="tests only: a loopback origin replacing every public one")
    parser.add_argument("--audit-file", default=None, help="the data home's egress-audit.jsonl")
    parser.add_argument("--connector-id", default=None, help="this connector's id, for the audit lines")
    args = parser.parse_args(argv)
    observer = None
    if args.audit_file and args.connector_id:
        try:
            observer = audit_observer(args.audit_file, args.connector_id)
        except ValueError as exc:
            parser.error(str(exc))
    if args.base_url:
        try:
            checked_override(args.base_url)
        except ValueError as exc:
            parser.error(str(exc))
    anyio.run(_serve, name, tools, origins, args.base_url, observer)
