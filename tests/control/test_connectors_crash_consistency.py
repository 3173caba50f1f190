"""A crash at any step of a create, update or remove never leaves the credential store and the
database disagreeing (seed 003 §15): the store is written first and committed with the database
under one lock, and the repair pass a service runs when it opens cleans up what a crash left.

Deterministic crashes use the named crash points (PATCHBAY_TEST_CRASH_AT, in a subprocess that
``os._exit``s there); the kill -9 loop kills a real process doing creates at whatever point it is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from patchbay.adapters.faults import CRASH_AT_ENV, CRASH_EXIT_CODE
from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.control.credentials import parse_env
from patchbay.core.settings import Settings
from tests.support.paths import FIXTURES

WRITER = FIXTURES / "connector_writer.py"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def run_writer(home: Path, workspace: Path, op: str, name: str, crash_at: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT_ENV}
    if crash_at:
        env[CRASH_AT_ENV] = crash_at
    done = subprocess.run(
        [sys.executable, str(WRITER), str(home), str(workspace), op, name],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, CRASH_EXIT_CODE), done.stderr
    return done.returncode


def open_service(home: Path) -> ConnectorService:
    settings = Settings(home=home)
    return ConnectorService(open_store(settings), settings)  # runs the repair pass


def assert_consistent(service: ConnectorService) -> None:
    """Every binding resolves to a stored credential its connector owns, and every stored
    credential belongs to a connector that exists."""
    records = service.credentials.store.load()
    connectors = {c.connector_id: c for c in service.list_connectors()}
    for connector in connectors.values():
        for binding in connector.bindings:
            assert binding.ref in records, f"{connector.name}: {binding.describe()} refers to a missing credential"
            assert records[binding.ref].owner_id == connector.connector_id
    for cid, record in records.items():
        assert record.owner_id in connectors, f"{cid} belongs to a connector that does not exist"


def test_a_crash_after_the_store_write_of_a_create_leaves_neither(home: Path, workspace: Path) -> None:
    assert run_writer(home, workspace, "create", "alpha", "create.credentials_written") == CRASH_EXIT_CODE
    raw = (home / "credentials.json").read_text()
    assert "crash-test-value-1111" in raw  # the crash really left an orphan behind
    service = open_service(home)
    assert service.list_connectors() == []
    assert service.credentials.store.load() == {}
    # the name is free again: the same create now works
    assert run_writer(home, workspace, "create", "alpha", None) == 0
    assert_consistent(open_service(home))


def test_a_crash_after_the_commit_of_a_create_keeps_the_connector_with_its_credential(
    home: Path, workspace: Path
) -> None:
    assert run_writer(home, workspace, "create", "alpha", "create.committed") == CRASH_EXIT_CODE
    service = open_service(home)
    connector = service.get("alpha")
    assert_consistent(service)
    resolved = service.credentials.store.resolve(connector.bindings, connector_id=connector.connector_id)
    assert resolved.env == {"PB_KEY": "crash-test-value-1111"}


@pytest.mark.parametrize("step", ["update.credentials_written", "update.committed"])
def test_a_crash_during_an_update_keeps_a_resolvable_connector(home: Path, workspace: Path, step: str) -> None:
    assert run_writer(home, workspace, "create", "alpha", None) == 0
    assert run_writer(home, workspace, "update", "alpha", step) == CRASH_EXIT_CODE
    service = open_service(home)
    assert_consistent(service)
    connector = service.get("alpha")
    resolved = service.credentials.store.resolve(connector.bindings, connector_id=connector.connector_id)
    if step == "update.credentials_written":  # not committed: the old bindings, the in-place new value
        assert sorted(resolved.env) == ["PB_KEY"]
        assert service.credentials.repair().unbound  # the new, never-bound credential is reported
    else:
        assert resolved.env == {"PB_KEY": "crash-test-value-2222", "PB_EXTRA": "extra-value-3333"}


@pytest.mark.parametrize("step", ["remove.row_deleted", "remove.credentials_deleted"])
def test_a_crash_during_a_remove_leaves_no_credential_behind(home: Path, workspace: Path, step: str) -> None:
    assert run_writer(home, workspace, "create", "alpha", None) == 0
    assert run_writer(home, workspace, "remove", "alpha", step) == CRASH_EXIT_CODE
    service = open_service(home)
    assert service.list_connectors() == []
    assert service.credentials.store.load() == {}


def test_a_binding_to_a_missing_credential_is_reported_and_kept(home: Path, workspace: Path, caplog) -> None:
    service = open_service(home)
    target = service.stdio_target(sys.executable, ["-c", "pass"], cwd=None, workspace=workspace)
    connector, _ = service.add("alpha", target, bindings=[parse_env("PB_KEY=some-value-4444")])
    service.credentials.store.apply(deletes=[connector.bindings[0].ref])  # e.g. a hand-edited store
    report = open_service(home).credentials.repair()
    assert report.missing == [{"connector": "alpha", "ref": connector.bindings[0].ref, "binding": "env PB_KEY"}]
    assert not report.changed
    assert open_service(home).get("alpha").bindings == connector.bindings
    assert any("is missing" in r.getMessage() for r in caplog.records)


def test_kill_9_during_creates_never_leaves_the_store_and_database_disagreeing(home: Path, workspace: Path) -> None:
    acknowledged: list[str] = []
    for iteration in range(4):
        process = subprocess.Popen(
            [sys.executable, str(WRITER), str(home), str(workspace), "loop", f"k{iteration}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            for _ in range(1 + iteration % 3):  # kill it a different number of creates in
                line = process.stdout.readline().split()
                assert line[:1] == ["ack"], line
                acknowledged.append(line[1])
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        service = open_service(home)
        assert_consistent(service)
        names = {c.name for c in service.list_connectors()}
        assert set(acknowledged) <= names  # no acknowledged create was lost
