"""Size of the proxy tool vs every direct tool definition, for ``@modelcontextprotocol/server-everything``
(one small ``mcp`` proxy tool instead of every schema).

Starts server-everything over stdio from ``node_modules`` (run ``npm ci`` first), opens a
``patchbay.Runtime`` on it, and measures the UTF-8 bytes of the compact JSON
(``separators=(",", ":")``) of ``tool_definitions(format)`` for each direct format and of
``tool_definitions("proxy", shape=format)`` in the same shape. This is a size fact, not a timing.

server-everything lists more tools to clients that declare the sampling, elicitation or roots
capabilities (17 in all); the runtime declares elicitation only when an elicitation handler is
set and never sampling or roots, so the rows are measured with no callback (13 tools) and with an
elicitation handler (the tools that capability adds). Prints a table, or JSON with ``--json``.

Usage::

    .venv/bin/python benchmarks/tool_definition_sizes.py [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import ConnectorSettings, StdioTarget

EVERYTHING = (
    Path(__file__).resolve().parent.parent / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
) / "index.js"
FORMATS = ("mcp", "openai", "openai-responses", "anthropic")


async def _decline(params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def measure(label: str, elicitation: bool) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        raise SystemExit(f"needs node on PATH and {EVERYTHING} (run `npm ci`)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="patchbay-bench-") as home:
        server = RuntimeServer(
            connector_id="everything",
            name="everything",
            target=StdioTarget(command=node, args=(str(EVERYTHING), "stdio")),
            settings=ConnectorSettings(approval_mode="allow_all"),
        )
        config = RuntimeConfig(project_id="bench", workspace=home, servers=(server,))
        handler = _decline if elicitation else None
        async with Runtime(config, settings=Settings(home=Path(home)), elicitation_handler=handler) as runtime:
            for format in FORMATS:
                direct = await runtime.tool_definitions(format)
                proxy = await runtime.tool_definitions("proxy", shape=format)
                rows.append(
                    {
                        "clientCallbacks": label,
                        "tools": len(direct),
                        "leftOut": len(direct.diagnostics),
                        "format": format,
                        "directBytes": direct.size_bytes(),
                        "proxyBytes": proxy.size_bytes(),
                        "proxyToDirect": round(proxy.size_bytes() / direct.size_bytes(), 3),
                    }
                )
    return rows


async def run() -> list[dict[str, Any]]:
    return [*(await measure("none", False)), *(await measure("elicitation", True))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = anyio.run(run)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    header = f"{'callbacks':<12} {'tools':>5} {'format':<17} {'direct B':>9} {'proxy B':>8} {'proxy/direct':>12}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['clientCallbacks']:<12} {row['tools']:>5} {row['format']:<17} {row['directBytes']:>9} "
            f"{row['proxyBytes']:>8} {row['proxyToDirect']:>12.3f}"
        )


if __name__ == "__main__":
    main()
