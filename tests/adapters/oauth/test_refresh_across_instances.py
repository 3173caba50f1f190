"""OAuth refresh single-flight across instances: two instances on one data home (one credential
store), each in its own event loop and thread (so the in-process refresh lock does not join them),
refresh one expired grant of the SDK-built authorization server that rotates refresh tokens
(tests/fixtures/oauth_server.py) at the same moment. With one Redis the lease makes the
authorization server see one refresh grant, and the other instance uses the rotated tokens."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from pydantic import SecretStr

from patchbay.core.errors import ToolCallError
from tests.support.coordination import MACHINE_REDIS, machine_keys, unique_prefix
from tests.support.oauth import ControlPlane, HeadlessBrowser, add_oauth_connector, control_plane, oauth_server, whoami

pytestmark = pytest.mark.anyio

NAME = "svc"


async def two_instances_refresh_at_once(
    plane: ControlPlane, fixture: Any, **settings: Any
) -> list[dict[str, Any] | ToolCallError]:
    """Log in, expire the access token, slow the authorization server down so both refreshes
    overlap, then call through two instances started together; returns their answers (or the
    call's failure)."""
    result, _ = await plane.oauth.login(NAME, authorizer=HeadlessBrowser(), workspace=plane.workspace, login_timeout=20)
    assert result.state == "ready", result.message
    plane.expire_access_token(NAME)
    fixture.control(reject_access_tokens=True, as_delay=1.5)
    instance = dataclasses.replace(plane, settings=plane.settings.model_copy(update=settings))
    start = threading.Barrier(2, timeout=30)
    answers: list[dict[str, Any] | ToolCallError] = []

    def run_instance() -> None:
        start.wait()  # both instances call at the same moment
        try:
            answers.append(anyio.run(whoami, instance, NAME))
        except ToolCallError as exc:
            answers.append(exc)

    with anyio.fail_after(90):
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(anyio.to_thread.run_sync, run_instance)
    return answers


async def test_with_redis_two_instances_refreshing_at_once_spend_the_refresh_token_once(tmp_path: Path) -> None:
    with oauth_server(separate_as=True) as fixture, unique_prefix() as prefix:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        before = plane.bundle(NAME)
        answers = await two_instances_refresh_at_once(
            plane, fixture, redis_url=SecretStr(MACHINE_REDIS), redis_prefix=prefix
        )
        assert len(answers) == 2
        assert all(not isinstance(answer, ToolCallError) and answer["scopes"] == ["mcp"] for answer in answers)
        assert fixture.counts("main").get("refresh") == 1  # the lease's loser re-read the new tokens
        after = plane.bundle(NAME)
        assert after is not None and after.refreshed_at is not None and before is None
        assert plane.oauth.status(NAME)["state"] == "authorized"
        assert machine_keys(prefix) == []  # the lease was released


async def test_without_redis_the_same_two_instances_both_refresh(tmp_path: Path) -> None:
    # What the lease prevents: each instance refreshes, the second one with a refresh token the
    # first rotated away meanwhile (the authorization server refuses it: invalid_grant).
    with oauth_server(separate_as=True) as fixture:
        plane = control_plane(tmp_path / "home")
        add_oauth_connector(plane, NAME, fixture.url)
        answers = await two_instances_refresh_at_once(plane, fixture)
        assert len(answers) == 2
        assert fixture.counts("main").get("refresh") == 2
