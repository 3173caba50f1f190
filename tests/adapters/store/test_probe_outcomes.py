"""The stored last-probe outcome: replaced by each probe, removed with its connector."""

from __future__ import annotations

import pytest

from patchbay.adapters.store import Repository
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.models import ProbeOutcome, StdioTarget


def _outcome(connector_id: str, **fields: object) -> ProbeOutcome:
    values: dict[str, object] = {
        "connector_id": connector_id,
        "state": "error",
        "code": "command_not_found",
        "message": "command not found on PATH: nope",
        "tool_count": 0,
        "duration_ms": 12,
        "probed_at": 1_700_000_000_000,
        "config_revision": 1,
    }
    return ProbeOutcome.model_validate(values | fields)


def test_a_recorded_outcome_is_read_back_and_the_next_one_replaces_it(repo: Repository) -> None:
    connector = repo.connectors.create("git", "Git", StdioTarget(command="nope"))
    assert repo.probe_outcomes.get(connector.connector_id) is None

    failed = repo.probe_outcomes.record(_outcome(connector.connector_id))
    assert repo.probe_outcomes.get(connector.connector_id) == failed

    ready = _outcome(connector.connector_id, state="ready", code=None, message=None, tool_count=12, probed_at=2)
    repo.probe_outcomes.record(ready)
    assert repo.probe_outcomes.get(connector.connector_id) == ready
    assert repo.probe_outcomes.by_connector() == {connector.connector_id: ready}


def test_deleting_the_connector_deletes_its_outcome(repo: Repository) -> None:
    connector = repo.connectors.create("git", "Git", StdioTarget(command="nope"))
    repo.probe_outcomes.record(_outcome(connector.connector_id))
    repo.connectors.delete(connector.connector_id)
    assert repo.probe_outcomes.by_connector() == {}


def test_an_outcome_for_an_unknown_connector_or_state_is_refused(repo: Repository) -> None:
    with pytest.raises(NotFoundError):
        repo.probe_outcomes.record(_outcome("con_nope"))
    connector = repo.connectors.create("git", "Git", StdioTarget(command="nope"))
    with pytest.raises(ConfigError):
        repo.probe_outcomes.record(_outcome(connector.connector_id).model_copy(update={"state": "checking"}))
    assert repo.probe_outcomes.get(connector.connector_id) is None


def test_a_long_message_is_cut(repo: Repository) -> None:
    connector = repo.connectors.create("git", "Git", StdioTarget(command="nope"))
    stored = repo.probe_outcomes.record(_outcome(connector.connector_id, message="x" * 10_000))
    assert stored.message == "x" * 2000
    assert repo.probe_outcomes.get(connector.connector_id) == stored


def test_only_the_end_of_a_long_stderr_tail_is_kept_with_the_protocol_version(repo: Repository) -> None:
    connector = repo.connectors.create("git", "Git", StdioTarget(command="nope"))
    tail = "x" * 5000 + "\nfatal: the reason is at the end\n"
    kept = repo.probe_outcomes.record(_outcome(connector.connector_id, stderr_tail=tail, protocol_version="2025-06-18"))
    assert len(kept.stderr_tail) == 4000 and kept.stderr_tail.endswith("fatal: the reason is at the end\n")
    assert repo.probe_outcomes.get(connector.connector_id) == kept
    assert kept.protocol_version == "2025-06-18"
