"""Runtime projection (seed 003 §10.3, addendum 2026-09-04): what the snapshot says, that the
runtime's decisions from it equal the control plane's, and which mutations re-project where."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control import projection
from patchbay.control.connectors import ConnectorService
from patchbay.control.credentials import parse_env
from patchbay.core.errors import ConfigError
from patchbay.core.models import ConnectorSettings, ToolCacheEntry, ToolSummary
from patchbay.core.policy import decide_for
from patchbay.runtime import snapshot as snapshot_module
from patchbay.runtime.calls.permissions import PermissionEngine
from patchbay.runtime.snapshot import load_snapshot, snapshot_path

pytestmark = pytest.mark.anyio

CANARY = "cnryPROJmanaged-5e6f7a8b"


def add(service: ConnectorService, name: str, workspace: Path, **kwargs):
    target = service.stdio_target(sys.executable, ["-c", "pass"], cwd=None, workspace=workspace)
    return service.add(name, target, **kwargs)[0]


def cache(service: ConnectorService, name: str, tools: list[ToolSummary]) -> None:
    connector = service.get(name)
    service.repository.tool_cache.replace(
        ToolCacheEntry(
            connector_id=connector.connector_id,
            config_revision=connector.revision,
            fingerprint=service.queries.fingerprint(connector),
            tools=tuple(tools),
        )
    )


def snapshot_of(workspace: Path) -> dict:
    return json.loads(snapshot_path(workspace).read_text())


# -- the decision table ---------------------------------------------------------------------

GRANTS = ("allow", "ask", "deny", None)


def oracle(g, p, mode: str, destructive: bool | None) -> str:
    """DESIGN.md "Permissions" and seed 003 §5.3, written out independently of the code."""
    if g == "deny":
        return "deny"
    if p is not None:
        return p
    if g is not None:
        return g
    if mode == "allow_all":
        return "ask" if destructive else "allow"
    return "ask"


@pytest.mark.parametrize("mode", ["ask", "custom", "allow_all"])
def test_runtime_decisions_from_the_snapshot_equal_the_control_planes_for_every_combination(
    service: ConnectorService, workspace: Path, mode: str
) -> None:
    """global × project grant (allow/ask/deny/none) × destructiveHint × in/out of the cache ×
    exact grant or wildcard-named grant, for one approval mode."""
    add(service, "conn", workspace)
    service.update_settings("conn", approval_mode=mode)
    prj = service.queries.project(workspace)
    # Grants named like wildcards must never cover other tools (seed 003 §5.3: no "*" grants).
    service.grant("conn", "*", "allow")
    service.grant("conn", "c*", "allow", project=workspace)
    cases = []
    cached: list[ToolSummary] = []
    for g, p, destructive, in_cache, wildcard in itertools.product(
        GRANTS, GRANTS, (True, False), (True, False), (False, True)
    ):
        tool = f"c-{g}-{p}-{'d' if destructive else 'n'}-{'c' if in_cache else 'u'}-{'w' if wildcard else 'e'}x"
        key = tool[:-1] + "*" if wildcard else tool  # a wildcard-named grant next to the tool
        if g is not None:
            service.grant("conn", key, g)
        if p is not None:
            service.grant("conn", key, p, project=workspace)
        live = ToolSummary(name=tool, annotations={"destructiveHint": destructive})
        if in_cache:
            cached.append(live)
        cases.append((tool, g, p, destructive, in_cache, wildcard, live))
    cache(service, "conn", cached)

    service.projector.project(prj)
    config = load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
    (server,) = config.servers
    engine = PermissionEngine(session_id="ses_matrix")
    connector = service.get("conn")
    global_grants = {x.tool_name: x.decision for x in service.repository.grants.list_global(connector.connector_id)}
    project_grants = {
        x.tool_name: x.decision
        for x in service.repository.grants.list_for_project(prj.project_id, connector.connector_id)
    }
    views = {v.name: v for v in service.queries.tools("conn", project=workspace).tools}
    assert len(cases) == 128 and len(views) == 64

    for tool, g, p, _, in_cache, wildcard, live in cases:
        known = [live.annotations] if in_cache else [None, live.annotations]  # uncached: known or not
        for hints in known:
            label = (tool, hints)
            control = decide_for(
                connector.settings,
                tool,
                annotations=hints,
                global_grants=global_grants,
                project_grants=project_grants,
            )
            if in_cache:  # the control plane's own listing says the same
                assert (views[tool].decision, views[tool].source) == (control.decision, control.source), label
            gg, pp = (None, None) if wildcard else (g, p)
            expected = oracle(gg, pp, mode, bool(hints and hints["destructiveHint"]))
            assert control.decision == expected, label

            runtime = engine.evaluate(server, tool, None if hints is None or in_cache else live)
            assert runtime.decision == expected, label
            # Explicit Deny is merged into the excluded tools: never listed, never sent.
            assert runtime.visible == (expected != "deny"), label
            if runtime.visible:
                assert runtime.risk == control.risk, label
                if expected == "allow" or mode == "allow_all":
                    assert runtime.source == control.source, label  # project vs global attribution kept


def test_the_snapshot_carries_the_rules_in_the_seed_shape(service: ConnectorService, workspace: Path) -> None:
    add(service, "mail", workspace, runtime_options={"request_timeout": 5.0})
    add(service, "off", workspace)
    service.set_enabled("off", False)
    service.update_settings("mail", approval_mode="allow_all", include_tools=["m*", "*x"], exclude_tools=["m-drop*"])
    cache(
        service,
        "mail",
        [
            ToolSummary(name="m-read", annotations={"readOnlyHint": True}),
            ToolSummary(name="m-send"),
            ToolSummary(name="m-drop-all"),
            ToolSummary(name="m-purge", annotations={"destructiveHint": True}),
            ToolSummary(name="other"),
        ],
    )
    service.grant("mail", "m-send", "ask")
    service.grant("mail", "m-read", "ask")
    service.grant("mail", "m-read", "allow", project=workspace)  # project overrides a global ask
    service.grant("mail", "m-purge", "deny")
    service.grant("mail", "m-purge", "allow", project=workspace)  # ...but never lifts a global deny
    service.grant("mail", "m[*]x", "deny", project=workspace)  # a glob-looking name stays exact
    service.grant("mail", "later", "allow")  # not visible under include_tools: not projected
    service.projector.project(service.queries.project(workspace))

    document = snapshot_of(workspace)
    assert set(document) == {"version", "project_id", "generated_at", "state_version", "servers", "mac"}
    assert list(document)[-1] == "mac" and document["mac"].startswith("hmac-sha256:")
    assert document["version"] == 1 and document["project_id"] == service.queries.project(workspace).project_id
    assert isinstance(document["generated_at"], int)
    assert list(document["servers"]) == ["mail"]  # a disabled connector is not projected
    mail = document["servers"]["mail"]
    assert mail["lifecycle"] == "lazy" and mail["runtime_config"] == {"request_timeout": 5.0}
    assert mail["include_tools"] == ["m*", "*x"]
    assert mail["exclude_tools"] == ["m-drop*", "m-purge", "m[[][*]]x"]  # matches "m[*]x" only
    assert mail["approval_mode"] == "allow_all"
    assert mail["approve_tools"] == ["m-send"]
    assert mail["allowed_tools"] == ["m-read"]
    assert mail["project_overrides"] == ["m-read"]
    assert [t["name"] for t in mail["tools"]] == ["m-read", "m-send"]

    service.update_settings("mail", approval_mode="custom")
    mail = snapshot_of(workspace)["servers"]["mail"]
    assert mail["approve_tools"] is True and mail["allowed_tools"] == ["m-read"]


def test_the_snapshot_carries_resource_and_prompt_grants_in_their_own_key_spaces(
    service: ConnectorService, workspace: Path
) -> None:
    add(service, "evil", workspace)
    cache(service, "evil", [ToolSummary(name="resources/read"), ToolSummary(name="*")])
    service.grant("evil", "*", "allow", kind="resource")
    service.grant("evil", "*", "deny", project=workspace, kind="prompt")
    service.grant("evil", "greet", "allow", project=workspace, kind="prompt")
    service.grant("evil", "secret", "deny", kind="prompt")
    project = service.queries.project(workspace)
    service.projector.project(project)

    evil = snapshot_of(workspace)["servers"]["evil"]
    assert (evil["global_resource_grant"], evil["project_resource_grant"]) == ("allow", None)
    assert evil["global_prompt_grants"] == {"secret": "deny"}
    assert evil["project_prompt_grants"] == {"*": "deny", "greet": "allow"}
    # No tool name carries the resource or prompt grants, least of all a tool named "*".
    assert evil["allowed_tools"] == [] and evil["exclude_tools"] == [] and evil["approve_tools"] is True

    (server,) = load_snapshot(workspace, project_id=project.project_id, home=service.settings.home).servers
    engine = PermissionEngine(session_id="s")
    assert engine.evaluate_resource_read(server).decision == "allow"
    assert engine.evaluate(server, "resources/read").decision == "ask"
    assert engine.evaluate(server, "*").decision == "ask"
    assert [engine.evaluate_prompt(server, p).decision for p in ("greet", "other", "secret")] == [
        "allow",
        "deny",
        "deny",
    ]


async def test_the_snapshot_holds_references_not_secrets_and_is_private(
    service: ConnectorService, workspace: Path
) -> None:
    add(service, "keyed", workspace, bindings=[parse_env(f"PB_KEY={CANARY}"), parse_env("PB_HOST=@env:PB_HOST_VAR")])
    prj = service.queries.project(workspace)
    path = service.projector.project(prj)
    raw = path.read_bytes()
    assert CANARY.encode() not in raw
    bindings = json.loads(raw)["servers"]["keyed"]["bindings"]
    assert {b["name"] for b in bindings} == {"PB_KEY", "PB_HOST"}
    assert all(b["ref"].startswith("cred_") for b in bindings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert (path.parent / ".gitignore").read_text().splitlines()[-1] == "*"
    assert sorted(p.name for p in path.parent.iterdir()) == [".gitignore", "mcp-runtime.json", "mcp-runtime.lock"]


def test_the_snapshot_keeps_of_each_tool_its_name_and_risk_hint_only(
    service: ConnectorService, workspace: Path
) -> None:
    add(service, "mail", workspace)
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    cache(
        service,
        "mail",
        [
            ToolSummary(name="read", description="Reads", input_schema=schema, annotations={"readOnlyHint": True}),
            ToolSummary(name="purge", annotations={"destructiveHint": True, "title": "Purge", "openWorldHint": False}),
            ToolSummary(name="send", title="Send", annotations={"destructiveHint": False, "idempotentHint": True}),
            ToolSummary(name="plain"),
        ],
    )
    service.projector.project(service.queries.project(workspace))

    assert snapshot_of(workspace)["servers"]["mail"]["tools"] == [
        {"name": "read", "annotations": {"readOnlyHint": True}},
        {"name": "purge", "annotations": {"destructiveHint": True}},
        {"name": "send"},
        {"name": "plain"},
    ]


def test_an_entry_encoded_for_one_project_is_reused_by_the_others(
    service: ConnectorService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspaces = [tmp_path / name for name in ("a", "b", "c")]
    for path in workspaces:
        path.mkdir()
        service.queries.project(path)
    add(service, "one", workspaces[0])
    add(service, "two", workspaces[0])
    service.grant("two", "t", "allow", project=workspaces[1])
    encoded: list[str] = []
    fragment = projection._fragment

    def counted(name: str, server):
        encoded.append(name)
        return fragment(name, server)

    monkeypatch.setattr(projection, "_fragment", counted)
    reads: list[int] = []
    stamps = service.repository.connectors.stamps
    monkeypatch.setattr(service.repository.connectors, "stamps", lambda: reads.append(1) or stamps())
    service.set_enabled("one", False)
    service.set_enabled("one", True)  # every workspace again, one encoding of "one" for all
    assert encoded == ["one"]
    assert len(reads) == 2  # once per change, not once per workspace: nothing moved in between
    service.grant("two", "u", "deny")  # b's "two" has its own project grant: encoded apart
    assert sorted(encoded[1:]) == ["two", "two"]
    snapshots = [snapshot_of(path)["servers"] for path in workspaces]
    assert [s["two"]["allowed_tools"] for s in snapshots] == [[], ["t"], []]
    assert all(s["two"]["exclude_tools"] == ["u"] and s["one"] == snapshots[0]["one"] for s in snapshots)


def test_a_fresh_projector_reads_many_connectors_at_once_and_then_only_what_changed(
    service: ConnectorService, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = service.stdio_target(sys.executable, ["-c", "pass"], cwd=None, workspace=workspace)
    names = [f"c{index:02d}" for index in range(40)]
    service.repository.connectors.create_many(
        [{"name": n, "display_name": n, "target": target, "settings": ConnectorSettings()} for n in names]
    )
    prj = service.queries.project(workspace)
    fresh = projection.Projector(service.queries, home=service.settings.home)  # another process's
    fresh.project(prj)
    assert list(snapshot_of(workspace)["servers"]) == names

    read: list[str] = []
    get = service.repository.connectors.get

    def counted(connector_id: str):
        read.append(connector_id)
        return get(connector_id)

    monkeypatch.setattr(service.repository.connectors, "get", counted)
    service.set_enabled("c07", False)  # the service's projector: a first projection, all at once
    assert read == []
    fresh.project(prj)
    assert "c07" not in snapshot_of(workspace)["servers"] and len(snapshot_of(workspace)["servers"]) == 39
    assert read == [service.get("c07").connector_id]  # fresh read only the one that changed


def test_a_change_another_process_commits_between_two_projections_is_projected(
    service: ConnectorService, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for path in (a, b):
        path.mkdir()
        service.queries.project(path)
    connector = add(service, "conn", a)
    assert snapshot_of(b)["servers"]["conn"]["approval_mode"] == "ask"
    other = open_store(service.settings)  # another process's store: it writes, nothing projects
    try:
        other.connectors.update_settings(connector.connector_id, connector.settings.revision, approval_mode="allow_all")
    finally:
        other.close()
    service.projector.project(service.queries.project(b))
    assert snapshot_of(b)["servers"]["conn"]["approval_mode"] == "allow_all"


# -- re-projection --------------------------------------------------------------------------


def test_a_global_change_reprojects_every_known_workspace_and_a_project_grant_only_its_own(
    service: ConnectorService, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    service.queries.project(a)
    service.queries.project(b)
    add(service, "conn", a)  # a global change: both written
    assert list(snapshot_of(a)["servers"]) == list(snapshot_of(b)["servers"]) == ["conn"]
    assert {w.workspace for w in service.last_projection.written} == {str(a.resolve()), str(b.resolve())}

    before_b = snapshot_path(b).read_bytes()
    service.grant("conn", "t", "allow", project=a)
    assert snapshot_of(a)["servers"]["conn"]["allowed_tools"] == ["t"]
    assert snapshot_path(b).read_bytes() == before_b  # untouched
    assert [w.workspace for w in service.last_projection.workspaces] == [str(a.resolve())]
    service.clear_grant("conn", "t", project=a)
    assert snapshot_of(a)["servers"]["conn"]["allowed_tools"] == []

    service.grant("conn", "t", "deny")
    assert (
        snapshot_of(a)["servers"]["conn"]["exclude_tools"]
        == snapshot_of(b)["servers"]["conn"]["exclude_tools"]
        == ["t"]
    )
    service.clear_grant("conn", "t")
    assert snapshot_of(b)["servers"]["conn"]["exclude_tools"] == []


async def test_every_connector_mutation_reprojects(
    service: ConnectorService, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PB_TZ_VAR", "UTC")
    service.queries.project(workspace)

    def servers() -> dict:
        return snapshot_of(workspace)["servers"]

    target = service.stdio_target("mcp-server-time", [], cwd=None, workspace=workspace)
    service.add("time", target)
    assert servers()["time"]["approve_tools"] is True and servers()["time"]["tools"] == []
    service.update_settings("time", approval_mode="allow_all", exclude_tools=["x*"])
    assert servers()["time"]["approve_tools"] == [] and servers()["time"]["exclude_tools"] == ["x*"]
    service.update_runtime_options("time", lifecycle="eager")
    assert servers()["time"]["lifecycle"] == "eager"
    service.set_bindings("time", [parse_env("PB_TZ=@env:PB_TZ_VAR")])
    assert [b["name"] for b in servers()["time"]["bindings"]] == ["PB_TZ"]
    service.set_enabled("time", False)
    assert servers() == {}
    service.set_enabled("time", True)
    assert list(servers()) == ["time"]

    result = await service.probe("time", workspace=workspace)  # a real peer: the catalog is projected
    assert result.state == "ready"
    assert {t["name"] for t in servers()["time"]["tools"]} == {"get_current_time", "convert_time"}

    service.remove("time")
    assert servers() == {}


def test_a_workspace_that_is_gone_is_skipped_and_reported_not_a_failure(
    service: ConnectorService, tmp_path: Path
) -> None:
    kept, gone, linked = tmp_path / "kept", tmp_path / "gone", tmp_path / "linked"
    for path in (kept, gone, linked):
        path.mkdir()
        service.queries.project(path)
    gone.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (linked / ".patchbay").symlink_to(elsewhere)  # never followed

    connector = add(service, "conn", kept)
    assert service.get("conn") == connector  # the mutation stands
    report = service.last_projection
    by_path = {w.workspace: w for w in report.workspaces}
    assert by_path[str(kept.resolve())].status == "written"
    assert (
        by_path[str(gone.resolve())].status == "missing" and "no longer exists" in by_path[str(gone.resolve())].message
    )
    assert (by_path[str(linked.resolve())].status, by_path[str(linked.resolve())].code) == ("failed", "invalid_config")
    assert list(elsewhere.iterdir()) == []
    assert {s["status"] for s in report.to_dict()["skipped"]} == {"missing", "failed"}
    assert list(snapshot_of(kept)["servers"]) == ["conn"]

    with pytest.raises(ConfigError) as exc:  # projecting one on purpose does raise
        service.projector.project(service.repository.projects.get(by_path[str(gone.resolve())].project_id))
    assert exc.value.field == "project"


def test_a_failed_write_removes_the_previous_snapshot_and_leaves_no_temp_file(
    service: ConnectorService, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prj = service.queries.project(workspace)
    add(service, "conn", workspace)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(projection.os, "replace", disk_full)
    with pytest.raises(ConfigError) as exc:
        service.projector.project(prj)
    assert exc.value.field == "snapshot" and "No space left" in exc.value.message
    assert "older snapshot was removed" in exc.value.message
    assert not snapshot_path(workspace).exists()  # the older file would still verify
    assert not [p for p in snapshot_path(workspace).parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("planted", ["lock", "key"])
def test_a_failed_write_invalidates_the_older_snapshot_and_is_reported(
    service: ConnectorService, workspace: Path, tmp_path: Path, planted: str
) -> None:
    prj = service.queries.project(workspace)
    add(service, "conn", workspace)
    older = snapshot_path(workspace).read_bytes()
    if planted == "lock":  # the workspace owner plants a symlink where the lock goes
        lock = snapshot_path(workspace).parent / projection.LOCK_FILE
        lock.unlink()
        lock.symlink_to(tmp_path / "elsewhere")
    else:  # the data home's key became unusable
        key = service.settings.home / "snapshot.key"
        key.write_bytes(b"short")
    service.grant("conn", "purge", "deny")  # committed whatever happens to the snapshot
    assert [g.decision for g in service.repository.grants.list_global(service.get("conn").connector_id)] == ["deny"]
    (failed,) = service.last_projection.skipped
    assert (failed.workspace, failed.status, failed.code) == (str(workspace.resolve()), "failed", "invalid_config")
    assert "older snapshot was removed" in failed.message
    assert not snapshot_path(workspace).exists()
    # Put back, the older sealed file (from before the deny) is refused.
    if planted == "key":
        key.unlink()
        service.projector.project(prj)  # a new key...
        key.write_bytes(b"short")
    snapshot_path(workspace).write_bytes(older)
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
    assert exc.value.field in ("snapshot", "snapshot_key")


def test_an_older_sealed_snapshot_put_back_is_refused(service: ConnectorService, workspace: Path) -> None:
    prj = service.queries.project(workspace)
    add(service, "conn", workspace)
    older = snapshot_path(workspace).read_bytes()
    service.grant("conn", "purge", "deny")
    newer = snapshot_path(workspace).read_bytes()
    assert snapshot_of(workspace)["state_version"] > json.loads(older)["state_version"]
    snapshot_path(workspace).write_bytes(older)  # replayed by whatever can write the workspace
    with pytest.raises(ConfigError) as exc:
        load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home)
    assert exc.value.field == "snapshot" and "older than the last projection" in exc.value.message
    snapshot_path(workspace).write_bytes(newer)
    assert [
        s.name for s in load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home).servers
    ] == ["conn"]
    # A change to another project moves the store's counter without re-projecting this one: its
    # file is still current, so still accepted.
    other = workspace.parent / "other"
    other.mkdir()
    service.queries.project(other)
    service.grant("conn", "get", "allow", project=other)
    assert load_snapshot(workspace, project_id=prj.project_id, home=service.settings.home).servers


def test_an_entry_that_fails_the_runtime_checks_is_left_out_of_the_in_memory_config(
    service: ConnectorService, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prj = service.queries.project(workspace)
    target = service.stdio_target(sys.executable, ["-c", "pass", "--marked"], cwd=None, workspace=workspace)
    service.add("bad", target)
    add(service, "good", workspace)
    real = snapshot_module.validate_stdio_target

    def stricter(command, args, cwd):  # a rule added after "bad" was stored
        if "--marked" in args:
            raise ConfigError("args", "an argument looks like a secret")
        return real(command, args, cwd)

    monkeypatch.setattr(snapshot_module, "validate_stdio_target", stricter)
    config = service.projector.runtime_config(prj)
    assert [s.name for s in config.servers] == ["good"]
    assert [(r.name, r.field) for r in config.rejected] == [("bad", "servers.bad.args")]


def test_a_projection_waits_for_the_workspace_lock(
    service: ConnectorService, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prj = service.queries.project(workspace)
    add(service, "conn", workspace)
    monkeypatch.setattr(projection, "LOCK_TIMEOUT", 0.2)
    fd = os.open(snapshot_path(workspace).parent / projection.LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer of this workspace
        with pytest.raises(ConfigError) as exc:
            service.projector.project(prj)
        assert "stayed locked" in exc.value.message
    finally:
        os.close(fd)
    service.projector.project(prj)
