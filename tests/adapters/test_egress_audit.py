"""The egress audit file: metadata-only JSON lines, mode 0600, safe appends."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
from pathlib import Path

import pytest

from patchbay.adapters.egress_audit import (
    BACKGROUND_QUEUE_LINES,
    NOTES,
    EgressAudit,
    audit_path,
    read_audit,
    target_origin,
)
from patchbay.core.errors import EgressBlocked
from patchbay.core.models import HttpTarget, SocketTarget, StdioTarget
from patchbay.core.validation import validate_http_target
from tests.support.egress import AUDIT_KEYS

ISO_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def test_a_line_holds_exactly_the_metadata_and_the_file_is_0600(tmp_path: Path) -> None:
    audit = EgressAudit(audit_path(tmp_path / "home"))
    assert audit.record(
        "mcp_tool_call", connector_id="con_1", origin="https://mcp.example.com:443", project_id="prj_1", approved=True
    )
    (line,) = read_audit(audit.path)
    assert set(line) == AUDIT_KEYS
    assert line["note"] == "mcp_tool_call"
    assert (line["connector_id"], line["origin"], line["project_id"], line["approved"]) == (
        "con_1",
        "https://mcp.example.com:443",
        "prj_1",
        True,
    )
    assert ISO_MS.fullmatch(line["time"])
    assert stat.S_IMODE(os.stat(audit.path).st_mode) == 0o600
    assert audit.path == tmp_path / "home" / "egress-audit.jsonl"


def test_stdio_and_socket_lines_say_the_runtime_call_audit_is_unavailable(tmp_path: Path) -> None:
    audit = EgressAudit(audit_path(tmp_path))
    audit.record("mcp_connect", connector_id="con_2", origin=None, project_id=None, approved=True)
    (line,) = read_audit(audit.path)
    assert line == {**line, "origin": None, "runtime_call_audit": "unavailable", "project_id": None}
    assert set(line) == AUDIT_KEYS | {"runtime_call_audit"}


@pytest.mark.parametrize(
    "origin",
    [
        "https://mcp.example.com:443/mcp",
        "https://mcp.example.com:443?token=x",
        "https://user:pw@mcp.example.com:443",
        "https://mcp.example.com",
        "mcp.example.com:443",
    ],
)
def test_anything_but_a_bare_origin_is_refused(tmp_path: Path, origin: str) -> None:
    audit = EgressAudit(audit_path(tmp_path))
    with pytest.raises(ValueError):
        audit.record("mcp_probe", connector_id="c", origin=origin, project_id=None, approved=True)
    assert not audit.path.exists()


def test_only_the_seed_notes_are_accepted(tmp_path: Path) -> None:
    assert NOTES == {
        "mcp_probe",
        "mcp_connect",
        "mcp_tool_call",
        "mcp_oauth_discovery",
        "mcp_oauth_token",
        "mcp_builtin_request",  # one line per HTTP request of a built-in connector's own process
    }
    with pytest.raises(ValueError):
        EgressAudit(audit_path(tmp_path)).record(
            "mcp_upload",  # type: ignore[arg-type]
            connector_id="c",
            origin=None,
            project_id=None,
            approved=True,
        )


def test_a_wider_existing_file_is_tightened_to_0600(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    path.write_text("")
    path.chmod(0o644)
    EgressAudit(path).record("mcp_probe", connector_id="c", origin=None, project_id=None, approved=False)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_audit(path)[0]["approved"] is False


def test_a_symlinked_audit_file_is_not_followed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched\n")
    path = audit_path(tmp_path / "home")
    path.parent.mkdir()
    path.symlink_to(elsewhere)
    with caplog.at_level(logging.WARNING, logger="patchbay.adapters.egress_audit"):
        written = EgressAudit(path).record("mcp_probe", connector_id="c", origin=None, project_id=None, approved=True)
    assert written is False
    assert elsewhere.read_text() == "untouched\n"
    assert "cannot append" in caplog.text


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    audit = EgressAudit(audit_path(tmp_path))

    def write(index: int) -> None:
        for n in range(200):
            audit.record(
                "mcp_tool_call",
                connector_id=f"con_{index}",
                origin=f"https://host{index}.example:{1000 + n}",
                project_id="prj",
                approved=True,
            )

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = audit.path.read_text().splitlines()
    assert len(lines) == 1600
    parsed = [json.loads(line) for line in lines]
    assert {(p["connector_id"], p["origin"]) for p in parsed} == {
        (f"con_{i}", f"https://host{i}.example:{1000 + n}") for i in range(8) for n in range(200)
    }


def test_background_lines_are_all_in_the_file_in_order_once_flushed(tmp_path: Path) -> None:
    audit = EgressAudit(audit_path(tmp_path / "home"), background=True)
    count = BACKGROUND_QUEUE_LINES + 100  # more than the queue holds: the caller waits, nothing is lost
    for n in range(count):
        assert audit.record("mcp_tool_call", connector_id=f"con_{n}", origin=None, project_id="prj", approved=True)
    audit.flush()
    assert [line["connector_id"] for line in read_audit(audit.path)] == [f"con_{n}" for n in range(count)]
    assert stat.S_IMODE(os.stat(audit.path).st_mode) == 0o600


def test_a_background_line_is_byte_for_byte_the_line_written_directly(tmp_path: Path) -> None:
    direct = EgressAudit(tmp_path / "direct.jsonl")
    queued = EgressAudit(tmp_path / "queued.jsonl", background=True)
    for audit in (direct, queued):
        for origin, approved in ((None, True), ("https://mcp.example.com:443", False)):
            audit.record("mcp_tool_call", connector_id="c_1", origin=origin, project_id="p_1", approved=approved)
    queued.flush()
    lines = [path.read_bytes().splitlines() for path in (direct.path, queued.path)]
    assert [ISO_MS.sub("T", line.decode()) for line in lines[0]] == [
        ISO_MS.sub("T", line.decode()) for line in lines[1]
    ]
    assert [json.loads(line)["approved"] for line in lines[1]] == [True, False]


def test_a_background_line_is_checked_before_it_is_queued(tmp_path: Path) -> None:
    audit = EgressAudit(audit_path(tmp_path), background=True)
    with pytest.raises(ValueError):
        audit.record("mcp_probe", connector_id="c", origin="https://h.example:443/path", project_id=None, approved=True)
    with pytest.raises(ValueError):  # and again: a refused origin is never remembered as checked
        audit.record("mcp_probe", connector_id="c", origin="https://h.example:443/path", project_id=None, approved=True)
    audit.flush()
    assert read_audit(audit.path) == []


def test_a_background_writer_does_not_follow_a_symlink_and_logs_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched\n")
    path = audit_path(tmp_path / "home")
    path.parent.mkdir()
    path.symlink_to(elsewhere)
    with caplog.at_level(logging.WARNING, logger="patchbay.adapters.egress_audit"):
        audit = EgressAudit(path, background=True)
        audit.record("mcp_tool_call", connector_id="c", origin=None, project_id=None, approved=True)
        audit.flush()
    assert elsewhere.read_text() == "untouched\n"
    assert "cannot append" in caplog.text


def test_target_origin_is_the_origin_of_a_remote_target_and_none_otherwise() -> None:
    assert target_origin(HttpTarget(url="https://mcp.example.com/v1/mcp?tenant=acme")) == "https://mcp.example.com:443"
    assert target_origin(HttpTarget(url="http://127.0.0.1:8080/sse", transport="sse")) == "http://127.0.0.1:8080"
    assert target_origin(StdioTarget(command="mcp-server-time")) is None
    assert target_origin(SocketTarget(path="/tmp/x.sock")) is None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://mcp_server:8000/mcp", "http://mcp_server:8000"),
        ("http://MCP_Server/mcp", "http://mcp_server:80"),
        ("https://bücher.example/mcp", "https://xn--bcher-kva.example:443"),
        ("http://[::1]:9000/mcp", "http://[::1]:9000"),
    ],
)
def test_every_host_validation_accepts_gives_an_origin_the_audit_records(tmp_path: Path, url: str, origin: str) -> None:
    audit = EgressAudit(audit_path(tmp_path / "home"))
    assert target_origin(validate_http_target(url, "streamable_http")) == origin
    assert audit.record("mcp_connect", connector_id="c", origin=origin, project_id=None, approved=True)
    assert [line["origin"] for line in read_audit(audit.path)] == [origin]


@pytest.mark.parametrize("url", ["http://[fe80::1%25eth0]:8080/mcp", "http://%31%32%37.0.0.1:18001/mcp"])
def test_a_stored_url_validation_now_refuses_is_network_blocked_never_a_value_error(url: str) -> None:
    with pytest.raises(EgressBlocked) as info:
        target_origin(HttpTarget(url=url))
    assert info.value.code == "network_blocked"
