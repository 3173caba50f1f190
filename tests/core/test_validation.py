"""Seed 003 §7.3: every connector validation rule rejects bad input with invalid_config + the field."""

from __future__ import annotations

import os

import pytest

from patchbay.core.errors import ConfigError, ErrorCode
from patchbay.core.names import validate_connector_name
from patchbay.core.validation import (
    validate_cwd,
    validate_http_target,
    validate_socket_path,
    validate_stdio_target,
    validate_url,
)


def assert_invalid(exc: pytest.ExceptionInfo[ConfigError], field: str) -> None:
    assert exc.value.code == ErrorCode.INVALID_CONFIG
    assert exc.value.details["field"] == field
    assert str(exc.value.message).startswith(f"{field}:")


@pytest.mark.parametrize(
    "name", ["", "A", "Time", "-time", "time-", "ti_me", "ti.me", "ti/me", "ti me", "t\x00", "a" * 65, "ümlaut"]
)
def test_connector_names_outside_the_pattern_are_refused(name: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_connector_name(name)
    assert_invalid(exc, "name")


@pytest.mark.parametrize("name", ["a", "0", "time", "mcp-server-2", "a" * 64])
def test_connector_names_inside_the_pattern_are_accepted(name: str) -> None:
    assert validate_connector_name(name) == name


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "empty"),
        ("example.com/mcp", "scheme"),
        ("ftp://example.com/mcp", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("https://user:pw@example.com/mcp", "password"),
        ("https://token@example.com/mcp", "user"),
        ("https:///mcp", "host"),
        ("http://example.com:99999/mcp", "valid"),
        ("http://exa\nmple.com/", "control"),
    ],
)
def test_remote_urls_must_be_absolute_http_without_userinfo(url: str, why: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_url(url)
    assert_invalid(exc, "url")
    assert why in exc.value.message


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[fe80::1%25eth0]:8080/mcp", "zone id"),
        ("http://%31%32%37.0.0.1:18001/mcp", "%-escape"),
        ("http://mcp%5fserver:8000/mcp", "%-escape"),
        ("http://a!b.example/mcp", "characters"),
        ("http://[fe80::zz]:80/mcp", "valid"),
    ],
)
def test_hosts_with_a_zone_id_an_escape_or_odd_characters_are_refused(url: str, why: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_url(url)
    assert_invalid(exc, "url")
    assert why in exc.value.message


@pytest.mark.parametrize(
    "url",
    ["http://mcp_server:8000/mcp", "http://MCP-Server.local/mcp", "https://bücher.example/mcp", "http://[::1]:80/"],
)
def test_docker_service_names_idna_names_and_ipv6_literals_are_accepted(url: str) -> None:
    assert validate_url(url) == url


def test_a_good_remote_target_keeps_its_url_and_transport() -> None:
    target = validate_http_target("https://example.com/mcp?x=1", "sse")
    assert (target.transport, target.url) == ("sse", "https://example.com/mcp?x=1")


def test_an_unknown_remote_transport_is_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        validate_http_target("https://example.com/mcp", "websocket")
    assert_invalid(exc, "transport")


@pytest.mark.parametrize("command", ["", "   ", "-rf", "--help", "npx -y server", "python\tserver.py", "cmd\x00"])
def test_stdio_commands_must_be_one_executable_not_a_shell_line(command: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_stdio_target(command, [])
    assert_invalid(exc, "command")


def test_stdio_args_are_kept_apart_verbatim_shell_metacharacters_included() -> None:
    target = validate_stdio_target("echo", ["$(rm -rf ~)", "a b", ";", "|", "*"])
    assert target.command == "echo"
    assert target.args == ("$(rm -rf ~)", "a b", ";", "|", "*")


def test_stdio_args_with_nul_are_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        validate_stdio_target("echo", ["ok", "bad\x00"])
    assert_invalid(exc, "args")


@pytest.mark.parametrize("cwd", ["..", "../x", "a/../../b", "/etc", "/tmp/other"])
def test_stdio_cwd_must_stay_inside_the_workspace(cwd: str, tmp_path) -> None:
    workspace = str(tmp_path / "ws")
    with pytest.raises(ConfigError) as exc:
        validate_stdio_target("echo", [], cwd=cwd, workspace=workspace)
    assert_invalid(exc, "cwd")


def test_stdio_cwd_is_stored_relative_to_the_workspace(tmp_path) -> None:
    workspace = str(tmp_path)
    assert validate_cwd("", workspace) == ""
    assert validate_cwd("./sub/../sub/dir", workspace) == "sub/dir"
    assert validate_cwd(str(tmp_path / "tools"), workspace) == "tools"
    assert validate_cwd(str(tmp_path), workspace) == ""


@pytest.mark.parametrize("path", ["", "relative.sock", "./x.sock", "/tmp/a\nb.sock", "/" + "s" * 120])
def test_socket_paths_must_be_absolute_or_home_relative(path: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_socket_path(path)
    assert_invalid(exc, "socket_path")


def test_socket_paths_are_normalised_and_tilde_expanded() -> None:
    assert validate_socket_path("/run//user/../mcp/./s.sock").path == "/run/mcp/s.sock"
    assert validate_socket_path("~/mcp.sock").path == os.path.join(os.path.expanduser("~"), "mcp.sock")


def test_a_name_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        validate_connector_name("abc\n")
    assert_invalid(exc, "name")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/mcp?token=abc123456",
        "https://example.com/mcp?api_key=k&x=1",
        "https://example.com/mcp?x=sk-live-0123456789abcdefghij",
        "https://x .com/mcp",
        "https://evil.com\\x.com/mcp",
        "https://example.com:0/mcp",
        "https://example.com/" + "a" * 3000,
    ],
)
def test_urls_carrying_secrets_or_ambiguous_hosts_are_refused(url: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_url(url)
    assert_invalid(exc, "url")


@pytest.mark.parametrize(
    "arg",
    ["\x1b[31mred", "line\nbreak", "bell\x07", "sk-live-0123456789abcdefghij", "--api-key=abcd1234efgh", "bad\udcff"],
)
def test_stdio_args_with_control_characters_invalid_utf8_or_secrets_are_refused(arg: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_stdio_target("server", ["--ok", arg])
    assert_invalid(exc, "args")


def test_free_text_fields_refuse_terminal_escapes() -> None:
    from patchbay.core.validation import validate_text

    with pytest.raises(ConfigError) as exc:
        validate_text("description", "\x1b]0;pwned\x07")
    assert_invalid(exc, "description")
    assert validate_text("description", "Plain [text] with brackets") == "Plain [text] with brackets"


def test_a_refused_control_character_is_named_in_the_message() -> None:
    from patchbay.core.validation import validate_text

    with pytest.raises(ConfigError) as exc:
        validate_text("description", "line one\nline two")
    assert "a line break" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        validate_text("description", "bell\x07")
    assert "U+0007" in str(exc.value)


@pytest.mark.parametrize(
    "text",
    [
        "safe\u202etxt.exe",  # RIGHT-TO-LEFT OVERRIDE
        "x\u2066isolated\u2069",  # bidi isolates
        "x\x9b31mRED",  # C1 CSI
        "x\x85next line",  # C1 NEL
        "a\u200bb",  # ZERO WIDTH SPACE
        "a\ufeffb",  # ZERO WIDTH NO-BREAK SPACE (BOM)
        "a\u00adb",  # SOFT HYPHEN (Cf)
        "tag\U000e0041",  # TAG LATIN CAPITAL LETTER A
    ],
)
@pytest.mark.parametrize("field", ["description", "display_name"])
def test_free_text_fields_refuse_bidi_zero_width_and_c1_characters(text: str, field: str) -> None:
    from patchbay.core.validation import validate_text

    with pytest.raises(ConfigError) as exc:
        validate_text(field, text)
    assert_invalid(exc, field)
    assert f"U+{ord(next(ch for ch in text if not ch.isalnum() and ch not in ' .')):04X}" in exc.value.message


def test_free_text_fields_keep_other_scripts_and_symbols() -> None:
    from patchbay.core.validation import validate_text

    for text in ("Zeit – Europa/Paris", "时间服务器", "שרת זמן", "café ☕ 🕒"):
        assert validate_text("description", text) == text


@pytest.mark.parametrize(
    "command", ["sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"]
)
def test_a_secret_looking_command_is_refused_like_an_argument(command: str) -> None:
    with pytest.raises(ConfigError) as exc:
        validate_stdio_target(command)
    assert_invalid(exc, "command")
    assert "looks like a secret" in exc.value.message and command not in exc.value.message


@pytest.mark.parametrize(
    "arguments",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": "\ud800"},
        {1: "non-string key"},
        {"x": object()},
        "not an object",
    ],
)
def test_tool_arguments_must_be_plain_finite_utf8_json(arguments: object) -> None:
    from patchbay.core.errors import ValidationError
    from patchbay.core.validation import validate_tool_arguments

    with pytest.raises(ValidationError) as exc:
        validate_tool_arguments(arguments)
    assert exc.value.code == "validation_error" and exc.value.details == {"field": "arguments"}


def test_deeply_nested_tool_arguments_are_refused_without_recursion() -> None:
    from patchbay.core.errors import ValidationError
    from patchbay.core.validation import validate_tool_arguments

    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidationError):
        validate_tool_arguments(deep)
    assert validate_tool_arguments({"a": [1, 2.5, {"b": None, "c": True}]}) == {"a": [1, 2.5, {"b": None, "c": True}]}


@pytest.mark.parametrize("command", ["mcp-server-time;", "a|b", "run&", "x>out", "`id`", "$(id)"])
def test_a_command_with_a_shell_operator_is_refused_naming_it(command: str) -> None:
    from patchbay.core.validation import validate_stdio_target

    with pytest.raises(ConfigError) as exc:
        validate_stdio_target(command, ["--flag"])
    assert_invalid(exc, "command")
    assert "shell operator" in str(exc.value)
    # the same characters in an argument are data for the program, passed as they are
    assert validate_stdio_target("grep", ["a|b;c", "$(x)"]).args == ("a|b;c", "$(x)")


@pytest.mark.parametrize("url", ["https://256.1.1.1/mcp", "http://1.2.3/mcp", "http://10.0.0.999/", "http://host.123/"])
def test_a_host_ending_in_a_number_must_be_a_valid_ipv4_address(url: str) -> None:
    from patchbay.core.validation import validate_url

    with pytest.raises(ConfigError) as exc:
        validate_url(url)
    assert "numeric host" in str(exc.value)
    assert validate_url("http://192.0.2.10:8080/mcp") == "http://192.0.2.10:8080/mcp"
