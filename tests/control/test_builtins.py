"""Seeding the built-in catalogue: first creation applies ``enabled_by_default``; later seeds
(catalogue upgrades) never touch a user's choices, bindings, grants or cache; built-ins cannot be
removed or re-pointed; a real probe lists paper-search's tools."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from patchbay.adapters.store import open_store
from patchbay.control.bindings import parse_env
from patchbay.control.builtins import seed
from patchbay.control.connectors import ConnectorService
from patchbay.core.builtins import BUILTINS, BuiltinSpec, builtin_target
from patchbay.core.errors import BuiltinConnectorError, ErrorCode
from patchbay.core.models import HttpTarget, StdioTarget
from patchbay.core.settings import Settings

pytestmark = pytest.mark.anyio


def open_service(home: Path, *, builtins: bool = True) -> ConnectorService:
    settings = Settings(home=home, builtins=builtins)
    settings.home.mkdir(exist_ok=True)
    return ConnectorService(open_store(settings), settings)


def test_a_fresh_home_gets_paper_search_enabled_and_the_others_disabled(tmp_path: Path) -> None:
    service = open_service(tmp_path / "home")
    listed = {connector.name: connector for connector in service.list_connectors()}
    assert sorted(listed) == sorted(spec.name for spec in BUILTINS)
    assert {name for name, c in listed.items() if c.settings.enabled} == {"paper-search"}
    assert {c.source for c in listed.values()} == {"builtin"}
    paper = listed["paper-search"]
    assert (paper.name, paper.source, paper.settings.enabled) == ("paper-search", "builtin", True)
    assert paper.settings.approval_mode == "ask"
    audit_file = str((tmp_path / "home" / "egress-audit.jsonl").absolute())
    from patchbay.control.builtins import seeding_interpreter

    assert paper.target == StdioTarget(
        command=seeding_interpreter(),
        args=(
            "-I",
            "-m",
            "patchbay.connectors.paper_search",
            "--audit-file",
            audit_file,
            "--connector-id",
            paper.connector_id,
        ),
    )
    assert paper.terms_url.startswith("https://")


def test_seeding_is_off_with_the_setting(tmp_path: Path) -> None:
    assert open_service(tmp_path / "home", builtins=False).list_connectors() == []


def test_a_later_seed_keeps_the_users_choices_bindings_grants_and_cache(tmp_path: Path) -> None:
    home = tmp_path / "home"
    service = open_service(home)
    service.set_enabled("paper-search", False)
    service.update_settings("paper-search", exclude_tools=["search_pubmed"])
    service.grant("paper-search", "search_europepmc", "allow")
    service.set_bindings("paper-search", [parse_env("NCBI_API_KEY=k-secret-value-123")])
    before = service.get("paper-search")

    again = open_service(home)  # the next process: seeds again, finds it there
    assert again.get("paper-search") == before

    # A catalogue upgrade (here: another interpreter) changes the command and nothing else.
    report = again.seed_builtins(python="/opt/other/python3")
    after = again.get("paper-search")
    assert report.upgraded == tuple(spec.name for spec in BUILTINS)
    assert after.target == before.target.model_copy(update={"command": "/opt/other/python3"})
    assert after.settings == before.settings
    assert after.settings.enabled is False
    assert after.bindings == before.bindings
    assert [(g.tool_name, g.decision) for g in again.repository.grants.list_global(after.connector_id)] == [
        ("search_europepmc", "allow")
    ]
    assert again.seed_builtins(python="/opt/other/python3").changed is False


def test_enabled_by_default_applies_only_at_first_creation(tmp_path: Path) -> None:
    service = open_service(tmp_path / "home", builtins=False)
    off = BuiltinSpec(
        "literature-x",
        "Lit X",
        "patchbay.connectors.paper_search",
        "A test built-in.",
        ("X",),
        "https://example.org/terms",
        enabled_by_default=False,
    )
    assert seed(service.repository, sys.executable, [off]).created == ("literature-x",)
    assert service.get("literature-x").settings.enabled is False
    service.set_enabled("literature-x", True)
    assert seed(service.repository, sys.executable, [off]).changed is False
    assert service.get("literature-x").settings.enabled is True


def test_a_users_connector_holding_a_builtin_name_is_left_alone(tmp_path: Path) -> None:
    service = open_service(tmp_path / "home", builtins=False)
    mine, _ = service.add("paper-search", HttpTarget(url="https://papers.example/mcp"))
    report = service.seed_builtins()
    assert report.shadowed == ("paper-search",)
    assert service.get("paper-search") == mine


def test_a_builtin_cannot_be_removed_or_repointed(tmp_path: Path) -> None:
    service = open_service(tmp_path / "home")
    with pytest.raises(BuiltinConnectorError) as removed:
        service.remove("paper-search")
    with pytest.raises(BuiltinConnectorError) as repointed:
        service.update_target("paper-search", HttpTarget(url="https://papers.example/mcp"))
    assert removed.value.code == repointed.value.code == ErrorCode.BUILTIN_CONNECTOR
    assert service.get("paper-search").source == "builtin"


@pytest.mark.parametrize("spec", BUILTINS, ids=lambda spec: spec.name)
async def test_a_real_probe_of_each_builtin_lists_its_read_only_tools(tmp_path: Path, spec: BuiltinSpec) -> None:
    service = open_service(tmp_path / "home")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = await service.probe(spec.name, workspace=workspace)
    assert result.state == "ready", result.message
    expected = sorted(tool.name for tool in importlib.import_module(spec.module).TOOLS)
    assert sorted(tool.name for tool in result.tools) == expected
    assert 2 <= len(expected) <= 6
    assert all(tool.annotations.get("readOnlyHint") is True for tool in result.tools)


def test_every_builtin_starts_its_module_in_isolated_mode() -> None:
    for spec in BUILTINS:
        target = builtin_target(spec, "/usr/bin/python3")
        assert target.args[:2] == ("-I", "-m")
        assert target.args[2].startswith("patchbay.connectors.")


def test_the_interpreter_is_spelled_one_way_per_venv(tmp_path: Path) -> None:
    from patchbay.control.builtins import seeding_interpreter

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "python3", "python3.11"):
        (venv / "bin" / name).touch()
    spellings = {
        seeding_interpreter(str(venv / "bin" / name), prefix=str(venv), base_prefix="/usr")
        for name in ("python", "python3", "python3.11")
    }
    assert spellings == {str(venv / "bin" / "python")}  # patchbay's shebang and python -m agree
    # outside a venv the interpreter is taken as it is
    assert seeding_interpreter("/usr/bin/python3.11", prefix="/usr", base_prefix="/usr") == "/usr/bin/python3.11"
