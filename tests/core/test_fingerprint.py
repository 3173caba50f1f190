"""The config fingerprint keys cached catalogs by server identity, never by secrets (seed 003 §5.4)."""

from __future__ import annotations

import hashlib
import re

import pytest

from patchbay.core.fingerprint import config_fingerprint
from patchbay.core.models import HttpTarget, SocketTarget, StdioTarget

STDIO = StdioTarget(command="mcp-server-git", args=("--repository", "/srv/repo"))
HTTP = HttpTarget(url="https://api.example.com/mcp")


def test_a_fingerprint_is_sha256_hex_and_the_same_config_gives_the_same_one() -> None:
    first = config_fingerprint(StdioTarget(command="mcp-server-git", args=("--repository", "/srv/repo")))
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert first == config_fingerprint(STDIO) == config_fingerprint(STDIO, "none")
    assert config_fingerprint(HTTP, "bearer") == config_fingerprint(HttpTarget(url=HTTP.url), "bearer")


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/mcp?api_key=sk-live-abcdef0123456789abcdef",
        "https://api.example.com/mcp#fragment",
        "https://alice:s3cret-pw@api.example.com/mcp",
        "https://API.Example.COM/mcp",
        "https://api.example.com:443/mcp",
    ],
)
def test_query_fragment_userinfo_host_case_and_default_port_do_not_change_the_fingerprint(url: str) -> None:
    assert config_fingerprint(HttpTarget(url=url)) == config_fingerprint(HTTP)


def test_an_empty_url_path_is_the_root_path() -> None:
    assert config_fingerprint(HttpTarget(url="http://127.0.0.1:8080")) == config_fingerprint(
        HttpTarget(url="http://127.0.0.1:8080/")
    )


def test_no_secret_value_can_be_recovered_from_the_inputs_it_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bytes] = []
    real_sha256 = hashlib.sha256

    def spy(data: bytes = b"") -> object:
        seen.append(data)
        return real_sha256(data)

    monkeypatch.setattr(hashlib, "sha256", spy)
    config_fingerprint(
        HttpTarget(url="https://bob:hunter2-pw@api.example.com/mcp?token=sk-live-abcdef0123456789"), "bearer"
    )
    hashed = b"".join(seen).decode()
    for secret in ("hunter2-pw", "bob", "sk-live-abcdef0123456789", "token="):
        assert secret not in hashed
    assert "api.example.com" in hashed and "/mcp" in hashed and "bearer" in hashed


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (HTTP, HttpTarget(url="https://api.example.com/other")),
        (HTTP, HttpTarget(url="https://api.example.com:8443/mcp")),
        (HTTP, HttpTarget(url="http://api.example.com/mcp")),
        (HTTP, HttpTarget(url="https://eu.example.com/mcp")),
        (HTTP, HttpTarget(url="https://api.example.com/mcp", transport="sse")),
        (STDIO, StdioTarget(command="mcp-server-time", args=STDIO.args)),
        (STDIO, StdioTarget(command=STDIO.command, args=("--repository", "/srv/other"))),
        (STDIO, StdioTarget(command=STDIO.command, args=(*STDIO.args, "--verbose"))),
        (STDIO, StdioTarget(command=STDIO.command, args=STDIO.args, cwd="sub")),
        (SocketTarget(path="/run/a.sock"), SocketTarget(path="/run/b.sock")),
        (SocketTarget(path="/run/a.sock"), StdioTarget(command="/run/a.sock")),
    ],
)
def test_changing_transport_url_command_args_cwd_or_socket_changes_the_fingerprint(before, after) -> None:  # type: ignore[no-untyped-def]
    assert config_fingerprint(before) != config_fingerprint(after)


def test_changing_the_auth_type_changes_the_fingerprint() -> None:
    assert config_fingerprint(HTTP, "none") != config_fingerprint(HTTP, "bearer")
    assert config_fingerprint(HTTP, "bearer") != config_fingerprint(HTTP, "oauth")
