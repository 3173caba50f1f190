"""The body of ``GET /api/mcp/connectors``, rendered entry by entry and reused while what an entry
shows is unchanged: :class:`ConnectorListing`.

A list of 1,000 connectors costs about 80 ms to build from scratch (reading the rows into models,
the views, redacting and encoding every string); between two requests usually nothing, or one
connector, changed. Each request reads what can change without a connector row changing (the
tool-cache summaries, the last probes, the credential records and OAuth grants behind the auth
state) and the connectors' ``(revision, settings_revision)`` stamps (one query of small columns;
every change of a connector row moves one of them), then renders again only the entries whose
inputs differ from those of the bytes it kept.

What is served is byte for byte what rendering the whole :class:`~patchbay.interfaces.api.contracts.ConnectorList`
through :class:`~patchbay.interfaces.api.responses.RedactedJSONResponse` gives: each entry is
rendered by that same code (every string redacted), and the redaction registry's version is part
of every entry's inputs, so a secret registered since is masked in every entry at the next request.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import patchbay.interfaces.api.contracts as c
from patchbay.control.connectors import ConnectorService
from patchbay.control.states import list_states
from patchbay.core.errors import NotFoundError
from patchbay.core.live_status import LiveStatus, StatusRegistry
from patchbay.core.models import Connector, ProbeOutcome
from patchbay.core.redaction import registry_version
from patchbay.interfaces.api._views import summary_fields
from patchbay.interfaces.api.responses import render_redacted

__all__ = ["ConnectorListing"]

_MAX_SINGLE_READS = 32
"""Above this many new or changed connectors, all rows are read in one query instead."""

_Stamp = tuple[int, int]
_Inputs = tuple[_Stamp, c.AuthState, int | None, ProbeOutcome | None, int, tuple[object, ...] | None]


@dataclass(frozen=True)
class _Entry:
    inputs: _Inputs
    body: bytes


class ConnectorListing:
    """The connector list of one connector service, kept between requests (thread-safe; one
    rendering at a time).

    Usage::

        listing = ConnectorListing()
        body = listing.render(service)  # the JSON body of GET /api/mcp/connectors
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._service: ConnectorService | None = None
        self._connectors: dict[str, tuple[_Stamp, Connector]] = {}
        self._ordered: list[Connector] = []
        self._entries: dict[str, _Entry] = {}

    def render(self, service: ConnectorService, status: StatusRegistry | None = None) -> bytes:
        """The list body (``{"connectors": [...]}``, ordered by name): blocking store reads.
        ``status``: the live status registry (each entry's ``runtime``), None for none.

        Raises:
            PatchbayError: what the store raises (``canonical_state_unavailable`` ...).
        """
        with self._lock:
            if service is not self._service:
                self._service = service
                self._connectors, self._ordered, self._entries = {}, [], {}
            connectors = self._current(service)
            version = registry_version()
            lives = status.read_all() if status is not None else {}
            entries: dict[str, _Entry] = {}
            for connector, states in zip(connectors, list_states(service, connectors), strict=True):
                live = lives.get(connector.connector_id)
                inputs: _Inputs = (_stamp(connector), *states, version, _live_inputs(live))
                entry = self._entries.get(connector.connector_id)
                if entry is None or entry.inputs != inputs:
                    summary = c.ConnectorSummary(**summary_fields(connector, *states, live))
                    entry = _Entry(inputs, render_redacted(summary.model_dump(mode="json")))
                entries[connector.connector_id] = entry
            self._entries = entries
            return b'{"connectors":[' + b",".join(entry.body for entry in entries.values()) + b"]}"

    def _current(self, service: ConnectorService) -> list[Connector]:
        """Every connector as stored now, in the store's order (by name); rows are read only for
        new or changed ones."""
        stamps = service.repository.connectors.stamps()
        known = self._connectors
        if len(stamps) == len(known) and all(known.get(cid, (None,))[0] == stamp for cid, stamp in stamps.items()):
            return self._ordered  # unchanged rows: unchanged names, so the same order
        changed = {cid for cid, stamp in stamps.items() if known.get(cid, (None,))[0] != stamp}
        current: dict[str, tuple[_Stamp, Connector]] | None = None
        if len(changed) <= _MAX_SINGLE_READS:
            try:
                read = {cid: service.repository.connectors.get(cid) for cid in changed}
            except NotFoundError:  # removed since the stamps were read: read them all
                read = None
            if read is not None:  # in the store's order (its collation), as the stamps come
                current = {cid: (_stamp(read[cid]), read[cid]) if cid in read else known[cid] for cid in stamps}
        if current is None:
            current = {x.connector_id: (_stamp(x), x) for x in service.list_connectors()}
        self._connectors = current
        self._ordered = [connector for _, connector in current.values()]
        return self._ordered


def _live_inputs(live: LiveStatus | None) -> tuple[object, ...] | None:
    """What an entry shows of the live status (its times to the shown precision)."""
    if live is None:
        return None
    age = None if live.failure_age is None else int(live.failure_age)
    return (*live.key(), age, int(live.updated_at * 1000))


def _stamp(connector: Connector) -> _Stamp:
    return connector.revision, connector.settings.revision
