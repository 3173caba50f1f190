"""The MCP server the call benchmarks talk to (SDK lowlevel ``Server``), over stdio or Streamable HTTP.

Tools:

* ``echo(text)``: returns ``text`` as one text block; no ``outputSchema``.
* ``typed_echo(text)``: returns ``{"text": text}`` as structured content (and its JSON as text),
  with an ``outputSchema``, as every typed tool of an SDK ``MCPServer`` has one.

Usage::

    python benchmarks/call_server.py            # stdio
    python benchmarks/call_server.py --http     # Streamable HTTP on 127.0.0.1; prints "ready <port>"
"""

from __future__ import annotations

import argparse
import json
import socket
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

_TEXT_INPUT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOLS = [
    types.Tool(name="echo", description="Return the given text.", input_schema=_TEXT_INPUT),
    types.Tool(
        name="typed_echo",
        description="Return the given text as structured content.",
        input_schema=_TEXT_INPUT,
        output_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
]


def build_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("text", ""))
        if params.name == "typed_echo":
            structured = {"text": text}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(structured))], structured_content=structured
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("bench-server", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def _stdio() -> None:
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _http() -> None:
    import uvicorn

    # IPPROTO_TCP named, as ``patchbay serve`` binds: asyncio sets TCP_NODELAY on accepted
    # connections only then (else Nagle holds an answer for the client's delayed ACK, ~40 ms)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    app = build_server().streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"ready {sock.getsockname()[1]}", flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    if parser.parse_args().http:
        _http()
    else:
        anyio.run(_stdio)


if __name__ == "__main__":
    main()
