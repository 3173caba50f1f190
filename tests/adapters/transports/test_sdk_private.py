"""The SDK's private names Patchbay relies on still exist, with the shape it uses.

Pinned to the versions in :data:`~patchbay.adapters.transports.sdk_private.TESTED_WITH`: after an
upgrade of ``mcp`` or ``httpx2`` this file fails first; re-check each name, then move the pin.
"""

from __future__ import annotations

import contextvars
import importlib.metadata
import typing

import anyio
import pytest
from mcp.shared.message import SessionMessage

from patchbay.adapters.transports import sdk_private
from patchbay.adapters.transports.sdk_private import (
    ContextReceiveStream,
    SSEParser,
    TransportStreams,
    create_context_streams,
    send_in_context,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("distribution", sorted(sdk_private.TESTED_WITH))
def test_the_installed_version_is_the_one_the_private_names_were_checked_against(distribution: str) -> None:
    assert importlib.metadata.version(distribution) == sdk_private.TESTED_WITH[distribution]


def test_transport_streams_is_a_pair_of_read_and_write_streams() -> None:
    assert typing.get_origin(TransportStreams) is tuple
    assert len(typing.get_args(TransportStreams)) == 2


async def test_context_streams_are_a_send_and_receive_pair_that_carry_items() -> None:
    send, receive = create_context_streams[SessionMessage](1)
    assert isinstance(receive, ContextReceiveStream)
    async with send, receive:
        message = typing.cast(SessionMessage, object())
        await send.send(message)
        with anyio.fail_after(5):
            assert await receive.receive() is message


async def test_send_in_context_hands_the_receiver_that_very_context() -> None:
    send, receive = create_context_streams[SessionMessage](1)
    context = contextvars.copy_context()
    async with send, receive:
        message = typing.cast(SessionMessage, object())
        await send_in_context(send, context, message)
        with anyio.fail_after(5):
            assert await receive.receive() is message
        assert receive.last_context is context


def test_the_sse_parser_decodes_events_incrementally() -> None:
    parser = SSEParser(max_event_size=None)
    assert list(parser.decode("event: endpoint\n")) == []
    (event,) = list(parser.decode("data: /messages?session=1\n\n"))
    assert (event.event, event.data) == ("endpoint", "/messages?session=1")
    assert list(parser.flush()) == []
