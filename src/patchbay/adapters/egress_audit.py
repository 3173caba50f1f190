"""The egress audit: one metadata-only JSON line per outbound operation.

``<home>/egress-audit.jsonl`` (mode 0600, append-only), one line per probe, connect, tool call and
OAuth discovery/token operation of a connector::

    {"note": "mcp_tool_call", "connector_id": "c_…", "origin": "https://mcp.example.com:443",
     "time": "2026-09-08T10:00:00.123Z", "project_id": "p_…", "approved": true}

* ``note``: one of :data:`NOTES`.
* ``origin``: ``scheme://host:port`` only (port always explicit); ``null`` for stdio and socket
  connectors, whose lines carry ``"runtime_call_audit": "unavailable"`` instead: what such a program
  sends on its own cannot be seen by a transport wrapper, so it is not claimed to be audited.
* ``approved``: False when the egress guard refused a request of the operation (nothing was sent).
* Nothing else, ever: no path, query, body, header value, argument, result or secret. The writer
  takes no free text, and an origin that is not exactly ``scheme://host:port`` is refused.

Appends are one ``write`` of one line to a file opened ``O_APPEND`` (safe across tasks, threads and
processes); the file is created 0600 and tightened to 0600 if found wider; a symlink is refused.
A failed append is logged and does not fail the operation it records.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import Any, Literal, get_args

from patchbay.adapters.transports.egress import origin_of
from patchbay.core.models import ConnectorTarget, HttpTarget

__all__ = ["AUDIT_FILE", "NOTES", "EgressAudit", "EgressNote", "audit_path", "read_audit", "target_origin"]

logger = logging.getLogger(__name__)

AUDIT_FILE = "egress-audit.jsonl"
EgressNote = Literal["mcp_probe", "mcp_connect", "mcp_tool_call", "mcp_oauth_discovery", "mcp_oauth_token"]
NOTES: frozenset[str] = frozenset(get_args(EgressNote))
"""Every operation type the egress audit records."""

# Exactly what origin_of() produces for a host url_host_problem() accepts (``_``: Docker names).
_ORIGIN = re.compile(r"https?://(?:[a-z0-9._-]+|\[[0-9a-f:.]+\]):\d{1,5}")


def audit_path(home: Path) -> Path:
    """``<home>/egress-audit.jsonl``."""
    return Path(home) / AUDIT_FILE


def target_origin(target: ConnectorTarget) -> str | None:
    """The origin a connector's traffic goes to: ``scheme://host:port`` for HTTP/SSE, else None.

    Raises:
        EgressBlocked: (``network_blocked``) an HTTP target URL that is not absolute http(s) or
            carries userinfo.
    """
    if isinstance(target, HttpTarget):
        return origin_of(target.url)
    return None


def _timestamp(seconds: float) -> str:
    ms = int(seconds * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


class EgressAudit:
    """Appends egress audit lines to one file.

    Usage::

        audit = EgressAudit(audit_path(settings.home))
        audit.record("mcp_probe", connector_id=c.connector_id, origin=target_origin(c.target),
                     project_id=project_id, approved=True)

    Args:
        path: the audit file (usually :func:`audit_path` of the data home).
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def record(
        self,
        note: EgressNote,
        *,
        connector_id: str,
        origin: str | None,
        project_id: str | None,
        approved: bool,
    ) -> bool:
        """Append one line; returns False (and logs a warning) when the file cannot be written.

        Args:
            note: the operation (:data:`NOTES`).
            connector_id: the connector's id.
            origin: ``scheme://host:port`` of an HTTP/SSE connector (:func:`target_origin`);
                None for stdio and socket connectors (the line then says
                ``"runtime_call_audit": "unavailable"``).
            project_id: the project the operation ran for, if known.
            approved: False when the egress guard refused a request of the operation.

        Raises:
            ValueError: an unknown ``note`` or an ``origin`` that is not exactly
                ``scheme://host:port`` (a programming error: nothing but metadata may reach this
                file).
        """
        if note not in NOTES:
            raise ValueError(f"unknown egress audit note {note!r}")
        if origin is not None and not _ORIGIN.fullmatch(origin):
            raise ValueError("an egress audit origin is scheme://host:port and nothing else")
        line: dict[str, Any] = {
            "note": note,
            "connector_id": connector_id,
            "origin": origin,
            "time": _timestamp(time.time()),
            "project_id": project_id,
            "approved": bool(approved),
        }
        if origin is None:
            line["runtime_call_audit"] = "unavailable"
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        try:
            self._append(data)
        except OSError as exc:
            logger.warning("egress audit: cannot append to %s: %s", self.path, exc.strerror or type(exc).__name__)
            return False
        return True

    def _append(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(f"{self.path} is not a regular file")
            if stat.S_IMODE(info.st_mode) != 0o600:
                os.fchmod(fd, 0o600)
            os.write(fd, data)
        finally:
            os.close(fd)


def read_audit(path: Path) -> list[dict[str, Any]]:
    """Every complete line of an egress audit file, parsed ([] when it does not exist)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]
