"""The credential store (seed 003 §11.1, addendum 2026-09-07): a mode-0600 JSON file replaced
atomically under a lock, and resolution of bindings by reference."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from patchbay.adapters.credentials import CredentialStore
from patchbay.core.credentials import CredentialBinding
from patchbay.core.errors import CanonicalStateUnavailable, CredentialUnavailable, NotFoundError
from patchbay.core.redaction import redact_text


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_write_leaves_one_0600_file_and_no_temporary_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = CredentialStore(home)
    record = store.new_record(owner_id="con_1", kind="api_key", value="v-first-1234")
    store.apply(upserts=[record])
    first_inode = store.path.stat().st_ino
    store.apply(upserts=[record.model_copy(update={"value": "v-second-1234"})])
    assert mode(store.path) == 0o600
    assert store.path.stat().st_ino != first_inode  # replaced by rename, not rewritten in place
    assert sorted(p.name for p in home.iterdir()) == ["credentials.json", "credentials.json.lock"]
    document = json.loads(store.path.read_text())
    assert document["version"] == 1 and document["credentials"][0]["value"] == "v-second-1234"
    assert store.get(record.credential_id).configured is True


def test_concurrent_writer_processes_lose_no_update(tmp_path: Path) -> None:
    home = tmp_path / "home"
    writer = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from patchbay.adapters.credentials import CredentialStore
        store = CredentialStore(Path({str(home)!r}))
        print("ready", flush=True)
        sys.stdin.readline()  # start together, so the writes overlap
        for i in range(25):
            store.apply(upserts=[store.new_record(owner_id="con_" + sys.argv[1], kind="api_key", value=f"v-{{i}}-xyz")])
        """
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", writer, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for n in range(3)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.close()
    assert [p.wait(timeout=120) for p in processes] == [0] * 3
    listed = CredentialStore(home).list_public()
    assert len(listed) == 3 * 25
    assert {c.owner_id for c in listed} == {f"con_{n}" for n in range(3)}


def test_a_symlink_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "elsewhere.json").write_text('{"version": 1, "credentials": []}')
    (home / "credentials.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(CanonicalStateUnavailable) as info:
        CredentialStore(home).list_public()
    assert info.value.code == "canonical_state_unavailable" and "symlink" in info.value.message


def test_a_corrupt_file_is_reported_without_quoting_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "credentials.json").write_text('{"version": 1, "credentials": [{"value": "cnryCORRUPTa1b2"')
    with pytest.raises(CanonicalStateUnavailable) as info:
        CredentialStore(home).list_public()
    assert "corrupt" in info.value.message and "cnryCORRUPT" not in str(info.value)


def test_a_file_widened_by_hand_is_put_back_to_0600(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "home")
    store.apply(upserts=[store.new_record(owner_id="con_1", kind="api_key", value="v-1234")])
    store.path.chmod(0o644)
    store.list_public()
    assert mode(store.path) == 0o600


def test_apply_returns_what_restore_puts_back(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "home")
    old = store.new_record(owner_id="con_1", kind="api_key", value="v-old-1234")
    store.apply(upserts=[old])
    new = store.new_record(owner_id="con_1", kind="api_key", value="v-new-1234")
    previous = store.apply(upserts=[new, old.model_copy(update={"value": "v-changed-1234"})])
    store.restore(previous)
    records = store.load()
    assert set(records) == {old.credential_id} and records[old.credential_id].value == "v-old-1234"


def test_deleting_a_connectors_credentials_also_unshares_the_others(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "home")
    own = store.new_record(owner_id="con_gone", kind="api_key", value="v-own-1234")
    other = store.new_record(owner_id="con_other", kind="api_key", value="v-other-1234")
    store.apply(upserts=[own, other.model_copy(update={"shared_with": ("con_gone",)})])
    assert store.delete_owned_by("con_gone") == [own.credential_id]
    with pytest.raises(NotFoundError):
        store.get(own.credential_id)
    assert store.get(other.credential_id).shared_with == ()


# -- resolution ------------------------------------------------------------------------------


def binding(ref: str, delivery: str = "env", name: str = "PB_KEY") -> CredentialBinding:
    return CredentialBinding(ref=ref, delivery=delivery, name=name)  # type: ignore[arg-type]


def test_resolution_delivers_managed_environment_and_oauth_values_and_registers_them(tmp_path: Path) -> None:
    clock = iter(range(1_000_000, 10_000_000, 1_000_000))
    store = CredentialStore(tmp_path / "home", clock=lambda: next(clock), environ={"PB_FROM_ENV": "cnryENVa1b2"})
    managed = store.new_record(owner_id="con_1", kind="api_key", value="cnryMANAGEDa1b2")
    env_ref = store.new_record(owner_id="con_1", kind="env_reference", variable="PB_FROM_ENV")
    oauth = store.new_record(owner_id="con_1", kind="oauth_token_bundle", value={"access_token": "cnryOAUTHa1b2"})
    store.apply(upserts=[managed, env_ref, oauth])
    resolved = store.resolve(
        [
            binding(managed.credential_id, "header", "X-Api-Key"),
            binding(env_ref.credential_id, "header", "X-Env"),
            binding(oauth.credential_id, "bearer", "Authorization"),
        ],
        connector_id="con_1",
    )
    assert resolved.headers == {
        "X-Api-Key": "cnryMANAGEDa1b2",
        "X-Env": "cnryENVa1b2",
        "Authorization": "Bearer cnryOAUTHa1b2",
    }
    assert "cnry" not in repr(resolved)
    assert redact_text("a cnryMANAGEDa1b2 b cnryENVa1b2 c cnryOAUTHa1b2") == "a [REDACTED] b [REDACTED] c [REDACTED]"
    assert store.get(managed.credential_id).last_used_at is not None
    assert "cnryENVa1b2" not in store.path.read_text()  # an environment value is never stored


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("missing", "missing"),
        ("other_owner", "not_shared"),
        ("unset_variable", "variable_unset"),
        ("crlf", "invalid_value"),
    ],
)
def test_an_unresolvable_binding_names_the_problem(tmp_path: Path, case: str, problem: str) -> None:
    store = CredentialStore(tmp_path / "home", environ={"PB_CRLF": "a\r\nX-Evil: 1"})
    records = {
        "other_owner": store.new_record(owner_id="con_other", kind="api_key", value="v-1234"),
        "unset_variable": store.new_record(owner_id="con_1", kind="env_reference", variable="PB_NOT_SET_ANYWHERE"),
        "crlf": store.new_record(owner_id="con_1", kind="env_reference", variable="PB_CRLF"),
    }
    store.apply(upserts=records.values())
    ref = records[case].credential_id if case in records else "cred_" + "0" * 32
    with pytest.raises(CredentialUnavailable) as info:
        store.resolve([binding(ref, "header", "X-Key")], connector_id="con_1", connector="mine")
    error = info.value
    assert error.code == "auth_required"
    assert error.details == {
        "reason": "credential_unavailable",
        "problem": problem,
        "ref": ref,
        "binding": "header X-Key",
        "connector": "mine",
    }
    assert ref in error.message and "X-Evil" not in error.message


def test_a_shared_credential_resolves_for_the_connector_it_was_shared_with(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "home")
    record = store.new_record(owner_id="con_owner", kind="api_key", value="v-shared-1234")
    store.apply(upserts=[record.model_copy(update={"shared_with": ("con_friend",)})])
    resolved = store.resolve([binding(record.credential_id)], connector_id="con_friend")
    assert resolved.env == {"PB_KEY": "v-shared-1234"}


def test_resolving_nothing_never_touches_the_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert CredentialStore(home).resolve([], connector_id="con_1").env == {}
    assert not home.exists()


def test_an_unreadable_store_makes_resolution_unavailable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "credentials.json").write_text("not json")
    with pytest.raises(CredentialUnavailable) as info:
        CredentialStore(home).resolve([binding("cred_" + "1" * 32)], connector_id="con_1")
    assert info.value.details["problem"] == "unreadable"


def test_the_lock_file_is_private_too(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "home")
    store.apply(upserts=[store.new_record(owner_id="con_1", kind="api_key", value="v-1234")])
    assert mode(store.lock_path) == 0o600
    assert os.access(store.path, os.R_OK)


@pytest.mark.parametrize(
    ("mode", "environ", "expected"),
    [
        ("unset_or_empty", {}, "fall:-back"),
        ("unset_or_empty", {"PB_DEF_VAR": ""}, "fall:-back"),
        ("unset_or_empty", {"PB_DEF_VAR": "set-value"}, "set-value"),
        ("unset", {}, "fall:-back"),
        ("unset", {"PB_DEF_VAR": ""}, ""),
        ("unset", {"PB_DEF_VAR": "set-value"}, "set-value"),
    ],
)
def test_an_environment_default_follows_shell_semantics(
    tmp_path: Path, mode: str, environ: dict[str, str], expected: str
) -> None:
    store = CredentialStore(tmp_path, environ=environ)
    record = store.new_record(
        owner_id="con_a", kind="env_reference", variable="PB_DEF_VAR", default="fall:-back", default_mode=mode
    )
    store.apply(upserts=[record])
    binding = CredentialBinding(ref=record.credential_id, delivery="env", name="K")
    resolved = store.resolve([binding], connector_id="con_a")
    assert resolved.env == {"K": expected}
    assert resolved.secrets == (
        () if expected in ("fall:-back", "") else ("set-value",)
    )  # a plain default is no secret
    assert store.get(record.credential_id).default == "fall:-back"


def test_a_secret_looking_default_is_hidden_and_masked(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path, environ={})
    secret = "cnrySTOREdefault-1a2b3c4d5e"
    record = store.new_record(owner_id="con_a", kind="env_reference", variable="PB_TOKEN", default=secret)
    store.apply(upserts=[record])
    public = store.get(record.credential_id)
    assert public.default is None and public.default_secret and public.default_mode == "unset_or_empty"
    store.register_values()
    assert secret not in redact_text(f"echo {secret}")


def test_plain_bindings_are_delivered_without_the_store_and_never_registered(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "none")
    bindings = [
        CredentialBinding(delivery="env", name="NODE_ENV", value="production-eu-west"),
        CredentialBinding(delivery="env", name="EMPTY", value=""),
    ]
    resolved = store.resolve(bindings, connector_id="con_a")
    assert resolved.env == {"NODE_ENV": "production-eu-west", "EMPTY": ""} and resolved.secrets == ()
    assert redact_text("production-eu-west") == "production-eu-west"


# --- issued tokens (the gateway token's digest) ------------------------------------------------


def test_issued_tokens_survive_record_writes_and_a_reader_sees_another_writers_change(tmp_path: Path) -> None:
    from patchbay.adapters.credentials import IssuedToken

    writer, reader = CredentialStore(tmp_path), CredentialStore(tmp_path)
    assert reader.issued_token("gateway") is None
    first = IssuedToken(sha256="a" * 64, created_at=1)
    assert writer.replace_issued_token("gateway", first) is None
    assert reader.issued_token("gateway") == first
    writer.apply(upserts=[writer.new_record(owner_id="mcp_1", kind="api_key", value="value-of-the-key-123")])
    assert reader.issued_token("gateway") == first  # a record write keeps it
    second = IssuedToken(sha256="b" * 64, created_at=2)
    assert writer.replace_issued_token("gateway", second) == first
    assert reader.issued_token("gateway") == second  # the reader's cached parse is not used for a new file
    assert [r.value for r in reader.load().values()] == ["value-of-the-key-123"]
    assert mode(tmp_path / "credentials.json") == 0o600
    with pytest.raises(ValueError):
        IssuedToken(sha256="not-a-digest", created_at=1)
    assert "b" * 64 not in repr(second)
