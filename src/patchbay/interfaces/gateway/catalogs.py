"""The gateway's runtime config: the projection with the store's cached catalogs in full.

The projection carries only the tools' names and risk hints; the gateway's proxy search and
``--mode auto`` read descriptions and schemas too, without starting any server, so they come from
the store's fresh probe cache (:func:`with_cached_catalogs`).
"""

from __future__ import annotations

from typing import Any

from patchbay.core.models import RuntimeConfig

__all__ = ["with_cached_catalogs"]


def with_cached_catalogs(service: Any, config: RuntimeConfig) -> RuntimeConfig:
    """``config`` with each server's cached catalog in full (descriptions, schemas) from the
    store's fresh probe cache, where the projection carries only names and risk hints: the proxy's
    search and ``--mode auto`` then read it without starting any server. A server whose cache is
    missing or stale keeps what the projection gave; the projected tool set itself never changes here.

    Args:
        service: the control plane's connector service (its ``queries.cached_catalog`` and ``get``).
        config: the workspace's projected runtime config.
    """
    servers = []
    for server in config.servers:
        entry, _ = service.queries.cached_catalog(service.get(server.name))
        if entry is not None:
            full = {tool.name: tool for tool in entry.tools}
            server = server.model_copy(update={"tools": tuple(full.get(t.name, t) for t in server.tools)})
        servers.append(server)
    return config.model_copy(update={"servers": tuple(servers)})
