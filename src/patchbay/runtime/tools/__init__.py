"""Tools as a model API sees them: per-tool definitions, and the one-tool proxy form.

* :mod:`~patchbay.runtime.tools.definitions` - the visible tools in the shape a model API wants.
* :mod:`~patchbay.runtime.tools.proxy` - the one small ``mcp`` tool that searches and calls them.

Design: docs/tool-definitions.md
"""
