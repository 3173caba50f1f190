"""Configuration fingerprints: which cached tool catalog belongs to which server.

A cached catalog is only valid for the server that produced it. The cache key includes a
fingerprint of everything that decides the server's identity -- at least the transport, the URL
origin and path, the command, its arguments, the socket path and the authentication type -- and
never a secret value.

The fingerprint is the SHA-256 (lower-case hex) of a canonical JSON document::

    {"v": 1, "transport": "streamable_http", "url": {"scheme": "https", "host": "api.example.com",
     "port": 443, "path": "/mcp"}, "command": null, "args": [], "cwd": null, "socket_path": null,
     "auth_type": "none"}

What is deliberately left out of the URL: the query and the fragment (API keys travel there) and
any userinfo (``user:password@``). The host is lower-cased and a missing port becomes the scheme's
default, so spellings of the same endpoint share a fingerprint. Environment variables, headers
and credential values are never inputs. A stdio server's working directory is included because
relative arguments (``python server.py``) name a different program in another directory.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

from patchbay.core.models import ConnectorTarget, HttpTarget, SocketTarget, StdioTarget

__all__ = ["config_fingerprint"]

_FORMAT_VERSION = 1
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _url_identity(url: str) -> dict[str, Any]:
    """Scheme, lower-cased host, port and path of ``url``; no query, fragment or userinfo."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a malformed port: keep it distinct without failing
        port = None
    return {
        "scheme": scheme,
        "host": (parts.hostname or "").lower(),
        "port": port if port is not None else _DEFAULT_PORTS.get(scheme),
        "path": parts.path or "/",
    }


def config_fingerprint(target: ConnectorTarget, auth_type: str = "none") -> str:
    """Return the SHA-256 hex fingerprint of ``target``'s server identity.

    Args:
        target: a stdio, HTTP/SSE or socket target (already validated or not; nothing is checked).
        auth_type: the connector's authentication *kind* (``"none"``, ``"bearer"``, ``"header"``,
            ``"oauth"``, ...), never a credential value.

    Returns:
        64 lower-case hex characters. Equal targets (up to URL spelling) and auth types give equal
        fingerprints; a different transport, URL origin or path, command, argument list, working
        directory, socket path or auth type gives a different one.
    """
    document: dict[str, Any] = {
        "v": _FORMAT_VERSION,
        "transport": target.transport,
        "url": None,
        "command": None,
        "args": [],
        "cwd": None,
        "socket_path": None,
        "auth_type": auth_type,
    }
    if isinstance(target, HttpTarget):
        document["url"] = _url_identity(target.url)
    elif isinstance(target, StdioTarget):
        document["command"] = target.command
        document["args"] = list(target.args)
        document["cwd"] = target.cwd
    elif isinstance(target, SocketTarget):
        document["socket_path"] = target.path
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
