"""Every string a response carries is redacted on the way out."""

from __future__ import annotations

import pytest

from tests.support.api import Api

pytestmark = pytest.mark.anyio

TIME = {"transport": "stdio", "command": "mcp-server-time"}


async def test_strings_are_redacted_on_the_way_out(api: Api) -> None:
    created = await api.create("time", TIME, description="ask ops: api_key=abcd1234efgh5678 for quota")
    assert "abcd1234efgh5678" not in str(created) and "[REDACTED]" in created["description"]
