"""Patchbay's REST API: FastAPI, served by ``patchbay serve``.

Usage::

    from patchbay.interfaces.api import create_app

    app = create_app(Settings(home=tmp_path))   # then uvicorn, or httpx2's ASGI transport
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchbay.interfaces.api.app import LOOPBACK_HOSTS, create_app
    from patchbay.interfaces.api.context import ApiContext

_EXPORTS = {
    "LOOPBACK_HOSTS": "patchbay.interfaces.api.app",
    "ApiContext": "patchbay.interfaces.api.context",
    "create_app": "patchbay.interfaces.api.app",
}
"""Where each public name lives. They are imported on first use (PEP 562): the CLI's ``--json``
output uses the API's contracts (:mod:`~patchbay.interfaces.api.contracts`), and importing them
must not load FastAPI, the app and the runtime behind it."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'patchbay.interfaces.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["LOOPBACK_HOSTS", "ApiContext", "create_app"]
