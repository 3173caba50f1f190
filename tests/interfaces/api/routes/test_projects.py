"""``GET /api/projects``: the known projects by path; listing (or looking at a workspace's
tools) makes no directory a project, a project grant does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.api import Api

pytestmark = pytest.mark.anyio


async def _paths(api: Api) -> list[str]:
    response = await api.client.get("/api/projects")
    assert response.status_code == 200, response.text
    projects = response.json()["projects"]
    assert all(p["project_id"] for p in projects)
    return [p["path"] for p in projects]


async def test_projects_are_listed_by_path_once_they_have_settings_of_their_own(api: Api, tmp_path: Path) -> None:
    before = await _paths(api)
    await api.create("time", {"transport": "stdio", "command": "mcp-server-time"}, enabled=True)
    b_side, a_side = tmp_path / "b-side", tmp_path / "a-side"
    b_side.mkdir()
    a_side.mkdir()

    looked = await api.client.get("/api/mcp/connectors/time/tools", params={"cwd": str(b_side)})
    assert looked.status_code == 200, looked.text
    assert await _paths(api) == before  # looking made no project

    for workspace in (b_side, a_side):
        granted = await api.client.put(
            "/api/mcp/connectors/time/tools/get_current_time", params={"cwd": str(workspace)}, json={"decision": "deny"}
        )
        assert granted.status_code == 200, granted.text
    listed = await _paths(api)
    assert set(listed) == set(before) | {str(a_side.resolve()), str(b_side.resolve())}
    assert listed == sorted(listed)
