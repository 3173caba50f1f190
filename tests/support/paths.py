"""Where the repository, its fixture servers and the npm peers are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
NODE22 = REPO / "node_modules" / "node" / "bin" / "node"
"""Node 22 from the npm package ``node@22`` (the MCP Inspector needs it)."""
INSPECTOR = (
    REPO / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)
"""The MCP Inspector's launcher (``--cli``: the Inspector as a command-line host)."""
