"""The connector service: grants, targets and their working directories, runtime options, probes
and the cache fingerprint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ConfigError, RevisionConflictError
from patchbay.core.models import ToolCacheEntry, ToolSummary
from patchbay.core.settings import Settings
from tests.support.egress import audit_lines

pytestmark = pytest.mark.anyio


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


def test_grants_must_be_allow_ask_or_deny(service: ConnectorService, tmp_path: Path) -> None:
    service.add("c", service.stdio_target("true", [], cwd=None, workspace=tmp_path))
    with pytest.raises(ConfigError) as exc:
        service.grant("c", "t", "maybe")
    assert exc.value.details["field"] == "decision"


def test_a_cwd_symlink_leading_out_of_the_workspace_is_refused(service: ConnectorService, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.symlink("..", workspace / "up")
    os.symlink("/etc", workspace / "etclink")
    (workspace / "tools").mkdir()
    for cwd in ("up", "etclink", "etclink/ssl"):
        with pytest.raises(ConfigError) as exc:
            service.stdio_target("true", [], cwd=cwd, workspace=workspace)
        assert exc.value.details["field"] == "cwd"
    assert service.stdio_target("true", [], cwd="tools", workspace=workspace).cwd == "tools"


def test_an_absolute_cwd_through_a_symlinked_workspace_is_inside(service: ConnectorService, tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    os.symlink(real, tmp_path / "link")
    target = service.stdio_target("true", [], cwd=str(tmp_path / "link" / "sub"), workspace=tmp_path / "link")
    assert target.cwd == "sub"


# -- runtime options (seed 000 §3, §3.1; seed 003 §5.1) ----------------------------------------


def _stdio(service: ConnectorService, tmp_path: Path, name: str = "c"):
    connector, _ = service.add(name, service.stdio_target("true", [], cwd=None, workspace=tmp_path))
    return connector


def test_runtime_options_are_merged_stored_sparsely_and_read_back_by_the_runtime(
    service: ConnectorService, tmp_path: Path
) -> None:
    before = _stdio(service, tmp_path)
    updated = service.update_runtime_options(
        "c",
        lifecycle="keep_alive",
        request_timeout=5,
        restart={"base_delay": 1.5, "max_restarts": 5},
        limits={"address_space_bytes": 512 * 2**20, "open_files": 256},
    )
    assert updated.revision == before.revision + 1
    assert updated.runtime_config == {
        "lifecycle": "keep_alive",
        "request_timeout": 5,
        "restart": {"base_delay": 1.5, "max_restarts": 5},
        "limits": {"address_space_bytes": 512 * 2**20, "open_files": 256},
    }
    again = service.update_runtime_options("c", restart={"enabled": False}, idle_timeout=30.0)
    assert again.runtime_config["restart"] == {"base_delay": 1.5, "max_restarts": 5, "enabled": False}

    options = service.queries.runtime_config(tmp_path).servers[0].options
    assert (options.lifecycle, options.idle_timeout, options.request_timeout, options.max_call_seconds) == (
        "keep_alive",
        30.0,
        5.0,
        None,
    )
    assert (options.restart.enabled, options.restart.base_delay, options.restart.max_delay) == (False, 1.5, 10.0)
    assert options.restart.max_restarts == 5
    assert (options.limits.address_space_bytes, options.limits.cpu_seconds, options.limits.open_files) == (
        512 * 2**20,
        None,
        256,
    )
    assert service.get("c").target.cwd == "" and "cwd" not in service.get("c").runtime_config


def test_none_resets_an_option_a_section_key_or_a_whole_section(service: ConnectorService, tmp_path: Path) -> None:
    _stdio(service, tmp_path)
    service.update_runtime_options(
        "c",
        lifecycle="eager",
        request_timeout=5.0,
        restart={"base_delay": 2.0, "enabled": False},
        limits={"cpu_seconds": 9},
    )
    connector = service.update_runtime_options("c", lifecycle=None, restart={"base_delay": None})
    assert connector.runtime_config == {
        "request_timeout": 5.0,
        "restart": {"enabled": False},
        "limits": {"cpu_seconds": 9},
    }
    connector = service.update_runtime_options("c", restart={"enabled": None}, limits=None)
    assert connector.runtime_config == {"request_timeout": 5.0}
    assert service.effective_runtime_options(connector).restart.enabled is True


def test_an_unchanged_option_set_writes_nothing(service: ConnectorService, tmp_path: Path) -> None:
    _stdio(service, tmp_path)
    first = service.update_runtime_options("c", request_timeout=5.0)
    same = service.update_runtime_options("c", request_timeout=5.0)
    assert same.revision == first.revision and service.get("c").revision == first.revision
    assert service.update_runtime_options("c").revision == first.revision


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"timeout": 5}, "timeout"),
        ({"cwd": "elsewhere"}, "cwd"),
        ({"lifecycle": "keep_forever"}, "lifecycle"),
        ({"lifecycle": 1}, "lifecycle"),
        ({"idle_timeout": 0}, "idle_timeout"),
        ({"idle_timeout": -1.0}, "idle_timeout"),
        ({"request_timeout": "5"}, "request_timeout"),
        ({"request_timeout": True}, "request_timeout"),
        ({"request_timeout": float("inf")}, "request_timeout"),
        ({"max_call_seconds": float("nan")}, "max_call_seconds"),
        ({"max_call_seconds": 10**9}, "max_call_seconds"),
        ({"restart": True}, "restart"),
        ({"restart": {"enabled": 1}}, "restart.enabled"),
        ({"restart": {"base_delay": 0}}, "restart.base_delay"),
        ({"restart": {"max_delay": -2}}, "restart.max_delay"),
        ({"restart": {"max_restarts": -1}}, "restart.max_restarts"),
        ({"restart": {"max_restarts": 101}}, "restart.max_restarts"),
        ({"restart": {"max_restarts": 2.0}}, "restart.max_restarts"),
        ({"restart": {"cap": 3}}, "restart.cap"),
        ({"limits": {"open_files": 0}}, "limits.open_files"),
        ({"limits": {"cpu_seconds": -5}}, "limits.cpu_seconds"),
        ({"limits": {"cpu_seconds": 1.5}}, "limits.cpu_seconds"),
        ({"limits": {"address_space_bytes": 4096}}, "limits.address_space_bytes"),
        ({"limits": {"address_space_bytes": 2**64}}, "limits.address_space_bytes"),
        ({"limits": {"memory": 2**30}}, "limits.memory"),
    ],
)
def test_each_bad_runtime_option_is_invalid_config_naming_the_field_and_stores_nothing(
    service: ConnectorService, tmp_path: Path, changes: dict, field: str
) -> None:
    _stdio(service, tmp_path)
    before = service.update_runtime_options("c", request_timeout=7.0, restart={"max_restarts": 2})
    with pytest.raises(ConfigError) as exc:
        service.update_runtime_options("c", **{"lifecycle": "eager", "max_call_seconds": 30.0, **changes})
    assert exc.value.code == "invalid_config" and exc.value.details["field"] == field
    after = service.get("c")
    assert (after.runtime_config, after.revision) == (before.runtime_config, before.revision)


@pytest.mark.parametrize("url_or_socket", ["https://example.com/mcp", "/run/user/1000/mcp.sock"])
def test_resource_limits_are_for_local_commands_only(service: ConnectorService, url_or_socket: str) -> None:
    target = (
        service.remote_target(url_or_socket)
        if url_or_socket.startswith("https")
        else service.socket_target(url_or_socket)
    )
    before, _ = service.add("remote", target)
    with pytest.raises(ConfigError) as exc:
        service.update_runtime_options("remote", limits={"cpu_seconds": 10})
    assert exc.value.details["field"] == "limits"
    assert service.get("remote").runtime_config == {} and service.get("remote").revision == before.revision
    timed = service.update_runtime_options("remote", lifecycle="eager", request_timeout=3.0, limits=None)
    assert timed.runtime_config == {"lifecycle": "eager", "request_timeout": 3.0}


def test_a_stale_revision_is_a_revision_conflict_and_changes_nothing(service: ConnectorService, tmp_path: Path) -> None:
    from patchbay.core.errors import RevisionConflictError

    seen = _stdio(service, tmp_path)
    current = service.update_runtime_options("c", request_timeout=5.0, expected_revision=seen.revision)
    for changes in ({"request_timeout": 9.0}, {"request_timeout": 5.0}):
        with pytest.raises(RevisionConflictError) as exc:
            service.update_runtime_options("c", expected_revision=seen.revision, **changes)
        assert exc.value.code == "revision_conflict"
    after = service.get("c")
    assert (after.runtime_config, after.revision) == ({"request_timeout": 5.0}, current.revision)


def test_a_write_that_lands_between_read_and_update_wins_and_ours_is_refused(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from patchbay.core.errors import RevisionConflictError

    _stdio(service, tmp_path)
    repository = service.repository
    original = repository.connectors.update

    def interleaved(connector_id: str, expected_revision: int, **fields):
        monkeypatch.setattr(repository.connectors, "update", original)
        other = repository.connectors.get(connector_id)
        original(connector_id, other.revision, description="edited meanwhile")  # the concurrent writer
        return original(connector_id, expected_revision, **fields)

    monkeypatch.setattr(repository.connectors, "update", interleaved)
    with pytest.raises(RevisionConflictError):
        service.update_runtime_options("c", lifecycle="eager")
    after = service.get("c")
    assert after.description == "edited meanwhile" and after.runtime_config == {}


def test_dry_run_validates_and_returns_the_result_without_writing(service: ConnectorService, tmp_path: Path) -> None:
    before = _stdio(service, tmp_path)
    preview = service.update_runtime_options("c", dry_run=True, lifecycle="eager")
    assert preview.runtime_config == {"lifecycle": "eager"}
    assert service.get("c").runtime_config == {} and service.get("c").revision == before.revision
    with pytest.raises(ConfigError):
        service.update_runtime_options("c", dry_run=True, lifecycle="never")


def test_changing_options_keeps_a_fresh_tool_cache_fresh(service: ConnectorService, tmp_path: Path) -> None:
    connector = _stdio(service, tmp_path)
    service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=connector.connector_id,
            config_revision=connector.revision,
            fingerprint=service.queries.fingerprint(connector),
            tools=(ToolSummary(name="t1", annotations={"destructiveHint": True}),),
        )
    )
    updated = service.update_runtime_options("c", request_timeout=5.0)
    entry, state = service.queries.cached_catalog(updated)
    assert state == "fresh" and entry.config_revision == updated.revision
    assert [t.name for t in service.queries.runtime_config(tmp_path).servers[0].tools] == ["t1"]


def test_keys_that_are_no_runtime_option_already_stored_are_kept(service: ConnectorService, tmp_path: Path) -> None:
    connector = _stdio(service, tmp_path)
    service.repository.connectors.update(
        connector.connector_id, connector.revision, runtime_config={"expose_resources": True}
    )
    updated = service.update_runtime_options("c", lifecycle="eager")
    assert updated.runtime_config == {"expose_resources": True, "lifecycle": "eager"}


def test_effective_options_fill_unset_timeouts_from_settings(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", request_timeout=42.0, idle_timeout=99.0, max_call_seconds=120.0)
    settings.home.mkdir()
    service = ConnectorService(open_store(settings), settings)
    connector = service.update_runtime_options(_stdio(service, tmp_path).name, idle_timeout=5.0)
    effective = service.effective_runtime_options(connector)
    assert (effective.idle_timeout, effective.request_timeout, effective.max_call_seconds) == (5.0, 42.0, 120.0)
    assert connector.runtime_config == {"idle_timeout": 5.0}


def test_add_stores_runtime_options_and_refuses_bad_ones_storing_nothing(
    service: ConnectorService, tmp_path: Path
) -> None:
    target = service.stdio_target("true", [], cwd="", workspace=tmp_path)
    connector, created = service.add("c", target, runtime_options={"lifecycle": "eager", "limits": {"cpu_seconds": 30}})
    assert created and connector.runtime_config == {"lifecycle": "eager", "limits": {"cpu_seconds": 30}}
    assert service.get("c").runtime_config == connector.runtime_config

    for name, tgt, options, field in (
        ("d", target, {"request_timeout": -1}, "request_timeout"),
        ("e", service.remote_target("https://example.com/mcp"), {"limits": {"open_files": 64}}, "limits"),
        ("f", target, {"colour": "red"}, "colour"),
    ):
        with pytest.raises(ConfigError) as exc:
            service.add(name, tgt, runtime_options=options)
        assert exc.value.details["field"] == field
    assert [c.name for c in service.list_connectors()] == ["c"]


def test_add_exist_ok_is_idempotent_only_when_the_options_would_not_change(
    service: ConnectorService, tmp_path: Path
) -> None:
    target = service.stdio_target("true", [], cwd=None, workspace=tmp_path)
    first, _ = service.add("c", target, runtime_options={"request_timeout": 5.0})
    for options in (None, {}, {"request_timeout": 5.0}, {"lifecycle": "lazy"}):
        same, created = service.add("c", target, exist_ok=True, runtime_options=options)
        assert not created and same.revision == first.revision
    with pytest.raises(ConfigError) as exc:
        service.add("c", target, exist_ok=True, runtime_options={"request_timeout": 6.0})
    assert exc.value.details["field"] == "runtime_config"
    assert service.get("c").runtime_config == {"request_timeout": 5.0}


def test_allow_private_is_stored_for_remote_connectors_only_and_strictly_boolean(
    service: ConnectorService, tmp_path: Path
) -> None:
    remote, _ = service.add(
        "remote", service.remote_target("http://127.0.0.1:9/mcp"), runtime_options={"allow_private": True}
    )
    assert remote.runtime_config == {"allow_private": True}
    assert service.effective_runtime_options(remote).allow_private is True
    for bad in ("yes", 1):
        with pytest.raises(ConfigError) as exc:
            service.update_runtime_options("remote", allow_private=bad)
        assert exc.value.details["field"] == "allow_private"
    assert service.update_runtime_options("remote", allow_private=None).runtime_config == {}
    local = service.stdio_target("true", [], cwd=None, workspace=tmp_path)
    with pytest.raises(ConfigError) as exc:
        service.add("local", local, runtime_options={"allow_private": True})
    assert exc.value.details["field"] == "allow_private"
    assert [c.name for c in service.list_connectors()] == ["remote"]


async def test_a_probe_is_audited_under_the_workspace_project(service: ConnectorService, tmp_path: Path) -> None:
    service.add("time", service.stdio_target("mcp-server-time", [], cwd=None, workspace=tmp_path))
    result = await service.probe("time", workspace=tmp_path)
    assert result.state == "ready"
    (line,) = audit_lines(service.settings.home)
    assert (line["note"], line["connector_id"], line["project_id"]) == (
        "mcp_probe",
        service.get("time").connector_id,
        service.queries.project(tmp_path).project_id,
    )


def test_changing_the_description_keeps_the_tool_catalog_fresh(service: ConnectorService) -> None:
    connector, _ = service.add("remote", service.remote_target("https://mcp.example.com/mcp"))
    service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=connector.connector_id,
            config_revision=connector.revision,
            fingerprint=service.queries.fingerprint(connector),
            tools=(),
            fetched_at=1,
            expires_at=2**62,
        )
    )
    updated = service.update_details("remote", expected_revision=connector.revision, description="docs server")
    assert updated.description == "docs server" and updated.revision == connector.revision + 1
    assert service.queries.cached_catalog(updated)[1] == "fresh"
    with pytest.raises(RevisionConflictError):
        service.update_details("remote", expected_revision=connector.revision, display_name="Docs")


async def test_every_probe_stores_its_outcome_a_failed_one_too(service: ConnectorService, tmp_path: Path) -> None:
    service.add("ghost", service.stdio_target("pb-no-such-command-for-outcomes", [], cwd=None, workspace=tmp_path))
    result = await service.probe("ghost", workspace=tmp_path)
    assert result.code == "command_not_found"
    ghost = service.get("ghost")
    failed = service.queries.last_probe(ghost)
    assert failed is not None and (failed.state, failed.code, failed.tool_count) == ("error", "command_not_found", 0)
    assert failed.message == result.message and failed.config_revision == ghost.revision and failed.probed_at > 0

    service.add("time", service.stdio_target("mcp-server-time", [], cwd=None, workspace=tmp_path))
    await service.probe("time", workspace=tmp_path)
    ready = service.queries.last_probe(service.get("time"))
    assert ready is not None and (ready.state, ready.code, ready.tool_count) == ("ready", None, 2)

    service.remove("ghost")
    assert ghost.connector_id not in service.repository.probe_outcomes.by_connector()


def test_a_target_change_keeps_grants_makes_the_cache_stale_and_refuses_what_the_new_transport_cannot_take(
    service: ConnectorService, tmp_path: Path
) -> None:
    from patchbay.control.oauth import OAuthService

    connector, _ = service.add("remote", service.remote_target("https://mcp.example.com/mcp"))
    service.grant("remote", "search", "allow")
    OAuthService(service).configure("remote", grant="authorization_code")
    configured = service.get("remote")
    with pytest.raises(ConfigError) as refused:
        service.update_target("remote", service.socket_target("/run/user/mcp.sock"))
    assert refused.value.details["field"] == "target"
    with pytest.raises(RevisionConflictError):
        service.update_target("remote", service.remote_target("https://other.example/mcp"), expected_revision=1)
    assert service.get("remote") == configured

    moved = service.update_target(
        "remote", service.remote_target("https://other.example/mcp", "sse"), expected_revision=configured.revision
    )
    assert moved.target.url == "https://other.example/mcp" and moved.transport == "sse"
    assert moved.revision == configured.revision + 1 and moved.runtime_config == configured.runtime_config
    assert [(g.tool_name, g.decision) for g in service.repository.grants.list_global(connector.connector_id)] == [
        ("search", "allow")
    ]
    assert OAuthService(service).status("remote")["state"] == "not_authorized"
    same = service.update_target("remote", moved.target, expected_revision=moved.revision)
    assert same == moved  # the same target only checks the revision


def test_command_problem_resolves_a_command_as_a_probe_would(service: ConnectorService, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "bin").mkdir(parents=True)
    script = workspace / "bin" / "serve.sh"
    script.write_text("#!/bin/sh\n")

    def problem(command: str, cwd: str | None = None) -> str | None:
        found = service.command_problem(
            service.stdio_target(command, [], cwd=cwd, workspace=workspace), workspace=workspace
        )
        return None if found is None else str(found.code)

    assert problem("sh") is None
    assert problem("pb-no-such-command-xyz") == "command_not_found"
    assert problem("./bin/nothing.sh") == "command_not_found"
    assert problem("./bin/serve.sh") == "spawn_failed"  # there, but not executable
    script.chmod(0o755)
    assert problem("./bin/serve.sh") is None
    assert problem("./serve.sh", cwd="bin") is None  # relative to the server's working directory
    assert problem("./serve.sh") == "command_not_found"
    assert problem(str(script)) is None
