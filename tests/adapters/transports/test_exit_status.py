"""A stdio server that ends during the MCP handshake is reported with how it ended (open_client)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from patchbay.adapters.transports import classify, leaf_exceptions, open_client
from patchbay.adapters.transports.exit_status import describe_exit
from patchbay.core.errors import ErrorCode, ProbeError
from patchbay.core.models import StdioTarget

pytestmark = pytest.mark.anyio


async def handshake_failure(target: StdioTarget, tmp_path: Path, env: dict[str, str] | None = None) -> ProbeError:
    """The ``ProbeError`` opening ``target`` raised (the transport's task groups may wrap it)."""
    with anyio.fail_after(20):
        with pytest.raises(Exception) as caught:  # a ProbeError, maybe inside groups: unwrapped below
            async with open_client(target, workspace=tmp_path, env=env):
                pass
    (failure,) = [leaf for leaf in leaf_exceptions(caught.value) if isinstance(leaf, ProbeError)]
    assert classify(caught.value) == (failure.code, failure.message)
    return failure


async def test_a_server_killed_by_a_signal_is_reported_with_the_signal(tmp_path: Path) -> None:
    script = (
        "import os, signal, sys; sys.stderr.write('dying\\n'); sys.stderr.flush(); os.kill(os.getpid(), signal.SIGKILL)"
    )
    failure = await handshake_failure(StdioTarget(command=sys.executable, args=("-c", script)), tmp_path)
    assert failure.code == ErrorCode.SERVER_CLOSED
    assert (
        failure.message == "the server was killed by signal SIGKILL before the MCP handshake completed; stderr: dying"
    )
    assert failure.details == {"exitStatus": None, "signal": "SIGKILL"}


async def test_a_bound_credential_value_in_stderr_is_masked_in_the_message(tmp_path: Path) -> None:
    script = "import os, sys; sys.stderr.write('token is ' + os.environ['SERVICE_TOKEN'] + '\\n'); sys.exit(2)"
    target = StdioTarget(command=sys.executable, args=("-c", script))
    failure = await handshake_failure(target, tmp_path, env={"SERVICE_TOKEN": "plainvalue-7781"})
    assert failure.message.startswith("the server exited with status 2 before the MCP handshake completed; stderr: ")
    assert "plainvalue-7781" not in failure.message
    assert failure.details["exitStatus"] == 2


def test_describe_exit_covers_status_signal_and_a_live_process() -> None:
    assert describe_exit(0) == "exited with status 0"
    assert describe_exit(-15) == "was killed by signal SIGTERM"
    assert describe_exit(None) == "closed its stdout but is still running"
