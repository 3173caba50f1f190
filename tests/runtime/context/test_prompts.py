"""Prompts through the runtime: ``/prompt`` parsing, local argument checks before anything is sent,
expansion into user messages with their source, and the events. Against the recording fixture
tests/fixtures/resources_server.py and the real server-everything."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import NotFoundError, ValidationError
from patchbay.core.models import StdioTarget
from patchbay.runtime import read_events
from patchbay.runtime.context.prompts import (
    PromptArgumentInfo,
    PromptInfo,
    check_prompt_arguments,
    parse_prompt_arguments,
    parse_prompt_command,
)
from tests.support.paths import FIXTURES
from tests.support.servers import everything_stdio_command

pytestmark = pytest.mark.anyio

GREET = PromptInfo("greet", arguments=(PromptArgumentInfo("name", required=True), PromptArgumentInfo("style")))


def prompts_server(record: Path) -> RuntimeServer:
    return RuntimeServer(
        connector_id="id-res",
        name="res",
        target=StdioTarget(
            command=sys.executable, args=(str(FIXTURES / "resources_server.py"), "--record", str(record))
        ),
    )


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)


def requests(path: Path, method: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if line["method"] == method]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def test_prompt_commands_parse_like_a_shell_and_keep_multi_word_values_whole() -> None:
    assert parse_prompt_command("/prompt bugfix_review pr=456 severity=critical") == (
        "bugfix_review",
        {"pr": "456", "severity": "critical"},
    )
    assert parse_prompt_command("  /prompt greet name=\"Ada Lovelace\" style='very  formal' note=a=b empty=  ") == (
        "greet",
        {"name": "Ada Lovelace", "style": "very  formal", "note": "a=b", "empty": ""},
    )
    assert parse_prompt_command(r"/prompt x q=two\ words tag=#1") == ("x", {"q": "two words", "tag": "#1"})
    assert parse_prompt_command("/prompt plain") == ("plain", {})
    assert parse_prompt_arguments(["city=San Francisco", "state="]) == {"city": "San Francisco", "state": ""}


@pytest.mark.parametrize(
    ("line", "message", "field"),
    [
        ('/prompt greet name="unterminated', "no closing quotation", "command"),
        ("/prompt greet name=x\\", "no escaped character", "command"),
        ("/prompt", "the prompt name is missing", "prompt"),
        ("/prompt name=x", "the prompt name comes first", "prompt"),
        ("/prompt greet name", "expected key=value", "arguments"),
        ("/prompt greet =x", "argument name is empty", "arguments"),
        ("/prompt greet a=1 a=2", "argument 'a' is given twice", "arguments"),
        ("/prompts greet", "not a /prompt command", "command"),
        ("greet name=x", "not a /prompt command", "command"),
    ],
)
def test_malformed_prompt_commands_get_clear_errors(line: str, message: str, field: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        parse_prompt_command(line)
    assert caught.value.code == "validation_error" and caught.value.details["field"] == field


def test_arguments_are_checked_against_the_declaration() -> None:
    assert check_prompt_arguments(GREET, {"name": "Ada  Lovelace "}) == {"name": "Ada  Lovelace "}
    assert check_prompt_arguments(GREET, {"name": "x", "style": ""}) == {"name": "x"}  # empty optional: not given
    with pytest.raises(ValidationError, match=r"prompt 'greet' has no argument 'mood' \(it takes: name, style\)"):
        check_prompt_arguments(GREET, {"name": "x", "mood": "happy"})
    for given in ({}, {"name": ""}, {"name": "   "}, {"style": "formal"}, None):
        with pytest.raises(ValidationError) as caught:
            check_prompt_arguments(GREET, given)
        assert caught.value.message == "argument 'name' is required"
        assert caught.value.details == {"field": "arguments", "argument": "name"}
    with pytest.raises(ValidationError, match="must be a string"):
        check_prompt_arguments(GREET, {"name": 5})
    with pytest.raises(ValidationError, match="has no argument 'x'"):
        check_prompt_arguments(PromptInfo("plain"), {"x": "1"})


async def test_refused_arguments_never_reach_the_server(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, prompts_server(record)), settings=settings) as runtime:
            with pytest.raises(ValidationError, match="has no argument 'mood'"):
                await runtime.expand_prompt("res", "greet", {"name": "x", "mood": "happy"})
            with pytest.raises(ValidationError, match="argument 'name' is required"):
                await runtime.expand_prompt("res", "greet", {"name": ""})
            with pytest.raises(ValidationError, match="argument 'pr_number' is required"):
                await runtime.expand_prompt("res", "review", {})
            with pytest.raises(NotFoundError, match="no prompt 'nope'"):
                await runtime.expand_prompt("res", "nope", {})
    assert requests(tmp_path / "requests.jsonl", "prompts/get") == []
    assert not [e for e in read_events(runtime.event_log_path) if e["type"].startswith("mcp.prompt.")]


async def test_an_expansion_becomes_user_messages_with_their_source_and_is_evented(
    tmp_path: Path, settings: Settings
) -> None:
    record = tmp_path / "requests.jsonl"
    name, arguments = parse_prompt_command('/prompt greet name="Ada Lovelace" style="very formal"')
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, prompts_server(record)), settings=settings) as runtime:
            listed = await runtime.list_prompts("res")
            expanded = await runtime.expand_prompt("res", name, arguments)
            review = await runtime.expand_prompt("res", "review", {"pr_number": "456"})

    assert [p.name for p in listed] == ["greet", "review", "plain", "broken"]  # one per page: all pages followed
    assert listed[0].arguments == (
        PromptArgumentInfo("name", True, None, "Who to greet."),
        PromptArgumentInfo("style", False, None, "How."),
    )
    # Multi-word values arrived whole.
    gets = requests(record, "prompts/get")
    assert gets[0]["params"] == {"name": "greet", "arguments": {"name": "Ada Lovelace", "style": "very formal"}}
    source = {"mcp": {"server": "res", "prompt": "greet"}}
    assert [(m.role, m.server_role, m.source, m.text) for m in expanded.messages] == [
        ("user", "user", source, "greet name='Ada Lovelace' style='very formal'"),
        ("user", "assistant", source, "Sure."),  # never system, never assistant: a user message
    ]
    assert expanded.source == source and expanded.description == "greet prompt"
    assert [m.content["type"] for m in review.messages] == ["text", "resource"]
    assert review.messages[1].text == "Document 1"
    assert all(m.role == "user" for m in review.messages)

    events = [e for e in read_events(runtime.event_log_path) if e["type"].startswith("mcp.prompt.")]
    assert [e["type"] for e in events] == ["mcp.prompt.invoked", "mcp.prompt.expanded"] * 2
    invoked, done = events[0], events[1]
    assert invoked["payload"] == {
        "server": "res",
        "prompt": "greet",
        "arguments": {"name": "Ada Lovelace", "style": "very formal"},
    }
    assert expanded.prompt_call_id == f"pc_{invoked['seq']}"
    assert done["payload"]["promptCallId"] == expanded.prompt_call_id
    assert [(m["role"], m["serverRole"], m["source"], m["content"]) for m in done["payload"]["messages"]] == [
        ("user", "user", source, {"type": "text", "text": "greet name='Ada Lovelace' style='very formal'"}),
        ("user", "assistant", source, {"type": "text", "text": "Sure."}),
    ]
    assert events[3]["payload"]["messages"][1]["content"] == {
        "type": "resource",
        "uri": "fixture://doc/1",
        "text": "Document 1",
    }


async def test_a_server_error_during_expansion_is_logged_and_raised(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, prompts_server(record)), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as caught:
                await runtime.expand_prompt("res", "broken")
    assert caught.value.reason == "tool_error" and caught.value.details["mcpCode"] == -32603
    events = [e for e in read_events(runtime.event_log_path) if not e["type"].startswith("mcp.server.")]
    assert [e["type"] for e in events] == ["mcp.prompt.invoked", "mcp.call.failed"]
    failed = events[1]["payload"]
    assert failed["method"] == "prompts/get" and failed["promptCallId"] == caught.value.details["promptCallId"]
    assert "the template engine broke" in failed["error"]


async def test_server_everything_prompts(tmp_path: Path, settings: Settings) -> None:
    command, *args = everything_stdio_command()
    server = RuntimeServer(
        connector_id="id-ev", name="everything", target=StdioTarget(command=command, args=tuple(args))
    )
    name, arguments = parse_prompt_command('/prompt args-prompt city="San Francisco" state=CA')
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            listed = await runtime.list_prompts("everything")
            expanded = await runtime.expand_prompt("everything", name, arguments)
            # The server itself would answer -32602 with its own wording; this is refused locally.
            with pytest.raises(ValidationError) as caught:
                await runtime.expand_prompt("everything", "args-prompt", {"state": "CA"})
            assert caught.value.message == "argument 'city' is required"
            with pytest.raises(ValidationError, match="has no argument 'country'"):
                await runtime.expand_prompt("everything", "args-prompt", {"city": "Paris", "country": "FR"})
    by_name = {p.name: p for p in listed}
    assert set(by_name) == {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"}
    assert [(a.name, a.required) for a in by_name["args-prompt"].arguments] == [("city", True), ("state", False)]
    (message,) = expanded.messages
    assert message.role == "user" and message.text == "What's weather in San Francisco, CA?"
    assert message.source == {"mcp": {"server": "everything", "prompt": "args-prompt"}}
    invoked = [e["payload"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.prompt.invoked"]
    assert invoked == [
        {"server": "everything", "prompt": "args-prompt", "arguments": {"city": "San Francisco", "state": "CA"}}
    ]


@pytest.mark.parametrize(
    "grants",
    [
        {"global_prompt_grants": {"greet": "deny"}},
        {"project_prompt_grants": {"*": "deny", "plain": "allow", "review": "allow", "broken": "allow"}},
        {"global_prompt_grants": {"greet": "deny"}, "project_prompt_grants": {"greet": "allow"}},
    ],
    ids=["global-deny", "project-deny-all-but-three", "global-deny-over-project-allow"],
)
async def test_a_prompt_deny_grant_hides_the_prompt_and_refuses_it_before_anything_is_sent(
    tmp_path: Path, settings: Settings, grants: dict[str, Any]
) -> None:
    record = tmp_path / "requests.jsonl"
    server = prompts_server(record).model_copy(update=grants)
    # Tool patterns are no prompt rules: excluding every tool hides no prompt.
    server = server.model_copy(update={"settings": server.settings.model_copy(update={"exclude_tools": ("*",)})})
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            listed = [p.name for p in await runtime.list_prompts("res")]
            lists_before = len(requests(record, "prompts/list"))
            with pytest.raises(ToolCallError) as caught:
                await runtime.expand_prompt("res", "greet", {"name": "Ada"})
            plain = await runtime.expand_prompt("res", "plain")
    assert listed == ["review", "plain", "broken"]
    assert caught.value.reason == "permission_denied" and caught.value.details["prompt"] == "greet"
    assert len(requests(record, "prompts/list")) == lists_before + 4  # only plain's expansion listed
    assert [r["params"]["name"] for r in requests(record, "prompts/get")] == ["plain"]
    assert plain.prompt == "plain"
    invoked = [e["payload"]["prompt"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.prompt.invoked"]
    assert invoked == ["plain"]
