"""The gateway token's store: made once on first need, rotated in place, kept as a digest only
(so never shown twice), in the 0600 credential store beside the connectors' credentials."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from patchbay.adapters.credentials import CREDENTIALS_FILE, CredentialStore
from patchbay.control.gateway_token import GATEWAY_TOKEN_PREFIX, GatewayTokens
from patchbay.core.errors import CanonicalStateUnavailable, ValidationError
from patchbay.core.redaction import redact_text


class _Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def _tokens(home: Path, clock: _Clock | None = None) -> GatewayTokens:
    return GatewayTokens(CredentialStore(home, clock=clock))


def test_ensure_makes_the_token_once_and_later_only_says_when(tmp_path: Path) -> None:
    home, clock = tmp_path / "home", _Clock()
    tokens = _tokens(home, clock)
    assert tokens.status() is None and not tokens.accepts("anything")
    issued = tokens.ensure()
    assert issued is not None and not issued.replaced and issued.created_at == clock.now
    assert issued.token.startswith(GATEWAY_TOKEN_PREFIX) and len(issued.token) == len(GATEWAY_TOKEN_PREFIX) + 43
    assert tokens.accepts(issued.token)
    clock.now += 5_000
    assert tokens.ensure() is None  # it exists: nothing to show again
    assert _tokens(home).ensure() is None  # nor from another process's view of the store
    assert tokens.status() == issued.created_at
    assert issued.token not in repr(issued)
    assert redact_text(f"sent {issued.token}") == "sent [REDACTED]"  # this process masks it


def test_only_the_digest_is_stored_in_a_0600_file_of_a_0700_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    issued = _tokens(home).ensure()
    assert issued is not None
    path = home / CREDENTIALS_FILE
    raw = path.read_text()
    assert issued.token not in raw and issued.token[len(GATEWAY_TOKEN_PREFIX) :] not in raw
    document = json.loads(raw)
    assert document["tokens"]["gateway"] == {
        "sha256": hashlib.sha256(issued.token.encode()).hexdigest(),
        "created_at": issued.created_at,
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    path.chmod(0o644)  # someone widened it: the next read puts it back
    assert _tokens(home).accepts(issued.token)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_rotate_replaces_the_token_and_the_old_one_stops_working_in_every_reader(tmp_path: Path) -> None:
    home, clock = tmp_path / "home", _Clock()
    reader = _tokens(home)  # a running serve's check: its own store object, its own cache
    first = _tokens(home, clock).ensure()
    assert first is not None and reader.accepts(first.token)
    clock.now += 1
    second = _tokens(home, clock).rotate()
    assert second.replaced and second.token != first.token and second.created_at == clock.now
    assert not reader.accepts(first.token) and reader.accepts(second.token)
    assert _tokens(home).status() == second.created_at
    fresh = _tokens(tmp_path / "other").rotate()  # rotating where there is none makes one
    assert not fresh.replaced


def test_connector_credentials_and_the_gateway_token_survive_each_others_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = CredentialStore(home)
    record = store.new_record(owner_id="mcp_1", kind="bearer_token", value="connector-secret-value-123")
    store.apply(upserts=[record])
    issued = GatewayTokens(store).ensure()
    assert issued is not None
    assert store.record(record.credential_id).value == "connector-secret-value-123"
    store.apply(deletes=[record.credential_id])  # a connector credential change keeps the token
    assert store.load() == {} and GatewayTokens(store).accepts(issued.token)
    assert [c.credential_id for c in store.list_public()] == []  # never listed as a credential


def test_two_processes_making_it_at_once_agree_on_one_token(tmp_path: Path) -> None:
    home = tmp_path / "home"
    results: list[object] = []
    start = threading.Barrier(4)

    def make() -> None:
        start.wait()
        results.append(_tokens(home).ensure())

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    made = [r for r in results if r is not None]
    assert len(made) == 1 and len(results) == 4
    assert _tokens(home).accepts(made[0].token)  # type: ignore[attr-defined]


def test_a_corrupt_or_planted_store_accepts_nothing_and_says_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    issued = _tokens(home).ensure()
    assert issued is not None
    path = home / CREDENTIALS_FILE
    document = json.loads(path.read_text())
    document["tokens"]["gateway"]["sha256"] = "not hex"
    path.write_text(json.dumps(document))
    tokens = _tokens(home)
    assert not tokens.accepts(issued.token)
    with pytest.raises(CanonicalStateUnavailable) as corrupt:
        tokens.status()
    assert corrupt.value.code == "canonical_state_unavailable" and "corrupt" in corrupt.value.message
    with pytest.raises(CanonicalStateUnavailable):
        tokens.rotate()  # a corrupt store is not overwritten
    path.unlink()
    target = tmp_path / "planted.json"
    target.write_text(json.dumps({"version": 1, "credentials": [], "tokens": {}}))
    os.symlink(target, path)
    assert not tokens.accepts(issued.token)
    with pytest.raises(CanonicalStateUnavailable, match="symlink"):
        tokens.status()


def test_adopt_stores_another_instances_token_and_refuses_anything_else(tmp_path: Path) -> None:
    made = _tokens(tmp_path / "a").ensure()
    assert made is not None
    other = _tokens(tmp_path / "b")
    own = other.ensure()
    assert own is not None
    adopted = other.adopt(f"  {made.token}\n")
    assert adopted.replaced and other.accepts(made.token) and not other.accepts(own.token)
    for wrong in ("", made.token[:-1], made.token + "x", "pbgw_" + "!" * 43, made.token[len(GATEWAY_TOKEN_PREFIX) :]):
        with pytest.raises(ValidationError) as refused:
            other.adopt(wrong)
        assert refused.value.code == "validation_error" and refused.value.details == {"field": "token"}
        assert not wrong or wrong not in refused.value.message
    assert other.accepts(made.token)  # a refused value changes nothing
