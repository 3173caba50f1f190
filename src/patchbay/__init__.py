"""Patchbay: a control plane and governed client runtime for MCP connectors.

The curated public API; adding a name here is a deliberate API decision
(``tests/test_exported_members.py`` pins the list).
"""

from patchbay.core.errors import PatchbayError, ToolCallError
from patchbay.core.models import RuntimeConfig, RuntimeServer
from patchbay.core.settings import Settings
from patchbay.runtime.calls import ToolCallResult
from patchbay.runtime.permissions import ApprovalAnswer, ApprovalRequest, Approver
from patchbay.runtime.runtime import Runtime

__version__ = "0.1.0"

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
