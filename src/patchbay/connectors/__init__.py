"""Built-in connectors: MCP servers inside the package, each a separate program.

Each module here (``paper_search``, ...) is started by the registry as an ordinary stdio
connector (``python -I -m patchbay.connectors.<module>``), so the registry, probe, grants,
events, output guard and redaction apply to it unchanged. These programs import ``core`` and
``adapters`` only (the egress guard, for their HTTP requests); nothing in Patchbay imports them:
the registry knows them through the catalogue in :mod:`patchbay.core.builtins`.

Design: docs/builtins.md
"""
