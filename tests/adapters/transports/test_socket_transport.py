"""Unix socket connectors: newline-delimited JSON-RPC through the SDK client."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from patchbay.adapters.transports import open_client
from patchbay.core.errors import ProbeError
from patchbay.core.validation import validate_socket_path

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@contextlib.contextmanager
def socket_server() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="pb-", dir="/tmp") as directory:
        path = f"{directory}/mcp.sock"
        process = subprocess.Popen(
            [sys.executable, str(FIXTURES / "socket_server.py"), path], stdout=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout.readline().strip() == "ready", "socket server did not start"
            yield path
        finally:
            process.terminate()
            process.wait(timeout=10)


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
