"""What the control plane reports without connecting: a tool's signature, a connector's state."""

from __future__ import annotations

from patchbay.control.decisions import runtime_state, tool_signature
from patchbay.core.models import Connector, ConnectorSettings, ProbeOutcome, StdioTarget


def test_a_signature_lists_required_arguments_first_and_marks_optional_ones() -> None:
    schema = {
        "type": "object",
        "properties": {
            "max_count": {"type": "integer"},
            "repo_path": {"type": "string"},
            "paths": {"type": "array", "items": {"type": "string"}},
            "mode": {"enum": ["fast", "slow"]},
            "since": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "extra": {},
        },
        "required": ["repo_path"],
    }
    assert tool_signature("git_log", schema) == (
        'git_log(repo_path: string, max_count?: integer, paths?: array<string>, mode?: "fast"|"slow", '
        "since?: string|null, extra?: any)"
    )


def test_a_schema_without_properties_or_a_malformed_one_gives_empty_parentheses() -> None:
    assert tool_signature("ping", {"type": "object"}) == "ping()"
    assert tool_signature("ping", None) == "ping()"
    assert tool_signature("ping", {"properties": {"a": "not a schema"}, "required": "a"}) == "ping(a?: any)"


def _connector(enabled: bool = True, revision: int = 2) -> Connector:
    return Connector(
        connector_id="con_1",
        name="git",
        display_name="git",
        target=StdioTarget(command="mcp-server-git"),
        settings=ConnectorSettings(enabled=enabled),
        revision=revision,
    )


def _failed(revision: int) -> ProbeOutcome:
    return ProbeOutcome(connector_id="con_1", state="error", code="timeout", config_revision=revision)


def test_the_state_is_error_only_when_the_current_configuration_failed_its_last_probe() -> None:
    assert runtime_state(_connector(), fresh_catalog=False, outcome=None) == "unknown"
    assert runtime_state(_connector(), fresh_catalog=False, outcome=_failed(2)) == "error"
    assert runtime_state(_connector(), fresh_catalog=False, outcome=_failed(1)) == "unknown"
    assert runtime_state(_connector(), fresh_catalog=True, outcome=None) == "ready"
    assert runtime_state(_connector(enabled=False), fresh_catalog=True, outcome=_failed(2)) == "disabled"
