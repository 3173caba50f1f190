"""Patchbay's REST API: FastAPI, served by ``patchbay serve``.

Usage::

    from patchbay.interfaces.api import create_app

    app = create_app(Settings(home=tmp_path))   # then uvicorn, or httpx2's ASGI transport
"""

from patchbay.interfaces.api.app import LOOPBACK_HOSTS, ApiContext, create_app

__all__ = ["LOOPBACK_HOSTS", "ApiContext", "create_app"]
