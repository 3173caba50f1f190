"""Resources through the runtime (never added automatically; included explicitly): listing every
page within the catalog's bounds, RFC 6570 templates, and the explicit, governed include. Against
the recording fixture tests/fixtures/resources_server.py (50 resources) and the real
server-everything."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings, ToolCallError
from patchbay.core.errors import NotFoundError, PatchbayError, ValidationError
from patchbay.core.models import ConnectorSettings, StdioTarget
from patchbay.runtime import read_events
from tests.support.approvals import ScriptedApprover
from tests.support.paths import FIXTURES
from tests.support.servers import everything_stdio_command

pytestmark = pytest.mark.anyio

INCLUDE_CHAIN = ["mcp.resource.requested", "permission.requested", "permission.resolved", "mcp.resource.fetched"]


def resources_server(
    record: Path, *, page_size: int | None = None, approval_mode: str = "allow_all", **fields: Any
) -> RuntimeServer:
    args = [str(FIXTURES / "resources_server.py"), "--record", str(record)]
    if page_size is not None:
        args += ["--page-size", str(page_size)]
    return RuntimeServer(
        connector_id="id-res",
        name="res",
        target=StdioTarget(command=sys.executable, args=tuple(args)),
        settings=ConnectorSettings(approval_mode=approval_mode, **fields.pop("settings", {})),
        **fields,
    )


def config(tmp_path: Path, *servers: RuntimeServer) -> RuntimeConfig:
    return RuntimeConfig(project_id="p1", workspace=str(tmp_path), servers=servers)


def requests(path: Path, method: str | None = None) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if method is None or line["method"] == method]


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


async def test_of_fifty_listed_resources_only_the_two_included_are_read_and_reach_the_context(
    tmp_path: Path, settings: Settings
) -> None:
    record = tmp_path / "requests.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record)), settings=settings) as runtime:
            listed = await runtime.list_resources("res")
            first = await runtime.include_resource("res", "fixture://doc/3")
            second = await runtime.include_resource("res", "fixture://doc/41")

    assert [r.uri for r in listed] == [f"fixture://doc/{i}" for i in range(50)]
    assert listed[7].name == "doc-7" and listed[7].mime_type == "text/plain"
    # Every page was followed (8 per page: 7 pages), and only the two included were read.
    assert [r["params"]["cursor"] for r in requests(record, "resources/list")] == [
        None,
        "8",
        "16",
        "24",
        "32",
        "40",
        "48",
    ]
    assert [r["params"]["uri"] for r in requests(record, "resources/read")] == ["fixture://doc/3", "fixture://doc/41"]

    for included, uri, text in ((first, "fixture://doc/3", "Document 3"), (second, "fixture://doc/41", "Document 41")):
        assert (included.server, included.uri, included.text) == ("res", uri, text)
        assert included.source == {"mcp": {"server": "res", "uri": uri}}
        assert included.model_text == f"[mcp:res:{uri}]\n{text}"
        assert included.size_bytes == len(text.encode()) and included.content_hash == sha256(text.encode())
        assert [c.to_dict() for c in included.contents] == [{"uri": uri, "mimeType": "text/plain", "text": text}]

    events = read_events(runtime.event_log_path)
    chain = [e for e in events if not e["type"].startswith("mcp.server.")]
    assert [e["type"] for e in chain] == INCLUDE_CHAIN * 2
    fetched = [e["payload"] for e in events if e["type"] == "mcp.resource.fetched"]
    assert fetched == [
        {
            "server": "res",
            "uri": "fixture://doc/3",
            "includeId": first.include_id,
            "sizeBytes": 10,
            "contentHash": sha256(b"Document 3"),
        },
        {
            "server": "res",
            "uri": "fixture://doc/41",
            "includeId": second.include_id,
            "sizeBytes": 11,
            "contentHash": sha256(b"Document 41"),
        },
    ]
    requested = chain[0]
    assert requested["payload"] == {"server": "res", "uri": "fixture://doc/3"}
    assert first.include_id == f"ri_{requested['seq']}"
    assert chain[1]["payload"] == {
        "server": "res",
        "uri": "fixture://doc/3",
        "includeId": first.include_id,
        "riskAtDecision": "read",
        "sourcedFrom": "user_explicit_include",
        "policySource": "allow_all",
    }
    assert chain[2]["payload"] == {
        "server": "res",
        "uri": "fixture://doc/3",
        "includeId": first.include_id,
        "decision": "allow",
        "actor": "policy",
        "sourcedFrom": "allow_all",
    }
    # The content itself never goes into the log.
    assert "Document 3" not in runtime.event_log_path.read_text()


async def test_listing_is_bounded_by_the_catalogs_page_and_size_caps(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    few_pages = Settings(home=tmp_path / "home", probe_max_pages=5)
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record, page_size=1)), settings=few_pages) as runtime:
            capped = await runtime.list_resources("res")  # the page cap keeps the first five pages
            assert len(await runtime.list_resource_templates("res")) == 2  # two pages: within the cap
    assert len(capped) == 5
    assert len(requests(record, "resources/list")) == 5

    small = Settings(home=tmp_path / "home", probe_max_metadata_bytes=1000)
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record)), settings=small) as runtime:
            with pytest.raises(PatchbayError) as caught:
                await runtime.list_resources("res")
    assert caught.value.code == "tool_list_failed" and "1000 bytes" in caught.value.message


async def test_templates_are_listed_on_every_page_expanded_and_read_by_uri(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record)), settings=settings) as runtime:
            templates = await runtime.list_resource_templates("res")
            item = await runtime.include_resource("res", templates[0].expand({"id": "a b/c"}))
            blob = await runtime.include_resource("res", templates[1].expand({"id": "7"}))
    assert [(t.uri_template, t.name, t.variables) for t in templates] == [
        ("fixture://item/{id}", "item", ("id",)),
        ("fixture://blob/{id}", "blob", ("id",)),
    ]
    assert len(requests(record, "resources/templates/list")) == 2
    # The server received the percent-encoded URI, not a name and not the raw value.
    assert [r["params"]["uri"] for r in requests(record, "resources/read")] == [
        "fixture://item/a%20b%2Fc",
        "fixture://blob/7",
    ]
    assert item.uri == "fixture://item/a%20b%2Fc" and item.text == "item a%20b%2Fc"
    (content,) = blob.contents
    assert content.text is None and base64.b64decode(content.blob) == b"blob 7"
    assert blob.size_bytes == 6 and blob.content_hash == sha256(b"blob 7")
    assert blob.model_text == "[mcp:res:fixture://blob/7]\n[blob application/octet-stream, 6 bytes]"


@pytest.mark.parametrize(
    "fields",
    [
        {"global_resource_grant": "deny"},
        {"project_resource_grant": "deny"},
        # A project allow never lifts a global deny.
        {"global_resource_grant": "deny", "project_resource_grant": "allow"},
    ],
    ids=["global-deny", "project-deny", "global-deny-over-project-allow"],
)
async def test_a_denying_policy_blocks_the_include_before_the_server_sees_it(
    tmp_path: Path, settings: Settings, fields: dict[str, Any]
) -> None:
    record = tmp_path / "requests.jsonl"
    server = resources_server(record, **fields)
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as caught:
                await runtime.include_resource("res", "fixture://doc/1")
    assert caught.value.reason == "permission_denied"
    assert caught.value.details["includeId"].startswith("ri_")
    assert requests(record, "resources/read") == []
    events = read_events(runtime.event_log_path)
    assert [e["type"] for e in events] == INCLUDE_CHAIN[:3]  # never connected, never fetched
    assert events[2]["payload"]["decision"] == "deny" and events[2]["payload"]["reason"] == "permission_denied"


async def test_ask_is_refused_headless_and_asks_an_attached_approver_once_per_session(
    tmp_path: Path, settings: Settings
) -> None:
    record = tmp_path / "requests.jsonl"
    server = resources_server(record, approval_mode="ask")
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as caught:
                await runtime.include_resource("res", "fixture://doc/1")
    assert caught.value.reason == "approval_unavailable"
    assert requests(record, "resources/read") == []

    approver = ScriptedApprover("allow_session")
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings, approver=approver) as runtime:
            await runtime.include_resource("res", "fixture://doc/1")
            await runtime.include_resource("res", "fixture://doc/2")  # remembered: not asked again
    (request,) = approver.requests
    assert (request.connector, request.tool, request.risk) == ("res", "resources/read", "read")
    assert request.arguments == {"uri": "fixture://doc/1"}
    assert [r["params"]["uri"] for r in requests(record, "resources/read")] == ["fixture://doc/1", "fixture://doc/2"]
    resolved = [e["payload"] for e in read_events(runtime.event_log_path) if e["type"] == "permission.resolved"]
    assert [(p["actor"], p["sourcedFrom"]) for p in resolved] == [
        ("user", "user_allow_session"),
        ("user", "session_allow"),
    ]


async def test_a_failed_read_is_logged_and_raised_with_the_servers_code(tmp_path: Path, settings: Settings) -> None:
    record = tmp_path / "requests.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record)), settings=settings) as runtime:
            with pytest.raises(ToolCallError) as caught:
                await runtime.include_resource("res", "fixture://missing")
    assert caught.value.reason == "tool_error" and caught.value.details["mcpCode"] == -32002
    events = [e for e in read_events(runtime.event_log_path) if not e["type"].startswith("mcp.server.")]
    assert [e["type"] for e in events] == [*INCLUDE_CHAIN[:3], "mcp.call.failed"]
    failed = events[-1]["payload"]
    assert failed["method"] == "resources/read" and failed["includeId"] == caught.value.details["includeId"]
    assert failed["reason"] == "tool_error" and "Resource not found" in failed["error"]


async def test_a_read_without_an_answer_times_out_and_the_connection_stays_usable(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    quick = Settings(home=tmp_path / "home", request_timeout=0.5)
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record)), settings=quick) as runtime:
            with pytest.raises(ToolCallError) as caught:
                await runtime.include_resource("res", "fixture://slow/1.5")
            after = await runtime.include_resource("res", "fixture://doc/2")
            states = runtime.server_states()
    assert caught.value.reason == "timeout" and caught.value.details["timeoutSeconds"] == 0.5
    assert after.text == "Document 2" and states == {"res": "connected"}
    failed = [e["payload"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.call.failed"]
    assert [(p["method"], p["reason"], p["includeId"]) for p in failed] == [
        ("resources/read", "timeout", caught.value.details["includeId"])
    ]


async def test_bad_uris_and_unknown_connectors_are_refused_before_anything_is_logged_or_sent(
    tmp_path: Path, settings: Settings
) -> None:
    record = tmp_path / "requests.jsonl"
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, resources_server(record)), settings=settings) as runtime:
            with pytest.raises(ValidationError):
                await runtime.include_resource("res", "fixture://item/{id}")
            with pytest.raises(NotFoundError):
                await runtime.include_resource("nope", "fixture://doc/1")
            with pytest.raises(NotFoundError):
                await runtime.list_resources("nope")
    assert read_events(runtime.event_log_path) == []
    assert not record.exists()


async def test_server_everything_resources_and_templates(tmp_path: Path, settings: Settings) -> None:
    command, *args = everything_stdio_command()
    server = RuntimeServer(
        connector_id="id-ev",
        name="everything",
        target=StdioTarget(command=command, args=tuple(args)),
        settings=ConnectorSettings(approval_mode="allow_all"),
    )
    with anyio.fail_after(30):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            listed = await runtime.list_resources("everything")
            templates = await runtime.list_resource_templates("everything")
            text = await runtime.include_resource("everything", templates[0].expand({"resourceId": 5}))
            blob = await runtime.include_resource("everything", templates[1].expand({"resourceId": "7"}))
            doc = await runtime.include_resource("everything", listed[0].uri)
    assert len(listed) == 7
    assert all(r.uri.startswith("demo://resource/static/document/") for r in listed)
    assert [(t.uri_template, t.variables) for t in templates] == [
        ("demo://resource/dynamic/text/{resourceId}", ("resourceId",)),
        ("demo://resource/dynamic/blob/{resourceId}", ("resourceId",)),
    ]
    assert text.uri == "demo://resource/dynamic/text/5" and text.text.startswith("Resource 5:")
    data = base64.b64decode(blob.contents[0].blob)
    assert data.startswith(b"Resource 7:") and blob.content_hash == sha256(data) and blob.size_bytes == len(data)
    assert doc.text.startswith("# Everything Server")
    fetched = [e["payload"]["uri"] for e in read_events(runtime.event_log_path) if e["type"] == "mcp.resource.fetched"]
    assert fetched == [text.uri, blob.uri, doc.uri]


async def test_a_server_without_templates_or_prompts_lists_none(tmp_path: Path, settings: Settings) -> None:
    # resources_only_server.py: resources capability, no templates handler (-32601), no prompts.
    server = RuntimeServer(
        connector_id="id-only",
        name="only",
        target=StdioTarget(command=sys.executable, args=(str(FIXTURES / "resources_only_server.py"),)),
    )
    with anyio.fail_after(20):
        async with Runtime(config(tmp_path, server), settings=settings) as runtime:
            listed = await runtime.list_resources("only")
            templates = await runtime.list_resource_templates("only")
            prompts = await runtime.list_prompts("only")
    assert [r.uri for r in listed] == ["memo://readme", "memo://licence"]
    assert templates == [] and prompts == []
