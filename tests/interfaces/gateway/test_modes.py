"""The gateway's mode choice and direct names."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbay.core.settings import Settings
from patchbay.interfaces.gateway import choose_mode, gateway_name, runtime_wire_name
from patchbay.interfaces.gateway.modes import estimated_tokens


@dataclass(frozen=True)
class Tool:
    tool: str
    decision: str = "allow"
    connector: str | None = "demo"
    title: str | None = None
    description: str | None = "A demo tool."
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return f"mcp.demo.{self.tool}"

    @property
    def wire_name(self) -> str:
        return f"mcp__demo__{self.tool}"


def settings(tmp_path: Path, **values: int) -> Settings:
    return Settings(home=tmp_path, **values)  # type: ignore[arg-type]


def test_direct_names_drop_the_runtime_prefix_and_map_back() -> None:
    assert gateway_name("mcp__time__get_current_time") == "time__get_current_time"
    assert runtime_wire_name("time__get_current_time") == "mcp__time__get_current_time"


def test_explicit_modes_are_kept_whatever_the_catalog(tmp_path: Path) -> None:
    many = [Tool(f"t{i}") for i in range(100)]
    assert choose_mode("direct", many, settings(tmp_path)) == "direct"
    assert choose_mode("proxy", [], settings(tmp_path)) == "proxy"


def test_auto_is_direct_up_to_the_tool_threshold_and_denied_tools_do_not_count(tmp_path: Path) -> None:
    limit = settings(tmp_path, gateway_direct_max_tools=2)
    assert choose_mode("auto", [Tool("a"), Tool("b"), Tool("c", decision="deny")], limit) == "direct"
    assert choose_mode("auto", [Tool("a"), Tool("b"), Tool("c", decision="ask")], limit) == "proxy"


def test_auto_switches_to_the_proxy_when_the_schemas_cost_too_many_tokens(tmp_path: Path) -> None:
    big = Tool("big", description="x" * 4000)
    assert estimated_tokens([big], settings(tmp_path)) > 1000
    assert choose_mode("auto", [big], settings(tmp_path, gateway_direct_max_schema_tokens=1000)) == "proxy"
    assert choose_mode("auto", [big], settings(tmp_path)) == "direct"
