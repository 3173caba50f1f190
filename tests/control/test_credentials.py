"""Connectors bind credentials by reference (seed 003 §11.1, §15, addendum 2026-09-07): values go to
the credential store, the database holds references, owners and sharing are enforced."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.control.credentials import BindingSpec, parse_bearer, parse_env
from patchbay.core.errors import CanonicalStateUnavailable, ConfigError, NotFoundError, RevisionConflictError
from patchbay.core.models import ToolCacheEntry
from patchbay.core.settings import Settings
from tests.support.credentials import stdio_argv
from tests.support.stored import store_bytes

pytestmark = pytest.mark.anyio

MANAGED = "cnrySVCmanaged-7f3e9d1c"
OTHER = "cnrySVCother-0a1b2c3d"


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


def database_bytes(service: ConnectorService) -> bytes:
    return store_bytes(service.settings)


def add_stdio(service: ConnectorService, workspace: Path, *specs: BindingSpec, name: str = "local"):
    target = service.stdio_target(sys.executable, stdio_argv()[1:], cwd=None, workspace=workspace)
    return service.add(name, target, bindings=specs)[0]


def test_a_connector_stores_references_and_the_database_never_a_value(
    service: ConnectorService, tmp_path: Path
) -> None:
    connector = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"), parse_env("PB_HOST=@env:PB_SVC_VAR"))
    assert connector.revision == 1
    bindings = {b.name: b for b in connector.bindings}
    assert set(bindings) == {"PB_KEY", "PB_HOST"}
    records = service.credentials.store.load()
    managed, environment = records[bindings["PB_KEY"].ref], records[bindings["PB_HOST"].ref]
    assert (managed.source, managed.kind, managed.value, managed.owner_id) == (
        "managed",
        "api_key",
        MANAGED,
        connector.connector_id,
    )
    assert (environment.source, environment.kind, environment.variable, environment.value) == (
        "environment",
        "env_reference",
        "PB_SVC_VAR",
        None,
    )
    assert MANAGED.encode() not in database_bytes(service)
    server = service.queries.runtime_config(tmp_path).servers[0]
    assert server.bindings == connector.bindings and "bindings" not in server.runtime_config


def test_bindings_that_do_not_fit_create_nothing(service: ConnectorService, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        add_stdio(service, tmp_path, parse_bearer(MANAGED))
    assert info.value.details["field"] == "bindings"
    with pytest.raises(NotFoundError):
        service.get("local")
    assert service.credentials.store.list_public() == []


def test_when_the_store_cannot_be_written_the_new_connector_is_removed_again(
    service: ConnectorService, tmp_path: Path
) -> None:
    lock = service.settings.home / "credentials.json.lock"
    lock.unlink(missing_ok=True)  # opening the service took the lock once (its repair pass)
    lock.mkdir()  # the store cannot be locked
    with pytest.raises(CanonicalStateUnavailable):
        add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"))
    assert service.list_connectors() == []


def test_a_new_value_for_an_owned_binding_replaces_it_in_place(service: ConnectorService, tmp_path: Path) -> None:
    connector = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"))
    ref = connector.bindings[0].ref
    same = service.set_bindings("local", [parse_env(f"PB_KEY={OTHER}")])
    assert same.revision == connector.revision and same.bindings == connector.bindings
    assert service.credentials.store.load()[ref].value == OTHER
    moved = service.set_bindings("local", [parse_env("PB_KEY=@env:PB_SVC_VAR")])
    record = service.credentials.store.load()[ref]
    assert moved.bindings[0].ref == ref and (record.source, record.variable, record.value) == (
        "environment",
        "PB_SVC_VAR",
        None,
    )


async def test_unsetting_a_binding_deletes_its_credential_and_keeps_a_fresh_cache(
    service: ConnectorService, tmp_path: Path
) -> None:
    connector = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"))
    result = await service.probe("local", workspace=tmp_path)
    assert result.state == "ready", result.message
    added = service.set_bindings("local", [parse_env(f"PB_OTHER={OTHER}")])
    assert added.revision == connector.revision + 1
    assert service.queries.cached_catalog(added)[1] == "fresh"  # bindings are no part of the server's identity
    removed = service.set_bindings("local", unset=["env:PB_KEY"])
    assert [b.name for b in removed.bindings] == ["PB_OTHER"]
    assert [c.credential_id for c in service.credentials.store.list_public()] == [removed.bindings[0].ref]
    with pytest.raises(ConfigError) as info:
        service.set_bindings("local", unset=["env:PB_KEY"])
    assert info.value.details["field"] == "unset"


def test_a_lost_revision_puts_the_store_back(service: ConnectorService, tmp_path: Path) -> None:
    connector = add_stdio(service, tmp_path)
    with pytest.raises(RevisionConflictError):
        service.set_bindings("local", [parse_env(f"PB_KEY={MANAGED}")], expected_revision=connector.revision + 5)
    assert service.credentials.store.list_public() == []
    assert service.get("local").bindings == ()


def test_another_connectors_credential_is_usable_only_once_shared(service: ConnectorService, tmp_path: Path) -> None:
    owner = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"), name="owner")
    add_stdio(service, tmp_path, name="friend")
    ref = owner.bindings[0].ref
    with pytest.raises(ConfigError) as info:
        service.set_bindings("friend", [parse_env(f"PB_KEY=@credential:{ref}")])
    assert "not shared" in info.value.message
    service.credentials.update(ref, share=["friend"])
    friend = service.set_bindings("friend", [parse_env(f"PB_KEY=@credential:{ref}")])
    assert friend.bindings[0].ref == ref
    with pytest.raises(ConfigError) as info:
        service.credentials.update(ref, unshare=["friend"])
    assert info.value.details["field"] == "unshare"
    shown = service.credentials.show_view(ref)
    assert shown["owner"] == "owner" and shown["shared_with"] == ["friend"]
    assert {b["connector"] for b in shown["bound_as"]} == {"owner", "friend"}


def test_removing_a_connector_removes_the_credentials_it_owns(service: ConnectorService, tmp_path: Path) -> None:
    add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"), name="owner")
    keeper = add_stdio(service, tmp_path, parse_env(f"PB_KEY={OTHER}"), name="keeper")
    service.credentials.update(keeper.bindings[0].ref, share=["owner"])
    service.remove("owner")
    remaining = service.credentials.store.list_public()
    assert [c.credential_id for c in remaining] == [keeper.bindings[0].ref]
    assert remaining[0].shared_with == ()
    assert MANAGED not in service.credentials.store.path.read_text()


def test_exist_ok_compares_bindings_by_value(service: ConnectorService, tmp_path: Path) -> None:
    target = service.stdio_target(sys.executable, stdio_argv()[1:], cwd=None, workspace=tmp_path)
    first, created = service.add("local", target, bindings=[parse_env(f"PB_KEY={MANAGED}")])
    again, created_again = service.add("local", target, exist_ok=True, bindings=[parse_env(f"PB_KEY={MANAGED}")])
    assert created and not created_again and again == first
    with pytest.raises(ConfigError) as info:
        service.add("local", target, exist_ok=True, bindings=[parse_env(f"PB_KEY={OTHER}")])
    assert info.value.details["field"] == "bindings"


def test_a_bound_credential_is_removed_only_with_force(service: ConnectorService, tmp_path: Path) -> None:
    connector = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"))
    ref = connector.bindings[0].ref
    with pytest.raises(ConfigError) as info:
        service.credentials.remove(ref)
    assert info.value.details["field"] == "force"
    service.credentials.remove(ref, force=True)
    assert service.credentials.binding_views(service.get("local"))[0]["problem"] == "missing"


async def test_a_probe_resolves_bindings_and_masks_them(service: ConnectorService, tmp_path: Path) -> None:
    target = service.stdio_target(sys.executable, stdio_argv("PB_KEY")[1:], cwd=None, workspace=tmp_path)
    service.add("leaky", target, bindings=[parse_env(f"PB_KEY={MANAGED}")])
    result = await service.probe("leaky", workspace=tmp_path)
    assert result.state == "ready", result.message
    assert "starting with PB_KEY=[REDACTED]" in result.stderr_tail
    assert MANAGED not in result.model_dump_json()
    assert service.credentials.store.list_public()[0].last_used_at is not None


async def test_a_probe_with_an_unset_variable_is_auth_required_before_anything_starts(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PB_SVC_UNSET", raising=False)
    marker = tmp_path / "started"
    target = service.stdio_target("sh", ["-c", f"touch {marker}"], cwd=None, workspace=tmp_path)
    service.add("needs", target, bindings=[parse_env("PB_KEY=@env:PB_SVC_UNSET")])
    result = await service.probe("needs", workspace=tmp_path)
    assert (result.state, result.code) == ("error", "auth_required")
    assert "PB_SVC_UNSET" in (result.message or "") and not marker.exists()


def test_cache_entries_survive_an_in_place_rotation(service: ConnectorService, tmp_path: Path) -> None:
    connector = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"))
    service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=connector.connector_id,
            config_revision=connector.revision,
            fingerprint=service.queries.fingerprint(connector),
        )
    )
    service.set_bindings("local", [parse_env(f"PB_KEY={OTHER}")])
    assert service.queries.cached_catalog(service.get("local"))[1] == "fresh"


def test_a_credential_used_by_oauth_settings_is_removed_only_with_force(service: ConnectorService) -> None:
    from patchbay.control.oauth import OAuthService

    service.add("remote", service.remote_target("https://mcp.example.com/mcp"))
    OAuthService(service).configure("remote", client_id="cid", client_secret="client-secret-value-1")
    (ref,) = [c.credential_id for c in service.credentials.store.list_public()]
    view = service.credentials.show_view(ref)
    assert view["bound_as"] == [{"connector": "remote", "delivery": "oauth", "name": "client_secret"}]
    with pytest.raises(ConfigError) as info:
        service.credentials.remove(ref)
    assert "oauth client_secret" in info.value.message
    assert ref in service.credentials.store.load()
    service.credentials.remove(ref, force=True)
    assert ref not in service.credentials.store.load()


def test_opening_a_service_masks_every_stored_value_before_any_connector_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import uuid

    from patchbay.core.redaction import redact_text
    from patchbay.runtime.events.log import EventLog

    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    first = ConnectorService(open_store(settings), settings)
    canary, env_canary = f"zqOTHERsecret-{uuid.uuid4().hex[:10]}", f"zqENVsecret-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("PB_OPEN_VAR", env_canary)
    add_stdio(first, tmp_path, parse_env(f"CANARY={canary}"), parse_env("OTHER=@env:PB_OPEN_VAR"), name="holder")
    assert redact_text(f"contents of .env: {canary}") == f"contents of .env: {canary}"  # nothing resolved yet
    ConnectorService(open_store(settings), settings)  # serve, the CLI and the library open it like this
    assert canary not in redact_text(f"contents of .env: API_TOKEN_VALUE {canary}")
    assert env_canary not in redact_text(f"echo {env_canary}")
    log_path = tmp_path / "s.jsonl"
    with EventLog(log_path, "s1") as log:  # e.g. a resource URI typed with the canary, logged before resolving
        log.append("mcp.resource.requested", {"server": "fs", "uri": f"file:///{canary}"})
    assert canary not in log_path.read_text() and json.loads(log_path.read_text())["payload"]["server"] == "fs"


def test_a_home_opened_against_another_database_keeps_the_credentials_of_the_first(
    service: ConnectorService, tmp_path: Path
) -> None:
    connector = add_stdio(service, tmp_path, parse_env(f"PB_KEY={MANAGED}"))
    ref = connector.bindings[0].ref
    assert ref is not None and service.credentials.store.load()[ref].database == service.settings.database_identity
    # the same data home with another registry database (a one-off PATCHBAY_DATABASE_URL)
    other = Settings(home=service.settings.home, database_url=f"sqlite:///{tmp_path / 'other.db'}")
    assert other.database_identity != service.settings.database_identity
    report = ConnectorService(open_store(other), other).credentials.repair()
    assert report.deleted == [] and report.foreign == [ref] and not report.changed
    assert ref in service.credentials.store.load()
    back = ConnectorService(open_store(service.settings), service.settings)
    resolved = back.credentials.store.resolve(back.get("local").bindings, connector_id=connector.connector_id)
    assert resolved.env == {"PB_KEY": MANAGED}


def test_an_orphan_written_before_the_database_was_recorded_is_kept(service: ConnectorService, tmp_path: Path) -> None:
    store = service.credentials.store
    legacy = store.new_record(owner_id="con_gone", kind="api_key", value=OTHER).model_copy(update={"database": None})
    mine = store.new_record(owner_id="con_gone_too", kind="api_key", value=MANAGED)
    store.apply(upserts=[legacy, mine])
    report = service.credentials.repair()
    assert report.deleted == [mine.credential_id] and report.foreign == [legacy.credential_id]
    assert set(store.load()) == {legacy.credential_id}


def test_database_identity_names_the_database_without_credentials(tmp_path: Path) -> None:
    sqlite = Settings(home=tmp_path, database_url=None)
    assert sqlite.database_identity == f"sqlite:{(tmp_path / 'patchbay.db').resolve()}"
    pg = Settings(home=tmp_path, database_url="postgresql+psycopg://bob:s3cret@db.example:5433/patchbay")
    assert pg.database_identity == "postgresql://db.example:5433/patchbay"
    assert "s3cret" not in pg.database_identity and "bob" not in pg.database_identity
