"""Import commit (seed 003 §12.2, §15 "Import commit: SQLite batch ... 已创建 secret 必须补偿删除",
§19.10): selected entries only, references and managed credentials, one transaction."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from sqlalchemy import event, text

from patchbay import Runtime
from patchbay.control.connectors import ConnectorService
from patchbay.control.importer import commit_import
from patchbay.core.errors import CanonicalStateUnavailable, ConfigError, MalformedConfigError, NotFoundError
from tests.support.credentials import CREDENTIAL_SERVER, sha256
from tests.support.stored import session_log_text, store_bytes

MANAGED = "cnryCOMMITmanaged-0f1e2d3c"
FROM_ENV = "cnryCOMMITenv-4b5a6978"


def write(workspace: Path, servers: dict) -> Path:
    path = workspace / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def stored_records(service: ConnectorService) -> dict:
    return service.credentials.store.load()


def database_bytes(service: ConnectorService) -> bytes:
    return store_bytes(service.settings)


TWO = {
    "first": {"command": "mcp-server-time", "env": {"FIRST_KEY": MANAGED, "FIRST_REF": "${FIRST_VAR}"}},
    "second": {
        "type": "http",
        "url": "https://second.example.com/mcp",
        "headers": {"Authorization": f"Bearer {MANAGED}"},
    },
    "third": {"command": "mcp-server-time"},
}


def test_commit_imports_only_the_selection_with_references_and_managed_values(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    source = write(workspace, TWO)
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    result = commit_import(service, select=["first", "second"], workspace=workspace, home=home)
    assert [(i.name, i.connector, i.transport) for i in result.imported] == [
        ("first", "first", "stdio"),
        ("second", "second", "streamable_http"),
    ]
    assert [c.name for c in service.list_connectors()] == ["first", "second"]  # not "third"
    first = service.get("first")
    assert first.source == "imported" and first.description == f"imported from {source}"
    views = {v["name"]: v for v in service.credentials.binding_views(first)}
    assert (views["FIRST_KEY"]["source"], views["FIRST_KEY"]["kind"]) == ("managed", "api_key")
    assert (views["FIRST_REF"]["source"], views["FIRST_REF"]["variable"]) == ("environment", "FIRST_VAR")
    second = service.get("second")
    [bearer] = service.credentials.binding_views(second)
    assert (bearer["delivery"], bearer["kind"], bearer["owned"]) == ("bearer", "bearer_token", True)
    records = stored_records(service)
    assert {r.owner_id for r in records.values()} == {first.connector_id, second.connector_id}
    assert sorted(r.value for r in records.values() if r.source == "managed") == [MANAGED, MANAGED]
    assert MANAGED.encode() not in database_bytes(service)
    assert MANAGED not in json.dumps(result.model_dump(mode="json"))
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before  # never rewritten


def test_a_failure_on_the_second_insert_leaves_no_connector_and_no_credential(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    write(workspace, TWO)
    with service.repository.engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(
                text(
                    "CREATE TRIGGER fail_second BEFORE INSERT ON mcp_connectors WHEN NEW.name = 'second' "
                    "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
                )
            )
        else:
            conn.execute(
                text(
                    "CREATE FUNCTION fail_second() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'injected failure'; END $$"
                )
            )
            conn.execute(
                text(
                    "CREATE TRIGGER fail_second BEFORE INSERT ON mcp_connectors FOR EACH ROW "
                    "WHEN (NEW.name = 'second') EXECUTE FUNCTION fail_second()"
                )
            )
    with pytest.raises(Exception, match="injected failure"):
        commit_import(service, select=["first", "second"], workspace=workspace, home=home)
    assert service.list_connectors() == []
    assert stored_records(service) == {}


def test_a_failed_database_commit_removes_the_credentials_already_written(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    write(workspace, TWO)
    seen: list[int] = []

    def refuse_commit(conn) -> None:  # runs after the credential store write, before COMMIT
        seen.append(len(stored_records(service)))
        raise CanonicalStateUnavailable("injected commit failure")

    engine = service.repository.engine
    event.listen(engine, "commit", refuse_commit)
    try:
        with pytest.raises(CanonicalStateUnavailable):
            commit_import(service, select=["first", "second"], workspace=workspace, home=home)
    finally:
        event.remove(engine, "commit", refuse_commit)
    assert seen == [3]  # three credentials existed when the commit was refused
    assert service.list_connectors() == []
    assert stored_records(service) == {}


def test_a_credential_store_failure_keeps_no_connector(
    service: ConnectorService, workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace, TWO)

    def broken(*args, **kwargs):
        raise CanonicalStateUnavailable("the credential store cannot be written")

    monkeypatch.setattr(service.credentials.store, "apply", broken)
    with pytest.raises(CanonicalStateUnavailable):
        commit_import(service, select=["first", "second"], workspace=workspace, home=home)
    assert service.list_connectors() == []


def test_references_only_refuses_plaintext_values_and_writes_nothing(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    write(workspace, TWO)
    with pytest.raises(ConfigError) as info:
        commit_import(service, select=["first", "third"], workspace=workspace, home=home, references_only=True)
    error = info.value
    assert error.field == "references_only" and error.details["fields"] == {"first": ["env.FIRST_KEY"]}
    assert MANAGED not in error.message
    assert service.list_connectors() == [] and stored_records(service) == {}
    write(workspace, {"refs": {"command": "mcp-server-time", "env": {"K": "${K_VAR}"}}})
    commit_import(service, select=["refs"], workspace=workspace, home=home, references_only=True)
    [record] = stored_records(service).values()
    assert (record.source, record.variable, record.value) == ("environment", "K_VAR", None)


def test_rename_conflicts_and_selection_errors(service: ConnectorService, workspace: Path, home: Path) -> None:
    service.add("first", service.remote_target("https://elsewhere.example.com/mcp"))
    write(
        workspace,
        {**TWO, "needs": {"command": "s", "env": {"K": "${input:k}"}}, "Bad Name!": {"command": "mcp-server-time"}},
    )
    with pytest.raises(ConfigError) as conflict:
        commit_import(service, select=["first"], workspace=workspace, home=home)
    assert conflict.value.details["conflict"]["connector"] == "first" and "--rename first=NEW" in conflict.value.message
    with pytest.raises(ConfigError) as blocked:
        commit_import(service, select=["needs"], workspace=workspace, home=home)
    assert blocked.value.details["problems"][0]["code"] == "needs_input"
    with pytest.raises(NotFoundError):
        commit_import(service, select=["absent"], workspace=workspace, home=home)
    with pytest.raises(ConfigError):
        commit_import(service, select=[], workspace=workspace, home=home)
    assert [c.name for c in service.list_connectors()] == ["first"]

    result = commit_import(
        service,
        select=["first", "Bad Name!", "needs"],
        renames={"first": "first-imported", "Bad Name!": "good-name"},
        inputs={"k": "K_FROM_ENV"},
        workspace=workspace,
        home=home,
    )
    assert [(i.name, i.connector) for i in result.imported] == [
        ("first", "first-imported"),
        ("Bad Name!", "good-name"),
        ("needs", "needs"),
    ]
    assert service.get("good-name").display_name == "Bad Name!"
    # renamed out of a conflict: shown by its new name, not as a second "first"
    assert service.get("first-imported").display_name == "first-imported"
    [needs] = service.credentials.binding_views(service.get("needs"))
    assert needs["variable"] == "K_FROM_ENV"


def test_a_malformed_file_stops_the_commit(
    service: ConnectorService, place: Callable[[str, Path], Path], workspace: Path, home: Path
) -> None:
    place("malformed.json", workspace / ".mcp.json")
    place("cursor_mcp.json", workspace / ".cursor/mcp.json")
    with pytest.raises(MalformedConfigError) as info:
        commit_import(service, select=["docs"], workspace=workspace, home=home)
    assert (info.value.line, info.value.column) == (4, 5)
    assert service.list_connectors() == []
    result = commit_import(
        service, select=["docs"], paths=[str(workspace / ".cursor/mcp.json")], workspace=workspace, home=home
    )
    assert [i.connector for i in result.imported] == ["docs"]


def test_the_import_can_be_disabled_and_keeps_the_file_settings(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    write(workspace, {"a": {"command": "mcp-server-time", "excludeTools": ["convert_*"], "lifecycle": "eager"}})
    commit_import(service, select=["a"], workspace=workspace, home=home, enabled=False)
    connector = service.get("a")
    assert connector.settings.enabled is False and connector.settings.exclude_tools == ("convert_*",)
    assert connector.runtime_config == {"lifecycle": "eager"}


@pytest.mark.anyio
async def test_an_imported_connector_runs_with_its_credentials(
    service: ConnectorService, workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PB_IMPORT_HOST_VAR", FROM_ENV)
    write(
        workspace,
        {
            "creds": {
                "command": sys.executable,
                "args": [str(CREDENTIAL_SERVER)],
                "env": {"PB_KEY": MANAGED, "PB_FROM_HOST": "${PB_IMPORT_HOST_VAR}"},
            }
        },
    )
    commit_import(service, select=["creds"], workspace=workspace, home=home)
    service.update_settings("creds", approval_mode="allow_all")
    config = service.queries.runtime_config(workspace)
    with anyio.fail_after(30):
        async with Runtime(config, settings=service.settings) as runtime:
            key = await runtime.call("mcp.creds.digest", {"name": "PB_KEY"})
            host = await runtime.call("mcp.creds.digest", {"name": "PB_FROM_HOST"})
    assert (key.text, host.text) == (sha256(MANAGED), sha256(FROM_ENV))


def test_a_committed_import_reaches_the_runtime_snapshot_of_known_workspaces(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    service.queries.project(workspace)  # a known workspace
    write(workspace, TWO)
    snapshot = workspace / ".patchbay" / "mcp-runtime.json"
    commit_import(service, select=["first", "third"], workspace=workspace, home=home)
    servers = json.loads(snapshot.read_text())["servers"]
    assert sorted(servers) == ["first", "third"]
    assert MANAGED not in snapshot.read_text()  # references only


@pytest.mark.anyio
async def test_imported_defaults_and_plain_settings_reach_a_real_stdio_server_unmasked(
    service: ConnectorService, workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PB_UNSET_VAR", raising=False)
    monkeypatch.setenv("PB_EMPTY_VAR", "")
    write(
        workspace,
        {
            "app": {
                "command": sys.executable,
                "args": [str(CREDENTIAL_SERVER)],
                "env": {
                    "NODE_ENV": "production",
                    "PB_DEFAULTED": "${PB_UNSET_VAR:-fall:-back-value}",
                    "PB_ONLY_UNSET": "${PB_EMPTY_VAR-not-used-when-empty}",
                    "PB_EMPTY_DEFAULTED": "${PB_EMPTY_VAR:-used-when-empty}",
                    "PB_SECRET_DEFAULT": "${PB_UNSET_VAR:-cnryIMPORTdefault-9f8e7d6c5b}",
                },
            }
        },
    )
    commit_import(service, select=["app"], workspace=workspace, home=home)
    connector = service.get("app")
    views = {v["name"]: v for v in service.credentials.binding_views(connector)}
    assert (views["NODE_ENV"]["source"], views["NODE_ENV"]["plain"]) == ("plain", "production")
    assert (views["PB_DEFAULTED"]["default"], views["PB_DEFAULTED"]["default_mode"]) == (
        "fall:-back-value",
        "unset_or_empty",
    )
    assert views["PB_ONLY_UNSET"]["default_mode"] == "unset"
    assert views["PB_SECRET_DEFAULT"]["default"] is None and views["PB_SECRET_DEFAULT"]["default_secret"]
    assert views["PB_DEFAULTED"]["problem"] is None  # no auth_required: the default applies
    assert b"cnryIMPORTdefault" not in database_bytes(service)
    service.update_settings("app", approval_mode="allow_all")
    config = service.queries.runtime_config(workspace)
    with anyio.fail_after(30):
        async with Runtime(config, settings=service.settings) as runtime:
            node_env = await runtime.call("mcp.app.reveal", {"name": "NODE_ENV"})
            defaulted = await runtime.call("mcp.app.reveal", {"name": "PB_DEFAULTED"})
            only_unset = await runtime.call("mcp.app.digest", {"name": "PB_ONLY_UNSET"})
            empty_defaulted = await runtime.call("mcp.app.reveal", {"name": "PB_EMPTY_DEFAULTED"})
            secret = await runtime.call("mcp.app.digest", {"name": "PB_SECRET_DEFAULT"})
            echoed = await runtime.call("mcp.app.reveal", {"name": "PB_SECRET_DEFAULT"})
    assert node_env.text == "NODE_ENV is production"  # a plain setting is never masked
    assert defaulted.text == "PB_DEFAULTED is fall:-back-value"
    assert only_unset.text == sha256("")  # ${VAR-x}: set but empty, so no default
    assert empty_defaulted.text == "PB_EMPTY_DEFAULTED is used-when-empty"
    assert secret.text == sha256("cnryIMPORTdefault-9f8e7d6c5b")
    log = session_log_text(service.settings, runtime.session_id)
    assert "NODE_ENV is production" in log and "cnryIMPORTdefault" not in log  # the secret default is masked
    assert echoed.text.startswith("PB_SECRET_DEFAULT is ")


def test_pasted_text_is_committed_like_a_file_and_the_standard_locations_are_not_read(
    service: ConnectorService, workspace: Path, home: Path
) -> None:
    write(workspace, {"from-file": {"command": "mcp-server-time"}})
    pasted = (
        '{\n  // pasted from a README\n  "mcpServers": {\n'
        f'    "pasted": {{"command": "mcp-server-time", "env": {{"API_KEY": "{MANAGED}"}}}},\n  }},\n}}'
    )
    result = commit_import(service, select=["pasted"], workspace=workspace, home=home, text=pasted)
    assert [(i.name, i.source) for i in result.imported] == [("pasted", "pasted text")]
    assert [c.name for c in service.list_connectors()] == ["pasted"]
    connector = service.get("pasted")
    assert connector.source == "imported" and connector.description == "imported from pasted text"
    [binding] = service.credentials.binding_views(connector)
    assert (binding["name"], binding["source"]) == ("API_KEY", "managed")
    assert MANAGED.encode() not in database_bytes(service)
    with pytest.raises(NotFoundError):
        commit_import(service, select=["from-file"], workspace=workspace, home=home, text=pasted)
