"""The request body cap of the REST API (``Settings.api_max_body_bytes``, default 2 MiB).

A body over the cap is 413 ``payload_too_large`` in the one error shape, details ``{"limit":
<bytes>}``: at once when its ``Content-Length`` says so (whichever route it is for, nothing is
read), else as soon as the bytes read pass the cap (a chunked or streamed body): the route's body
read fails there, so no more than the cap plus one chunk is ever buffered, and the rest is never
pulled from the client.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from patchbay.core.errors import ErrorCode
from patchbay.interfaces.api.errors import error_response

__all__ = ["BodyLimitMiddleware", "PayloadTooLarge", "payload_too_large"]


class PayloadTooLarge(StarletteHTTPException):
    """Raised from ``receive`` when a streamed body passes the cap; answered 413 by the error
    handlers (:mod:`patchbay.interfaces.api.errors`).

    Attributes:
        limit: the cap in bytes.
    """

    code = ErrorCode.PAYLOAD_TOO_LARGE

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=f"request bodies are limited to {limit} bytes")
        self.limit = limit


def payload_too_large(limit: int) -> Response:
    """The 413 ``payload_too_large`` answer for a cap of ``limit`` bytes."""
    message = f"request bodies are limited to {limit} bytes"
    return error_response(413, ErrorCode.PAYLOAD_TOO_LARGE, message, {"limit": limit})


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_bytes`` (see the module docstring).

    Args:
        app: the ASGI app.
        max_bytes: the cap (``Settings.api_max_body_bytes``).
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        lengths = [v for k, v in scope.get("headers", []) if k.lower() == b"content-length"]
        if any(value.strip().isdigit() and int(value) > self.max_bytes for value in lengths):
            await payload_too_large(self.max_bytes)(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise PayloadTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except PayloadTooLarge:
            if started:  # a route that answered before it read its body: nothing more to say
                raise
            await payload_too_large(self.max_bytes)(scope, receive, send)
