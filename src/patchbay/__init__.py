"""Patchbay: a control plane and governed client runtime for MCP connectors.

The curated public API; adding a name here is a deliberate API decision
(``tests/test_exported_members.py`` pins the list).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchbay.core.errors import PatchbayError, ToolCallError
    from patchbay.core.models import RuntimeConfig, RuntimeServer
    from patchbay.core.settings import Settings
    from patchbay.runtime.calls.permissions import ApprovalAnswer, ApprovalRequest, Approver
    from patchbay.runtime.calls.result import ToolCallResult
    from patchbay.runtime.runtime import Runtime

from patchbay.core.version import __version__

_EXPORTS = {
    "ApprovalAnswer": "patchbay.runtime.calls.permissions",
    "ApprovalRequest": "patchbay.runtime.calls.permissions",
    "Approver": "patchbay.runtime.calls.permissions",
    "PatchbayError": "patchbay.core.errors",
    "Runtime": "patchbay.runtime.runtime",
    "RuntimeConfig": "patchbay.core.models",
    "RuntimeServer": "patchbay.core.models",
    "Settings": "patchbay.core.settings",
    "ToolCallError": "patchbay.core.errors",
    "ToolCallResult": "patchbay.runtime.calls.result",
}
"""Where each public name lives. They are imported on first use (PEP 562), so that importing a
subpackage (the CLI's ``patchbay --help``, the control plane) does not load the runtime and the
MCP SDK it never uses."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'patchbay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "PatchbayError",
    "Runtime",
    "RuntimeConfig",
    "RuntimeServer",
    "Settings",
    "ToolCallError",
    "ToolCallResult",
    "__version__",
]
