"""The last probe's outcome of each connector: one row per connector, replaced by every probe and
removed with the connector (``ON DELETE CASCADE``)."""

from __future__ import annotations

from sqlalchemy import select

from patchbay.adapters.store._rows import check_choice
from patchbay.adapters.store._transactions import Transactions, upsert
from patchbay.adapters.store.connectors import require_connector
from patchbay.adapters.store.tables import PROBE_STATES, mcp_probe_outcomes
from patchbay.core.errors import ConfigError
from patchbay.core.models import ProbeOutcome

__all__ = ["ProbeOutcomeStore"]

_MAX_MESSAGE_CHARS = 2000
_MAX_STDERR_CHARS = 4000
_C = mcp_probe_outcomes.c


class ProbeOutcomeStore:
    """Reads and replaces the stored probe outcomes (``Repository.probe_outcomes``).

    Usage::

        repo.probe_outcomes.record(ProbeOutcome(connector_id=cid, state="error", code="timeout", ...))
        repo.probe_outcomes.get(cid)
    """

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def record(self, outcome: ProbeOutcome) -> ProbeOutcome:
        """Store ``outcome`` as the connector's last probe, replacing the previous one. A message
        longer than 2000 characters is cut (it is a diagnostic, not a log); of a stderr tail only the
        last 4000 characters are kept (the end is where a failing command says why).

        Raises:
            ConfigError: ``invalid_config`` for a state other than ready/error.
            NotFoundError: ``not_found`` when the connector does not exist (any more).
        """
        message = outcome.message[:_MAX_MESSAGE_CHARS] if outcome.message is not None else None
        stderr_tail = outcome.stderr_tail[-_MAX_STDERR_CHARS:]
        values = {
            "connector_id": outcome.connector_id,
            "state": check_choice("state", outcome.state, PROBE_STATES),
            "code": outcome.code,
            "message": message,
            "tool_count": outcome.tool_count,
            "duration_ms": outcome.duration_ms,
            "probed_at": outcome.probed_at,
            "config_revision": outcome.config_revision,
            "stderr_tail": stderr_tail,
            "protocol_version": outcome.protocol_version,
        }
        if outcome.tool_count < 0 or outcome.duration_ms < 0:
            raise ConfigError("probe_outcome", "counts and durations cannot be negative")
        with self._tx.write() as conn:
            require_connector(conn, outcome.connector_id)
            stmt = upsert(conn, mcp_probe_outcomes).values(values)
            replace = {k: stmt.excluded[k] for k in values if k != "connector_id"}
            conn.execute(stmt.on_conflict_do_update(index_elements=["connector_id"], set_=replace))
        return outcome.model_copy(update={"message": message, "stderr_tail": stderr_tail})

    def get(self, connector_id: str) -> ProbeOutcome | None:
        """The connector's last probe outcome, or None when it was never probed."""
        with self._tx.read() as conn:
            row = conn.execute(select(mcp_probe_outcomes).where(_C.connector_id == connector_id)).mappings().first()
        return None if row is None else ProbeOutcome.model_validate(dict(row))

    def by_connector(self) -> dict[str, ProbeOutcome]:
        """Every stored outcome by connector id (one query, for lists)."""
        with self._tx.read() as conn:
            rows = conn.execute(select(mcp_probe_outcomes)).mappings().all()
        return {row["connector_id"]: ProbeOutcome.model_validate(dict(row)) for row in rows}
