"""Runtimes over server-everything and tests/fixtures/ref_schema_server.py, and a definition's name
in any shape, for the tests of tool definitions and the proxy tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.models import ConnectorSettings, StdioTarget
from tests.support.servers import everything_stdio_command, fixture_server


def everything() -> RuntimeServer:
    command = everything_stdio_command()
    return RuntimeServer(
        connector_id="con_everything",
        name="everything",
        target=StdioTarget(command=command[0], args=tuple(command[1:])),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )


def refs(**fields: Any) -> RuntimeServer:
    fields.setdefault("settings", ConnectorSettings(approval_mode="allow_all"))
    return RuntimeServer(connector_id="con_refs", name="refs", target=fixture_server("ref_schema_server.py"), **fields)


def runtime_for(tmp_path: Path, *servers: RuntimeServer, **kwargs: Any) -> Runtime:
    config = RuntimeConfig(project_id="prj_test", workspace=str(tmp_path), servers=servers)
    return Runtime(config, settings=Settings(home=tmp_path / "home"), **kwargs)


def name_of(definition: dict[str, Any]) -> str:
    return definition["function"]["name"] if "function" in definition else definition["name"]
