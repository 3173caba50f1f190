"""Unix socket connectors: newline-delimited JSON-RPC through the SDK client."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from patchbay.adapters.transports import open_client
from patchbay.core.errors import ProbeError
from patchbay.core.validation import validate_socket_path
from tests.support.servers import socket_server

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


async def test_a_socket_server_initializes_lists_and_answers_calls(tmp_path: Path) -> None:
    with socket_server() as path:
        target = validate_socket_path(path)
        with anyio.fail_after(10):
            async with open_client(target, workspace=tmp_path) as connection:
                tools = await connection.client.list_tools()
                assert [t.name for t in tools.tools] == ["echo"]
                result = await connection.client.call_tool("echo", {"text": "hi"})
                assert result.content[0].text == "socket echo: hi"


async def test_nothing_listening_at_the_path_is_server_closed(tmp_path: Path) -> None:
    target = validate_socket_path(str(tmp_path / "absent.sock"))
    with pytest.raises(ProbeError) as exc:
        async with open_client(target, workspace=tmp_path):
            pass
    assert exc.value.code == "server_closed"


@pytest.mark.parametrize("fault", ["world-writable", "other-owner", "open-directory", "not-a-socket"])
async def test_a_socket_others_could_plant_or_hijack_is_invalid_config(tmp_path: Path, fault: str) -> None:
    with socket_server() as path:
        if fault == "world-writable":
            os.chmod(path, 0o666)
        elif fault == "other-owner":
            os.chown(path, 65534, 65534)  # the tests run as root; nobody owns it now
        elif fault == "open-directory":
            os.chmod(os.path.dirname(path), 0o777)
        else:
            path = str(tmp_path / "plain-file")
            with open(path, "w") as handle:  # noqa: ASYNC230 - a one-byte fixture file
                handle.write("x")
        with pytest.raises(ProbeError) as exc:
            async with open_client(validate_socket_path(path), workspace=tmp_path):
                pass
        assert exc.value.code == "invalid_config"
