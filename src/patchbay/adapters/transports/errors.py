"""Map whatever a connection attempt raised to one stable probe code.

Connect-time failures come out of the SDK in many shapes: ``ExceptionGroup``s wrapping
``httpx2`` errors, ``MCPError`` with JSON-RPC codes (some synthesised from HTTP statuses),
``OSError`` from spawning, pydantic errors for malformed messages. ``classify`` unwraps and
picks the most specific code, so no caller ever matches on message text.
"""

from __future__ import annotations

import ssl

import httpx2
import mcp_types as types
import pydantic
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError
from mcp.shared.exceptions import MCPError

from patchbay.core.errors import ErrorCode, PatchbayError

__all__ = ["classify", "leaf_exceptions"]


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """Every non-group exception inside ``exc`` (depth first); ``[exc]`` for a plain one."""
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(leaf_exceptions(inner))
        return leaves
    return [exc]


def _code_of(exc: BaseException, http_status: int | None) -> ErrorCode:
    if isinstance(exc, PatchbayError):
        return ErrorCode(exc.code)
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return ErrorCode.TIMEOUT
    if isinstance(exc, ssl.SSLError) or (isinstance(exc, httpx2.ConnectError) and _caused_by_ssl(exc)):
        return ErrorCode.TLS_ERROR
    if isinstance(exc, httpx2.NetworkError | ConnectionRefusedError):  # connect, read, write, close
        return ErrorCode.SERVER_CLOSED
    if isinstance(exc, MCPError):
        if http_status in (401,):
            return ErrorCode.AUTH_REQUIRED
        if http_status == 403:
            return ErrorCode.AUTH_REQUIRED
        if exc.error.code == types.CONNECTION_CLOSED:
            return ErrorCode.SERVER_CLOSED
        if exc.error.code == types.REQUEST_TIMEOUT:
            return ErrorCode.TIMEOUT
        return ErrorCode.PROTOCOL_ERROR
    if isinstance(exc, httpx2.SSEError | httpx2.ProtocolError | httpx2.DecodingError):
        return ErrorCode.PROTOCOL_ERROR  # e.g. an HTML page where an event stream was expected
    if isinstance(exc, pydantic.ValidationError | ValueError):
        return ErrorCode.PROTOCOL_ERROR
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        return ErrorCode.AUTH_REQUIRED if status in (401, 403) else ErrorCode.PROTOCOL_ERROR
    if isinstance(exc, anyio_closed_errors()):
        return ErrorCode.SERVER_CLOSED
    if isinstance(exc, OSError):
        return ErrorCode.SERVER_CLOSED
    return ErrorCode.UNKNOWN


def _caused_by_ssl(exc: BaseException) -> bool:
    """Whether an ``ssl.SSLError`` is in ``exc``'s cause chain (httpx2 and httpcore2 chain the
    errors they translate; the message may name a host with "ssl" in it, so it is not used)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            return True
        current = current.__cause__ or current.__context__
    return False


def anyio_closed_errors() -> tuple[type[BaseException], ...]:
    import anyio

    return (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


_PRIORITY = [
    ErrorCode.INVALID_CONFIG,
    ErrorCode.COMMAND_NOT_FOUND,
    ErrorCode.SPAWN_FAILED,
    ErrorCode.NETWORK_BLOCKED,
    ErrorCode.TLS_ERROR,
    ErrorCode.AUTH_REQUIRED,
    ErrorCode.AUTH_EXPIRED,
    ErrorCode.TIMEOUT,
    ErrorCode.PROTOCOL_ERROR,
    ErrorCode.TOOL_LIST_FAILED,
    ErrorCode.SERVER_CLOSED,
    ErrorCode.UNKNOWN,
]


def classify(exc: BaseException, *, http_status: int | None = None) -> tuple[ErrorCode, str]:
    """Return ``(code, message)`` for a connect/probe failure.

    Args:
        exc: what was raised (groups are unwrapped).
        http_status: the last HTTP status the transport saw, if any (401/403 → ``auth_required``).
    """
    leaves = [leaf for leaf in leaf_exceptions(exc) if not _is_cancellation(leaf)] or leaf_exceptions(exc)
    leaves = [_blocked_cause(leaf) or leaf for leaf in leaves]
    blocked = next(
        (leaf for leaf in leaves if isinstance(leaf, PatchbayError) and leaf.code == ErrorCode.NETWORK_BLOCKED), None
    )
    if blocked is not None:  # nothing left the machine: that says more than the status before it
        return ErrorCode.NETWORK_BLOCKED, blocked.message
    for leaf in leaves:  # an authorization verdict says more than the status that led to it
        if isinstance(leaf, PatchbayError) and leaf.code in (ErrorCode.AUTH_REQUIRED, ErrorCode.AUTH_EXPIRED):
            return leaf.code, leaf.message
        if isinstance(leaf, OAuthFlowError):  # the SDK's discovery/registration/token failures
            hint = (
                " (no dynamic client registration here: configure a client id with patchbay auth configure)"
                if isinstance(leaf, OAuthRegistrationError)
                else ""
            )
            return ErrorCode.AUTH_REQUIRED, f"OAuth: {str(leaf)[:300] or type(leaf).__name__}{hint}"
    if http_status in (401, 403):
        return ErrorCode.AUTH_REQUIRED, f"the server answered HTTP {http_status}: authorization is required"
    ranked = sorted(((_code_of(leaf, http_status), leaf) for leaf in leaves), key=lambda pair: _PRIORITY.index(pair[0]))
    code, leaf = ranked[0]
    message = leaf.message if isinstance(leaf, PatchbayError) else (str(leaf) or type(leaf).__name__)
    if http_status is not None and http_status >= 400 and code == ErrorCode.PROTOCOL_ERROR:
        message = f"{message} (HTTP {http_status})"
    return code, message


def _blocked_cause(exc: BaseException) -> PatchbayError | None:
    """The egress guard's refusal (``network_blocked``) in ``exc``'s cause/context chain, if any.

    The guard raises from inside httpx2/httpcore2 and the SDK; a layer that wraps the error must not
    turn a refused request into a "connection failed".
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PatchbayError) and current.code == ErrorCode.NETWORK_BLOCKED:
            return current
        current = current.__cause__ or current.__context__
    return None


def _is_cancellation(exc: BaseException) -> bool:
    import anyio

    return isinstance(exc, anyio.get_cancelled_exc_class())
