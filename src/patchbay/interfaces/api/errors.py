"""Errors of the REST API: one shape, stable codes, fixed statuses (DESIGN.md "Stable error codes").

Every non-2xx answer is ``{"error": {"code", "message", "details"}}``
(:class:`~patchbay.interfaces.api.contracts.ErrorResponse`); every code is an
:class:`~patchbay.core.errors.ErrorCode` or a :class:`~patchbay.core.errors.FailureReason`, and
its status is in :data:`STATUS` or :data:`TOOL_STATUS`::

    code                          status  raised by
    validation_error              422     a request FastAPI cannot parse or validate (body, path,
                                          query); an invalid_config error (ConfigError,
                                          details.field names the field; a malformed import file:
                                          details.line/column; details.cause is "invalid_config"); a
                                          ValidationError
    not_found                     404     NotFoundError; a path no route has
    revision_conflict             409     RevisionConflictError (details.expected, details.actual;
                                          the message says which revision: the connector's or
                                          settings.revision); a connector name that is taken
                                          (NameTakenError: details.field "name", details.cause
                                          "name_taken")
    builtin_connector             403     BuiltinConnectorError
    approval_stale                409     ApprovalStaleError (an approval answer for arguments or
                                          a policy that no longer match the waiting call)
    canonical_state_unavailable   503     CanonicalStateUnavailable
    origin_refused                403     a Host or Origin header this server does not answer
                                          (see :mod:`patchbay.interfaces.api.app`)
    method_not_allowed            405     a method the path does not have
    unauthorized                  401     no valid API token or session cookie
                                          (:mod:`patchbay.interfaces.api.auth`)
    payload_too_large             413     a body over ``Settings.api_max_body_bytes``
                                          (details.limit: the cap in bytes)
    server_closed                 502     a create with transport ``auto`` that no transport
    network_blocked               502     answered (ProbeError: the probe code; details.field
    tls_error                     502     "url", details.streamable_http / details.sse: each
    protocol_error                502     attempt's code); nothing was stored
    timeout                       504     the same, when the probe timeout passed first
    csrf_failed                   403     a POST/PUT/PATCH/DELETE authenticated by the session
                                          cookie without the right ``X-Patchbay-CSRF`` header
                                          (:mod:`patchbay.interfaces.api.auth`)
    unknown                       500     anything unexpected (logged, redacted); also the
                                          session routes of an app served without its lifespan
    event_chain_broken            500     a session's event log does not verify (a seq missing;
                                          in the shared store's table also a hash that does not
                                          match: a row altered); details.seq

A tool call (``POST /api/sessions/{session_id}/call``) that produced no result answers with the
ToolCallError's failure reason as the code (DESIGN.md "Stable error codes")::

    permission_denied             403     a deny (policy or grant); the server never saw the call
    approval_unavailable          403     an ``ask`` decision and no ``"approve": "once"``
    approval_pending              409     an approval that stays open after the call ended (an
                                          approver with a patience, as the gateway's); the
                                          identical call made again takes its answer
    unknown_tool                  422     no such tool in the session's runtime (also: hidden,
                                          excluded, denied by a grant, disabled connector); 422,
                                          not 404: the session (the path) exists, the body names
                                          nothing it offers
    ambiguous_call                422     a bare name that matches more than one tool
    cancelled                     409     the session was closed during the call
    tool_error                    502     the server answered with an error result (it is in
                                          ``details.result``) or a JSON-RPC error
    mcp_server_unavailable        502     the server could not be started or reached
                                          (``details.code``: the probe code, e.g. command_not_found)
    mcp_server_unstable           502     the server keeps crashing (restart budget spent)
    mcp_server_restarted          502     the server restarted during the call
    timeout                       504     no result within the call's time limit
    (runtime_reload_failed)       503     ``mcp_server_unavailable`` with ``details.code ==
                                          "runtime_reload_failed"``: the session's last rebuild
                                          failed and it serves no runtime until a later reload

A request FastAPI refuses gets a message in words: a body that is no JSON names the line and
column, a POST without a JSON content-type says to send one, a refused pattern says what the field
must be (``cwd: must be an absolute path``).

Messages are redacted (PatchbayError redacts its message; responses are scanned again as they
are rendered) and a validation error never quotes the input it refused: a refused body may hold
a credential value.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from patchbay.core.errors import ErrorCode, FailureReason, NameTakenError, PatchbayError, ToolCallError
from patchbay.interfaces.api.contracts import ErrorResponse
from patchbay.interfaces.api.responses import RedactedJSONResponse

__all__ = ["STATUS", "TOOL_STATUS", "error_response", "error_responses", "install_error_handlers", "tool_call_status"]

log = logging.getLogger("patchbay.api")

STATUS: dict[ErrorCode, int] = {
    ErrorCode.VALIDATION_ERROR: 422,
    ErrorCode.INVALID_CONFIG: 422,  # answered as validation_error, details.cause "invalid_config"
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.REVISION_CONFLICT: 409,
    ErrorCode.APPROVAL_STALE: 409,
    ErrorCode.BUILTIN_CONNECTOR: 403,
    ErrorCode.CANONICAL_STATE_UNAVAILABLE: 503,
    ErrorCode.ORIGIN_REFUSED: 403,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.CSRF_FAILED: 403,
    ErrorCode.SERVER_CLOSED: 502,  # a transport "auto" create that found no server
    ErrorCode.NETWORK_BLOCKED: 502,
    ErrorCode.TLS_ERROR: 502,
    ErrorCode.PROTOCOL_ERROR: 502,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.UNKNOWN: 500,
    ErrorCode.EVENT_CHAIN_BROKEN: 500,
}
"""HTTP status of each stable code the API answers with (see the module docstring)."""

TOOL_STATUS: dict[FailureReason, int] = {
    FailureReason.PERMISSION_DENIED: 403,
    FailureReason.APPROVAL_UNAVAILABLE: 403,
    FailureReason.APPROVAL_PENDING: 409,
    FailureReason.UNKNOWN_TOOL: 422,
    FailureReason.AMBIGUOUS_CALL: 422,
    FailureReason.CANCELLED: 409,
    FailureReason.TOOL_ERROR: 502,
    FailureReason.MCP_SERVER_UNAVAILABLE: 502,
    FailureReason.MCP_SERVER_UNSTABLE: 502,
    FailureReason.MCP_SERVER_RESTARTED: 502,
    FailureReason.TIMEOUT: 504,
}
"""HTTP status of each tool call failure reason (see the module docstring)."""

_DESCRIPTIONS = {
    401: "No valid API token (`unauthorized`): send `Authorization: Bearer <token>` or log in at `/login`.",
    403: (
        "Refused: a built-in connector (`builtin_connector`), a foreign Host/Origin (`origin_refused`); "
        "for a tool call `permission_denied` or `approval_unavailable`."
    ),
    404: "No such connector, project, session or path (`not_found`).",
    409: (
        "The revision named is stale, or the connector name is taken (`details.cause` `name_taken`); "
        "nothing was changed (`revision_conflict`); for a tool call `cancelled` (the session was closed during it)."
    ),
    413: "The body is over the size limit (`payload_too_large`, `details.limit` in bytes).",
    422: (
        "The request is malformed or breaks a validation rule (`validation_error`, `details.field`); "
        "for a tool call `unknown_tool` or `ambiguous_call`."
    ),
    500: "An unexpected error (`unknown`): a bug, logged.",
    502: (
        "The MCP server failed the call: `tool_error` (its error result is in `details.result`), "
        "`mcp_server_unavailable` (`details.code` says why), `mcp_server_unstable`, `mcp_server_restarted`; "
        "a create with transport `auto` that found no server (`server_closed`, `network_blocked`, `tls_error`, "
        "`protocol_error`; nothing stored)."
    ),
    503: (
        "The canonical store cannot be used (`canonical_state_unavailable`); for a tool call "
        "`mcp_server_unavailable` with `details.code` `runtime_reload_failed` (the session has no runtime)."
    ),
    504: (
        "The tool call got no result in time (`timeout`); a create with transport `auto` got no answer "
        "within the probe timeout (`timeout`; nothing stored)."
    ),
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for ``statuses`` (and always 401, 413, 422 and 503), all ErrorResponse."""
    wanted = sorted({*statuses, 401, 413, 422, 503})
    return {status: {"model": ErrorResponse, "description": _DESCRIPTIONS[status]} for status in wanted}


def error_response(
    status: int, code: ErrorCode | FailureReason, message: str, details: dict[str, Any] | None = None
) -> Response:
    """The one error shape, as a response.

    Args:
        status: the HTTP status (:data:`STATUS`, :data:`TOOL_STATUS`).
        code: the stable code front ends switch on.
        message: one human sentence (redacted as the response is rendered).
        details: small JSON-able context.
    """
    return RedactedJSONResponse(
        {"error": {"code": str(code), "message": message, "details": details or {}}}, status_code=status
    )


def _patchbay_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PatchbayError)
    status = STATUS.get(exc.code)
    if status is None or status == 500:  # a code no route should raise: a bug, shown as one
        log.error("unexpected %s: %s", exc.code, exc.message)
        return error_response(500, exc.code, exc.message, exc.details)
    if isinstance(exc, NameTakenError):  # a valid request the registry's state refuses
        return error_response(409, ErrorCode.REVISION_CONFLICT, exc.message, {**exc.details, "cause": "name_taken"})
    if exc.code == ErrorCode.INVALID_CONFIG:  # ConfigError, MalformedConfigError, ...
        details = {**exc.details, "cause": str(exc.code)}
        return error_response(422, ErrorCode.VALIDATION_ERROR, exc.message, details)
    return error_response(status, exc.code, exc.message, exc.details)


def tool_call_status(exc: ToolCallError) -> int:
    """The HTTP status of a tool call failure (:data:`TOOL_STATUS`; 503 for a session whose last
    reload failed)."""
    if exc.details.get("code") == ErrorCode.RUNTIME_RELOAD_FAILED:
        return 503
    return TOOL_STATUS.get(exc.reason, 502)


def _tool_call_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ToolCallError)
    details = exc.details
    result = exc.result  # a tool_error carries the server's error result
    if result is not None:
        details = {
            **details,
            "result": {
                "model_text": result.model_text,
                "content": result.content,
                "structured_content": result.structured_content,
                "truncated": result.truncated,
                "artifact_id": result.artifact_id,
            },
        }
    return error_response(tool_call_status(exc), exc.reason, exc.message, details)  # the reason is the code


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(part) for part in loc)


_PATTERN_MESSAGES = {
    r"^/[^\x00]*$": "must be an absolute path",
    r"^[Hh][Tt][Tt][Pp][Ss]?://": "must be an http:// or https:// URL",
    r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$": (
        "must be 1-64 characters of a-z, 0-9 and -, starting and ending with a letter or digit"
    ),
}
"""What each pattern of the request contracts means, said in words instead of the regex."""


def _in_words(error: dict[str, Any]) -> str:
    """One validation problem's message: pydantic's, unless it would show a regex."""
    if error.get("type") == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern", ""))
        return _PATTERN_MESSAGES.get(pattern, "does not have the required form")
    return str(error.get("msg", ""))


def _json_position(document: Any, pos: Any) -> tuple[int, int] | None:
    if not isinstance(document, str) or not isinstance(pos, int) or not 0 <= pos <= len(document):
        return None
    line = document.count("\n", 0, pos) + 1
    return line, pos - (document.rfind("\n", 0, pos) + 1) + 1


def _request_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if errors and errors[0].get("type") == "json_invalid":
        loc = tuple(errors[0].get("loc") or ())
        where = _json_position(exc.body, loc[-1] if loc else None)  # FastAPI's loc: ("body", offset)
        at = f" (line {where[0]}, column {where[1]})" if where else ""
        details: dict[str, Any] = {"field": "body"}
        if where:
            details.update(line=where[0], column=where[1])
        return error_response(422, ErrorCode.VALIDATION_ERROR, f"the body is not valid JSON{at}", details)
    problems = [
        {"field": _field(error.get("loc", ())), "message": _in_words(error), "type": str(error.get("type", ""))}
        for error in errors[:20]
    ]
    first = problems[0] if problems else {"field": "", "message": "invalid request", "type": ""}
    if first["field"] == "body" and first["type"] in ("model_attributes_type", "dict_type"):
        content_type = request.headers.get("content-type", "")
        if "json" not in content_type.lower():  # FastAPI reads a body as JSON only when it says so
            first = {**first, "message": "send a JSON object with content-type: application/json"}
    shown = first["field"].removeprefix("body.")
    message = f"{shown}: {first['message']}" if shown else first["message"]
    return error_response(422, ErrorCode.VALIDATION_ERROR, message, {"field": first["field"], "errors": problems})


def _allowed_methods(request: Request) -> str:
    """Every method some route takes at this path (Starlette names only the first route's)."""
    path = request.scope.get("path", "")
    methods: set[str] = set()
    for route in getattr(request.app.state, "api_routes", ()):
        if route.path_regex.match(path):
            methods |= set(route.methods or ())
    return ", ".join(sorted(methods))


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    code: ErrorCode
    if status == 400:  # FastAPI: a body it could not even decode (not UTF-8 ...): a validation error
        status, code, message = 422, ErrorCode.VALIDATION_ERROR, f"body: {exc.detail}"
    elif status == 404:
        code, message = ErrorCode.NOT_FOUND, "no such path"
    elif status == 405:
        code, message = ErrorCode.METHOD_NOT_ALLOWED, "this path does not take that method"
    elif status == 413:  # the body cap cut a streamed body off while the route read it
        limit = getattr(exc, "limit", None)  # a PayloadTooLarge, unless a route raised a bare 413
        return error_response(413, ErrorCode.PAYLOAD_TOO_LARGE, str(exc.detail), {"limit": limit})
    else:
        code, message = ErrorCode.VALIDATION_ERROR, str(exc.detail)
    response = error_response(status, code, message, {"field": "body"} if status == 422 else None)
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    if status == 405:
        response.headers["Allow"] = _allowed_methods(request)
    return response


def _unexpected(_request: Request, exc: Exception) -> Response:
    log.error("unexpected error answering a request", exc_info=exc)
    return error_response(500, ErrorCode.UNKNOWN, f"internal error ({type(exc).__name__})")


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` in the one shape (see the module docstring)."""
    app.add_exception_handler(ToolCallError, _tool_call_error)
    app.add_exception_handler(PatchbayError, _patchbay_error)
    app.add_exception_handler(RequestValidationError, _request_validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
