"""The read side of the control plane: workspaces resolved to projects, cached catalogs and their
freshness, connector lookups and the runtime config a workspace loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.control.decisions import ToolNameCheck
from patchbay.core.errors import ConfigError, NotFoundError
from patchbay.core.models import ToolCacheEntry, ToolSummary
from patchbay.core.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def service(tmp_path: Path) -> ConnectorService:
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    return ConnectorService(open_store(settings), settings)


def test_the_same_workspace_through_a_symlink_is_the_same_project(service: ConnectorService, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink(real, link)
    assert service.queries.project(real).project_id == service.queries.project(link).project_id
    assert service.queries.project(link).path == str(real.resolve())


def test_a_missing_workspace_is_invalid_config(service: ConnectorService, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        service.queries.project(tmp_path / "nope")
    assert exc.value.details["field"] == "project"


async def test_a_probe_caches_the_catalog_and_a_changed_config_makes_it_stale(
    service: ConnectorService, tmp_path: Path
) -> None:
    target = service.stdio_target("mcp-server-time", [], cwd=None, workspace=tmp_path)
    connector, _ = service.add("time", target)
    assert service.queries.cached_catalog(connector) == (None, "missing")
    result = await service.probe("time", workspace=tmp_path)
    assert result.state == "ready"
    entry, state = service.queries.cached_catalog(service.get("time"))
    assert state == "fresh" and {t.name for t in entry.tools} == {"get_current_time", "convert_time"}

    changed = service.stdio_target("mcp-server-time", ["--local-timezone", "UTC"], cwd=None, workspace=tmp_path)
    current = service.get("time")
    service.repository.connectors.update(current.connector_id, current.revision, target=changed)
    entry, state = service.queries.cached_catalog(service.get("time"))
    assert (entry, state) == (None, "stale")
    assert service.queries.tools("time").cache == "stale" and service.queries.tools("time").tools == []


def test_runtime_config_holds_enabled_connectors_with_their_grants_only(
    service: ConnectorService, tmp_path: Path
) -> None:
    on, _ = service.add("on", service.stdio_target("true", [], cwd=None, workspace=tmp_path))
    service.add("off", service.stdio_target("true", [], cwd=None, workspace=tmp_path), enabled=False)
    service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=on.connector_id,
            config_revision=on.revision,
            fingerprint=service.queries.fingerprint(on),
            tools=(ToolSummary(name="t1"), ToolSummary(name="t2", annotations={"destructiveHint": True})),
        )
    )
    service.grant("on", "t1", "allow")
    service.grant("on", "t2", "deny", project=tmp_path)
    config = service.queries.runtime_config(tmp_path)
    assert [s.name for s in config.servers] == ["on"]
    server = config.servers[0]
    assert server.global_grants == {"t1": "allow"}
    assert server.project_grants == {"t2": "deny"}
    assert [t.name for t in server.tools] == ["t1", "t2"]
    assert config.project_id == service.queries.project(tmp_path).project_id

    other = tmp_path / "other"
    other.mkdir()
    assert service.queries.runtime_config(other).servers[0].project_grants == {}


@pytest.mark.parametrize("kind", ["file", "loop", "long", "missing"])
def test_unusable_workspace_paths_are_invalid_config(service: ConnectorService, tmp_path: Path, kind: str) -> None:
    if kind == "file":
        path = tmp_path / "afile"
        path.write_text("x")
    elif kind == "loop":
        path = tmp_path / "loopA"
        os.symlink(tmp_path / "loopB", path)
        os.symlink(path, tmp_path / "loopB")
    elif kind == "long":
        path = Path("/" + "a" * 5000)
    else:
        path = tmp_path / "missing"
    with pytest.raises(ConfigError) as exc:
        service.queries.project(path)
    assert exc.value.details["field"] == "project"
    assert len(exc.value.message) < 400


def test_lookups_by_something_that_is_no_connector_name_find_nothing(service: ConnectorService, tmp_path: Path) -> None:
    from patchbay.core.errors import NotFoundError

    service.add("k", service.stdio_target("true", [], cwd=None, workspace=tmp_path))
    for name in ("\u212a", "K", "k\n", ""):
        with pytest.raises(NotFoundError):
            service.get(name)


def test_check_tool_name_knows_the_fresh_catalog_and_suggests_close_names(
    service: ConnectorService, tmp_path: Path
) -> None:
    connector, _ = service.add("files", service.stdio_target("true", [], cwd=None, workspace=tmp_path))
    assert service.queries.check_tool_name(connector, "read_file") == ToolNameCheck("unchecked", "missing")
    names = ("read_file", "write_file", "list_directory", "Search")
    service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=connector.connector_id,
            config_revision=connector.revision,
            fingerprint=service.queries.fingerprint(connector),
            tools=tuple(ToolSummary(name=n) for n in names),
        )
    )
    assert service.queries.check_tool_name(connector, "read_file") == ToolNameCheck("known", "fresh")
    typo = service.queries.check_tool_name(connector, "read_fiel")
    assert typo.state == "unknown" and typo.suggestions[0] == "read_file" and len(typo.suggestions) <= 3
    assert service.queries.check_tool_name(connector, "search").suggestions[0] == "Search"  # case first
    assert service.queries.check_tool_name(connector, "zzz") == ToolNameCheck("unknown", "fresh")

    with pytest.raises(NotFoundError) as refused:
        service.grant("files", "read_fiel", "allow", refuse_unknown=True)
    assert refused.value.details["suggestions"][0] == "read_file"
    assert service.repository.grants.list_global(connector.connector_id) == []
    assert service.grant("files", "read_fiel", "allow").tool_name == "read_fiel"  # the default stores any name

    changed = service.update_target("files", service.stdio_target("false", [], cwd=None, workspace=tmp_path))
    assert service.queries.check_tool_name(changed, "zzz") == ToolNameCheck("unchecked", "stale")
    assert service.grant("files", "zzz", "deny", refuse_unknown=True).tool_name == "zzz"
