"""The output guard (seed 000 §11): oversized results are cut to a head + tail preview and stored
whole as an artifact; events carry preview, size and artifact id; binary blocks are never sliced.

Unit tests drive :class:`OutputGuard` directly; the runtime tests go through the real ``Runtime``
and ``tests/fixtures/big_output_server.py`` over stdio, including the 50 MiB memory measurement.
"""

from __future__ import annotations

import base64
import gc
import importlib.util
import json
import re
import time
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest

import patchbay.runtime.calls.executor as executor_module
from patchbay import Runtime, RuntimeConfig, RuntimeServer, Settings
from patchbay.core.redaction import redact_value
from patchbay.runtime import read_events
from patchbay.runtime.calls.result import CallEvents, ToolCallResult, local_result, mcp_result
from patchbay.runtime.events.log import EventLog, encode_json, session_log_path
from patchbay.runtime.output.artifacts import ArtifactStore
from patchbay.runtime.output.guard import OutputGuard, measure_output
from tests.support.events import CALL_CHAIN
from tests.support.paths import FIXTURES
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio


def _fixture_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The fixture server's own content builders, so expectations are rebuilt, not copied.
_server = _fixture_module("big_output_server")
make_blob, make_lines, make_text = _server.make_blob, _server.make_lines, _server.make_text

MARKER = re.compile(r"\[truncated (\d+) bytes\]")


def guard(tmp_path: Path, **limits: Any) -> OutputGuard:
    return OutputGuard(Settings(home=tmp_path / "home", **limits))


def whole_json(content: list[dict[str, Any]], structured: Any = None) -> bytes:
    """The whole result as the guard stores it (lone surrogates as JSON escapes)."""
    return encode_json({"content": content, "structuredContent": structured}).encode("utf-8", "backslashreplace")


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_block(size: int) -> dict[str, Any]:
    return {"type": "image", "data": base64.b64encode(make_blob(size)).decode(), "mimeType": "image/png"}


def stored(out_guard: OutputGuard, artifact_id: str | None) -> Any:
    assert artifact_id is not None
    return json.loads(out_guard.store.read(artifact_id))


# -- the guard on its own -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        [text_block("hello"), text_block("wörld"), image_block(300)],  # flat blocks: one encoder call
        [{"type": "resource", "resource": {"uri": "file:///a", "text": "hello\nwörld"}}, text_block("hello\nwörld")],
        [text_block("hello\n" + "x" * 200_000 + "\nwörld")],  # big for the quick path, within the bound
    ],
)
def test_a_result_within_bounds_passes_unchanged_and_stores_nothing(
    tmp_path: Path, content: list[dict[str, Any]]
) -> None:
    g = guard(tmp_path, max_output_bytes=300_000)
    out = g.bound(content, {"n": 1})
    assert out.content is content and out.structured_content == {"n": 1}
    assert (out.truncated, out.artifact_id) == (False, None)
    assert out.text == "\n".join(block["text"] for block in content if block["type"] == "text")
    assert out.size_bytes == len(whole_json(content, {"n": 1}))
    assert not (tmp_path / "home" / "artifacts").exists()


def test_a_result_pushed_over_the_bound_by_json_escapes_is_cut(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=10_000, output_preview_bytes=100)
    content = [text_block("\x01" * 3000)]  # 3,000 characters, 18,000 bytes of JSON (\u0001 each)
    out = g.bound(content, None)
    assert out.truncated and out.size_bytes == len(whole_json(content)) == g.store.size(out.artifact_id)
    assert out.text == "\x01" * 50 + "\n[truncated 2900 bytes]\n" + "\x01" * 50


def test_an_oversized_text_becomes_head_marker_tail_and_is_stored_whole(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=10_000, output_preview_bytes=1000)
    text = make_text(50_000)
    content = [text_block(text)]
    out = g.bound(content, None)
    assert out.truncated and out.artifact_id is not None
    assert out.text == text[:500] + "\n[truncated 49000 bytes]\n" + text[-500:]
    assert out.content == [text_block(out.text)] and out.structured_content is None
    assert stored(g, out.artifact_id) == {"content": content, "structuredContent": None}
    assert g.store.size(out.artifact_id) == out.size_bytes == len(whole_json(content))
    assert g.store.path(out.artifact_id).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("preview", [2, 7, 8, 9, 10, 11, 1001])
def test_cuts_fall_on_utf8_character_boundaries(tmp_path: Path, preview: int) -> None:
    g = guard(tmp_path, max_output_bytes=1000, output_preview_bytes=preview)
    text = make_text(5_000, unicode=True)  # "aé€😀" repeated: 1-, 2-, 3- and 4-byte characters
    out = g.bound([text_block(text)], None)
    head, _, tail = out.text.partition("\n[truncated ")
    tail = tail.partition(" bytes]\n")[2]
    assert text.startswith(head) and text.endswith(tail)
    head_bytes, tail_bytes = len(head.encode()), len(tail.encode())
    assert preview // 2 - 3 <= head_bytes <= preview // 2
    assert (preview - preview // 2) - 3 <= tail_bytes <= preview - preview // 2
    assert int(MARKER.search(out.text).group(1)) == 5_000 - head_bytes - tail_bytes


def test_a_result_over_the_line_cap_is_cut_even_when_small_in_bytes(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_lines=100)
    text = make_lines(5_000)  # about 44 KB: far below max_output_bytes
    out = g.bound([text_block(text)], None)
    assert out.truncated
    lines = out.text.split("\n")
    assert lines[:50] == [f"line {i}" for i in range(50)]
    assert MARKER.fullmatch(lines[50])
    assert lines[51:] == [f"line {i}" for i in range(4950, 5000)]
    kept = len("\n".join(lines[:50])) + len("\n".join(lines[51:]))  # the newlines around the cut go too
    assert int(MARKER.search(out.text).group(1)) == len(text) - kept
    assert stored(g, out.artifact_id)["content"][0]["text"] == text


def test_binary_blocks_are_never_sliced_and_an_oversized_one_becomes_a_note(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=100_000, output_preview_bytes=1000)
    small, big = image_block(30_000), image_block(200_000)
    audio = {"type": "audio", "data": base64.b64encode(b"\0" * 90_000).decode(), "mimeType": "audio/wav"}
    content = [text_block(make_text(200_000)), small, big, audio]
    out = g.bound(content, None)
    assert out.truncated
    assert out.content[1] is small  # fits in what the preview leaves: kept whole
    assert out.content[2] == {
        "type": "text",
        "text": f"[image image/png, 200000 bytes not shown: full result in artifact {out.artifact_id}]",
    }
    assert out.content[3] == {
        "type": "text",
        "text": f"[audio audio/wav, 90000 bytes not shown: full result in artifact {out.artifact_id}]",
    }
    assert stored(g, out.artifact_id)["content"] == content


def test_an_oversized_embedded_blob_becomes_a_note_and_embedded_text_is_cut(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=10_000, output_preview_bytes=100)
    blob = {"uri": "file:///b.bin", "mimeType": "application/zip", "blob": base64.b64encode(b"z" * 30_000).decode()}
    text = {"uri": "file:///a.txt", "mimeType": "text/plain", "text": make_text(20_000), "_meta": {"k": "v"}}
    content = [{"type": "resource", "resource": text}, {"type": "resource", "resource": blob}]
    out = g.bound(content, None)
    cut = out.content[0]["resource"]
    assert (cut["uri"], cut["mimeType"], "_meta" in cut) == ("file:///a.txt", "text/plain", False)
    assert cut["text"] == text["text"][:50] + "\n[truncated 19900 bytes]\n" + text["text"][-50:]
    assert out.content[1]["text"].startswith("[resource application/zip, 30000 bytes not shown")
    assert stored(g, out.artifact_id)["content"] == content


def test_text_across_blocks_keeps_whole_blocks_head_and_tail_and_drops_the_middle(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=20_000, output_preview_bytes=1000)
    first, second, third, fourth, last = "A" * 100, make_text(30_000), "M" * 5000, make_text(30_000), "Z" * 100
    link = {"type": "resource_link", "uri": "file:///r", "name": "r"}
    content = [text_block(first), text_block(second), text_block(third), link, text_block(fourth), text_block(last)]
    out = g.bound(content, None)
    omitted = 30_000 - 400 + 5000 + 30_000 - 400
    assert (
        out.content
        == [
            text_block(first),
            text_block(second[:400] + f"\n[truncated {omitted} bytes]"),  # 100 + 400 = 500 bytes of head
            link,
            text_block(fourth[-400:]),
            text_block(last),
        ]
    )
    assert out.text == "\n".join(block["text"] for block in out.content if block["type"] == "text")


def test_structured_content_over_the_bound_is_left_out_but_stored(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=10_000, output_preview_bytes=1000)
    structured = {"blob": "s" * 50_000, "nested": [1, 2.5, None, True, "é"]}
    out = g.bound([text_block("short")], structured)
    assert out.truncated and out.structured_content is None
    assert out.content == [text_block("short")]
    assert stored(g, out.artifact_id)["structuredContent"] == structured
    small = g.bound([text_block(make_text(50_000))], {"rows": 3})
    assert small.truncated and small.structured_content == {"rows": 3}


def test_a_result_that_cannot_be_stored_is_still_cut(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", max_output_bytes=1000, output_preview_bytes=100)
    settings.home.mkdir()
    settings.artifacts_dir.write_text("not a directory")
    out = OutputGuard(settings).bound([text_block(make_text(5000)), image_block(5000)], None)
    assert out.truncated and out.artifact_id is None
    assert MARKER.search(out.text)
    assert out.content[-1]["text"] == "[image image/png, 5000 bytes not shown: the full result could not be stored]"
    assert out.size_bytes == len(whole_json([text_block(make_text(5000)), image_block(5000)]))


BIG = 1024 * 1024


@pytest.mark.parametrize(
    ("content", "structured"),
    [
        ([], None),
        ([text_block("")], {}),
        ([text_block('quote " backslash \\ tab \t nl \n bell \x07 é € 😀')], {"a": [1, 2.5, None, True, "ü"]}),
        ([text_block("é" * (BIG + 7))], None),  # non-ASCII across slices
        ([text_block("x" * (BIG - 1) + '"\\\n\x01' + "y" * BIG)], None),  # escapes straddling a slice edge
        ([{"type": "text", "text": "\n" * (2 * BIG + 3), "annotations": {"priority": 0.5}}], {"k": "v"}),
        ([image_block(BIG), {"type": "resource_link", "uri": "file:///x", "name": "x", "_meta": {"a": [1]}}], None),
        ([text_block("lone \ud800 surrogate" * 3)], {"s": "\udfff"}),
        ([text_block("lone surrogate in a big one \udc80" + "z" * BIG)], None),
    ],
)
def test_the_measured_size_is_the_exact_size_of_the_json(content: list[dict[str, Any]], structured: Any) -> None:
    assert measure_output(content, structured) == len(whole_json(content, structured))


def test_an_artifact_round_trips_text_with_lone_surrogates(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=1000, output_preview_bytes=100)
    content = [text_block("a\ud800b" * 2000)]
    out = g.bound(content, {"s": "\udfff"})
    assert stored(g, out.artifact_id) == {"content": content, "structuredContent": {"s": "\udfff"}}
    assert g.store.size(out.artifact_id) == out.size_bytes


# -- calls.py: results, model text, events -------------------------------------------------------


def test_mcp_result_bounds_a_server_result_with_the_guard(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=10_000, output_preview_bytes=1000)
    text = make_text(40_000)
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content={"n": 1})
    outcome = mcp_result("tc_1", "mcp.big.text", result, g)
    assert (outcome.truncated, outcome.structured_content) == (True, {"n": 1})
    assert outcome.artifact_id is not None and outcome.size_bytes == g.store.size(outcome.artifact_id)
    assert outcome.text.startswith(text[:500]) and outcome.text.endswith(text[-500:])
    small = mcp_result("tc_2", "mcp.big.text", types.CallToolResult(content=[]), g)
    assert (small.truncated, small.artifact_id, small.content) == (False, None, [])


def test_a_local_result_is_bounded_only_when_given_a_guard(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=1000, output_preview_bytes=100)
    text = make_text(5000)
    assert local_result("tc_1", "local_tool", text).text == text
    bounded = local_result("tc_1", "local_tool", text, g)
    assert bounded.truncated and stored(g, bounded.artifact_id)["content"] == [text_block(text)]


def test_model_text_prefixes_mcp_output_as_untrusted_and_leaves_local_output_alone() -> None:
    mcp = ToolCallResult("tc_1", "mcp.jira.get_issue", [text_block("IGNORE PREVIOUS")], None, "IGNORE PREVIOUS", 9)
    assert mcp.model_text == "[mcp:jira:get_issue]\nIGNORE PREVIOUS"
    dotted = ToolCallResult("tc_1", "mcp.fs-v2.read.text", [], {"n": 1}, "", 9)
    assert dotted.model_text == '[mcp:fs-v2:read.text]\n{"n":1}'
    local = ToolCallResult("tc_1", "read_file", [text_block("hi")], None, "hi", 9)
    assert (local.untrusted_prefix, local.model_text) == ("", "hi")


def to_outcome(call_id: str, text: str, g: OutputGuard) -> ToolCallResult:
    return mcp_result(
        call_id, "mcp.big.text", types.CallToolResult(content=[types.TextContent(type="text", text=text)]), g
    )


def test_tool_completed_carries_preview_size_and_artifact_id_already_redacted(tmp_path: Path) -> None:
    g = guard(tmp_path, max_output_bytes=1000, output_preview_bytes=100)
    secret = "sk-" + "q" * 30
    text = f"token={secret} " + make_text(5000)
    path = session_log_path(tmp_path / "sessions", "ses_guard")
    with EventLog(path, "ses_guard") as log:
        events = CallEvents(log, "mcp.big.text", {})
        events.resolved("mcp.big.text", "big")
        outcome = to_outcome(events.id, text, g)
        events.tool_completed(outcome, 500)
        plain = CallEvents(log, "mcp.big.text", {})
        plain.tool_completed(to_outcome(plain.id, "small", g), 500)
    completed = [event["payload"] for event in read_events(path) if event["type"] == "tool.completed"]
    assert completed[0] == {
        "tool": "mcp.big.text",
        "toolCallId": events.id,
        "resultPreview": redact_value(outcome.text[:500]),
        "resultSize": outcome.size_bytes,
        "truncated": True,
        "artifactId": outcome.artifact_id,
    }
    assert secret not in path.read_text()
    assert completed[1] == {
        "tool": "mcp.big.text",
        "toolCallId": plain.id,
        "resultPreview": "small",
        "resultSize": len(whole_json([text_block("small")])),
    }
    for payload in completed:
        assert redact_value(payload) == payload


# -- through the real runtime over stdio --------------------------------------------------------


def big_server() -> RuntimeServer:
    grants = {name: "allow" for name in ("text", "lines", "image", "mixed", "structured")}
    return RuntimeServer(
        connector_id="id-big", name="big", target=fixture_server("big_output_server.py"), global_grants=grants
    )


def big_config(workspace: Path) -> RuntimeConfig:
    return RuntimeConfig(project_id="p1", workspace=str(workspace), servers=(big_server(),))


async def test_an_oversized_result_through_the_runtime_is_cut_stored_and_logged_small(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", max_output_bytes=256 * 1024, output_preview_bytes=4096)
    size = 1024 * 1024
    with anyio.fail_after(60):
        async with Runtime(big_config(tmp_path), settings=settings) as runtime:
            result = await runtime.call("mcp.big.text", {"size": size})
    text = make_text(size)
    assert result.truncated and result.artifact_id is not None
    assert result.text == text[:2048] + f"\n[truncated {size - 4096} bytes]\n" + text[-2048:]
    assert result.model_text == "[mcp:big:text]\n" + result.text
    store = ArtifactStore.from_settings(settings)
    assert json.loads(store.read(result.artifact_id)) == {"content": [text_block(text)], "structuredContent": None}
    assert store.size(result.artifact_id) == result.size_bytes
    events = read_events(runtime.event_log_path)
    assert [event["type"] for event in events if event["payload"].get("toolCallId") == result.tool_call_id] == (
        CALL_CHAIN
    )
    completed = next(event["payload"] for event in events if event["type"] == "tool.completed")
    assert completed == {
        "tool": "mcp.big.text",
        "toolCallId": result.tool_call_id,
        "resultPreview": text[: settings.result_preview_chars],
        "resultSize": result.size_bytes,
        "truncated": True,
        "artifactId": result.artifact_id,
    }
    assert runtime.event_log_path.stat().st_size < 16 * 1024  # no blob in the log
    for event in events:
        assert redact_value(event["payload"]) == event["payload"], event["type"]


async def test_mixed_content_lines_and_structured_through_the_runtime(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path / "home", max_output_bytes=256 * 1024, output_preview_bytes=4096, max_output_lines=100
    )
    with anyio.fail_after(60):
        async with Runtime(big_config(tmp_path), settings=settings) as runtime:
            mixed = await runtime.call(
                "mcp.big.mixed", {"text_size": 600_000, "image_size": 100_000, "structured_size": 300_000}
            )
            image = await runtime.call("mcp.big.image", {"size": 400_000})
            lines = await runtime.call("mcp.big.lines", {"count": 1000})
            structured = await runtime.call("mcp.big.structured", {"size": 300_000})
    store = ArtifactStore.from_settings(settings)
    assert [block["type"] for block in mixed.content] == ["text", "image", "resource_link", "text"]
    assert base64.b64decode(mixed.content[1]["data"]) == make_blob(100_000)  # whole, not sliced
    assert mixed.content[3] == text_block("the end") and mixed.structured_content is None
    assert MARKER.search(mixed.content[0]["text"])
    assert json.loads(store.read(mixed.artifact_id))["structuredContent"] == {"blob": "s" * 300_000, "n": 1}
    assert image.truncated and image.content == [
        text_block(f"[image image/png, 400000 bytes not shown: full result in artifact {image.artifact_id}]")
    ]
    assert lines.truncated and len(lines.text.split("\n")) == 101  # 50 + the marker + 50
    assert json.loads(store.read(lines.artifact_id))["content"] == [text_block(make_lines(1000))]
    assert (structured.truncated, structured.structured_content) == (True, None)
    assert structured.model_text == "[mcp:big:structured]\nsee structured content"


# -- memory: a 50 MiB result through the real runtime ----------------------------------------------

FIFTY_MIB = 50 * 1024 * 1024


@pytest.fixture(scope="module")
def fifty_mib_call(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One 50 MiB ``text`` call through the Runtime under tracemalloc.

    ``mcp_result`` (the runtime's part, where the guard runs) is wrapped to split the call's
    traced peak into the SDK's part (transport read, JSON parse, result validation: everything
    before the result reaches the runtime) and the runtime's own part (from there to the end).
    """
    home = tmp_path_factory.mktemp("fifty-mib")
    settings = Settings(home=home / "home", request_timeout=600.0)
    marks: dict[str, Any] = {}
    real = executor_module.mcp_result

    def measured(*args: Any) -> ToolCallResult:
        marks["entry"], marks["sdk_peak"] = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        return real(*args)

    async def call() -> ToolCallResult:
        async with Runtime(big_config(home), settings=settings) as runtime:
            await runtime.call("mcp.big.text", {"size": 10})  # connected and warm
            gc.collect()
            tracemalloc.start()
            try:
                marks["base"] = tracemalloc.get_traced_memory()[0]
                started = time.perf_counter()
                result = await runtime.call("mcp.big.text", {"size": FIFTY_MIB})
                marks["seconds"] = time.perf_counter() - started
                marks["own_peak"] = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        marks["events"] = read_events(runtime.event_log_path)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(executor_module, "mcp_result", measured)
        marks["result"] = anyio.run(call)
    marks["settings"] = settings
    sdk = (marks["sdk_peak"] - marks["base"]) / FIFTY_MIB
    own = (marks["own_peak"] - marks["entry"]) / FIFTY_MIB
    total = (max(marks["sdk_peak"], marks["own_peak"]) - marks["base"]) / FIFTY_MIB
    marks["ratios"] = {"sdk": sdk, "runtime_own": own, "total": total}
    print(f"\n50 MiB call: {marks['seconds']:.1f}s, peak growth x size: {marks['ratios']}")
    return marks


def test_a_50_mib_result_is_cut_and_stored(fifty_mib_call: dict[str, Any]) -> None:
    result = fifty_mib_call["result"]
    store = ArtifactStore.from_settings(fifty_mib_call["settings"])
    assert result.truncated and store.size(result.artifact_id) == result.size_bytes > FIFTY_MIB
    assert len(result.text.encode()) < 65 * 1024
    completed = [event["payload"] for event in fifty_mib_call["events"] if event["type"] == "tool.completed"]
    assert completed[-1]["artifactId"] == result.artifact_id and completed[-1]["resultSize"] == result.size_bytes


def test_the_runtime_adds_at_most_1x_on_top_of_what_the_sdk_needs(fifty_mib_call: dict[str, Any]) -> None:
    # The budget is ~1x; the guard streams in 1 MiB slices and measures about 0.1x, so a
    # regression to even one whole copy of the result fails here.
    ratios = fifty_mib_call["ratios"]
    assert ratios["runtime_own"] <= 0.25, ratios
    assert ratios["total"] <= ratios["sdk"] + 0.25, ratios


def test_a_50_mib_result_grows_peak_memory_by_at_most_2x(fifty_mib_call: dict[str, Any]) -> None:
    # ~2x: the transport's line and the parsed text (2.0x) plus the runtime's own ~0.1x.
    assert fifty_mib_call["ratios"]["total"] <= 2.2, fifty_mib_call["ratios"]
