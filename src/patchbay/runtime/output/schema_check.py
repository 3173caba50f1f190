"""Checking a tool result's ``structuredContent`` against the tool's ``outputSchema``.

The rules (MCP "Structured content": a client SHOULD validate structured results
against the output schema):

* A result with ``isError: true`` is a tool error, whatever it carries: it is never checked
  against the ``outputSchema`` (its ``structuredContent`` may describe the error instead).
* A successful result of a tool that declares an ``outputSchema`` must carry ``structuredContent``
  that validates against it; otherwise the call fails with ``ToolCallError(tool_error)`` whose
  message names the tool and the failing JSON path (``$.items[2].id``).

Validation uses ``jsonschema`` exactly as the mcp SDK 2.3.0 client does (the dialect named by
``$schema``, JSON Schema 2020-12 when absent; the schema is checked against its metaschema first;
``$ref`` resolves only inside the schema: an empty ``referencing.Registry``, so nothing is ever
fetched over the network; formats are annotations, not assertions). Compiled validators are
cached per schema (by its canonical JSON text), failures included, so a schema is compiled at most
once per process while it stays in the cache; the canonical text itself is remembered per schema
object, so a tool's listed schema is serialised once, not on every call.

:func:`check_tool_result_async` is the form for the event loop: a small result (the common case)
is checked inline, a big one in a worker thread, so the loop is never blocked for long and a small
call pays no thread hop.

The SDK's own check (``ClientSession.validate_tool_result``) raises a bare ``RuntimeError`` with
the offending value in its text, and may send an unbounded ``tools/list`` of its own; a connection
that uses this module turns it off with :func:`turn_off_sdk_output_validation`.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator, SchemaError
from jsonschema.exceptions import ValidationError as SchemaValidationError
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from mcp.client.session import ClientSession
from referencing import Registry
from referencing.exceptions import Unresolvable

from patchbay.core.errors import FailureReason, ToolCallError

__all__ = ["CHECK_INLINE_NODES", "check_tool_result", "check_tool_result_async", "turn_off_sdk_output_validation"]

_CACHE_SIZE = 256
"""Distinct output schemas whose compiled validators are kept (least recently used dropped)."""
CHECK_INLINE_NODES = 2000
"""Structured content with at most this many values (string characters counted per 64) is checked
on the event loop; bigger content in a worker thread (a ~0.9 MB result takes ~1.5 s to validate)."""
_SHOWN = 200
"""Characters of server-controlled text (a validator message, a JSON path) quoted in messages."""


@dataclass(frozen=True)
class _Unusable:
    """The schema cannot be compiled; ``reason`` says why (cached like a validator)."""

    reason: str


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compiled(canonical: str) -> Validator | _Unusable:
    """A validator for the schema whose canonical JSON text is ``canonical``, or why there is none."""
    schema = json.loads(canonical)
    if not isinstance(schema, dict | bool):
        return _Unusable(f"it is a {type(schema).__name__}, not a JSON Schema")
    try:
        # An explicit default: an unknown $schema means 2020-12 (no DeprecationWarning).
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)  # type: ignore[arg-type]  # boolean schemas are valid; the stubs say dict only
    except SchemaError as exc:
        return _Unusable(_short(exc.message))
    except Exception as exc:  # a non-hashable $schema, a metaschema walk that recursed too deep
        return _Unusable(f"{type(exc).__name__} while checking it")
    return cls(schema, registry=Registry())


# id(schema) -> (schema, its canonical text): the schema is held, so its id is not reused while
# it is remembered. Listed schemas are never changed in place (they are a catalog's).
_CANONICAL: dict[int, tuple[object, str]] = {}
_CANONICAL_LOCK = threading.Lock()


def _validator(schema: Mapping[str, Any] | bool) -> Validator | _Unusable:
    known = _CANONICAL.get(id(schema))
    if known is not None and known[0] is schema:
        return _compiled(known[1])
    try:
        canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return _Unusable(f"it is not JSON ({type(exc).__name__})")
    with _CANONICAL_LOCK:
        if len(_CANONICAL) >= _CACHE_SIZE:
            _CANONICAL.clear()
        _CANONICAL[id(schema)] = (schema, canonical)
    return _compiled(canonical)


def _is_small(value: Any, budget: int = CHECK_INLINE_NODES) -> bool:
    """Whether ``value`` has at most ``budget`` nodes (a string counts one per 64 characters);
    stops walking as soon as it has seen more."""
    stack = [value]
    while stack:
        item = stack.pop()
        budget -= 1
        if isinstance(item, str):
            budget -= len(item) >> 6
        elif isinstance(item, dict):
            stack.extend(item.values())
            budget -= len(item)  # the keys
        elif isinstance(item, list | tuple):
            stack.extend(item)
        if budget < 0:
            return False
    return True


def check_tool_result(
    tool: str,
    output_schema: Mapping[str, Any] | None,
    result: types.CallToolResult,
    *,
    connector: str | None = None,
) -> None:
    """Fail a successful result whose ``structuredContent`` is missing or breaks ``output_schema``.

    Args:
        tool: the tool's name on its server (named in the message).
        output_schema: the tool's listed ``outputSchema`` (``ToolSummary.output_schema``); ``None``
            means the tool declares none and nothing is checked.
        result: the server's ``CallToolResult``. ``is_error`` results return at once, unchecked.
        connector: the connector's name, prefixed to the message (``"<connector>: "``) and put in
            ``details``.

    Raises:
        ToolCallError: reason ``tool_error``, ``details`` =
            ``{"connector", "tool", "problem", ...}`` where ``problem`` is

            * ``"structured_content_missing"``: the result has no ``structuredContent`` at all;
            * ``"output_schema_mismatch"``: it does not validate; also ``"jsonPath"`` (``$`` for
              the root, e.g. ``$.count``), ``"schemaPath"`` (JSON pointer into the schema, e.g.
              ``/properties/count/type``) and ``"keyword"`` (``type``, ``required``, ...);
            * ``"output_schema_invalid"``: the ``outputSchema`` is not a valid JSON Schema, or a
              ``$ref`` in it does not resolve inside it; no result can be checked;
            * ``"structured_content_too_deep"``: the content nests too deeply to validate.

    Why: ``isError`` is a tool error whatever its structuredContent; a
    successful result that violates the outputSchema fails with a clear message.
    """
    if result.is_error or output_schema is None:
        return
    validator = _validator(output_schema)
    content = result.structured_content
    if content is not None and not isinstance(validator, _Unusable):
        # The common case first, with nothing built for a failure: a valid result.
        try:
            if validator.is_valid(content):
                return
        except (Unresolvable, RecursionError):
            pass  # reported below, as the full check finds it
    prefix = f"{connector}: " if connector else ""
    base: dict[str, Any] = {"connector": connector, "tool": tool}

    def fail(problem: str, message: str, **extra: Any) -> ToolCallError:
        return ToolCallError(FailureReason.TOOL_ERROR, prefix + message, details={**base, "problem": problem, **extra})

    if result.structured_content is None and "structured_content" not in result.model_fields_set:
        raise fail(
            "structured_content_missing",
            f"{tool!r} declares an outputSchema but its successful result has no structuredContent",
        )
    if isinstance(validator, _Unusable):
        raise fail(
            "output_schema_invalid",
            f"{tool!r} has an outputSchema that is not a valid JSON Schema ({validator.reason}); "
            "its results cannot be checked",
        )
    try:
        error: SchemaValidationError | None = best_match(validator.iter_errors(result.structured_content))
    except Unresolvable as exc:
        raise fail(
            "output_schema_invalid",
            f"{tool!r} has an outputSchema with a $ref that does not resolve inside it ({_short(str(exc))})",
        ) from None
    except RecursionError:
        raise fail(
            "structured_content_too_deep",
            f"{tool!r} returned structuredContent that nests too deeply to check against its outputSchema",
            jsonPath="$",
        ) from None
    if error is None:
        return
    path = _short(error.json_path)
    schema_path = "".join(f"/{part}" for part in error.schema_path)
    raise fail(
        "output_schema_mismatch",
        f"{tool!r} returned structuredContent that does not match its outputSchema at {path}: {_short(error.message)}",
        jsonPath=path,
        schemaPath=_short(schema_path),
        keyword=str(error.validator),
    )


async def check_tool_result_async(
    tool: str,
    output_schema: Mapping[str, Any] | None,
    result: types.CallToolResult,
    *,
    connector: str | None = None,
) -> None:
    """:func:`check_tool_result` for the event loop: inline when the ``structuredContent`` is small
    (at most :data:`CHECK_INLINE_NODES` values), else in a worker thread. Arguments, rules and
    errors as :func:`check_tool_result`."""
    if result.is_error or output_schema is None:
        return
    if _is_small(result.structured_content):
        check_tool_result(tool, output_schema, result, connector=connector)
        return
    await anyio.to_thread.run_sync(
        functools.partial(check_tool_result, tool, output_schema, result, connector=connector)
    )


def turn_off_sdk_output_validation(session: ClientSession) -> None:
    """Make the SDK session skip its own outputSchema check, so :func:`check_tool_result` decides.

    mcp 2.3.0 checks every non-``isError`` ``CallToolResult`` in ``ClientSession.call_tool`` (and in
    ``Client.call_tool`` for extension-claimed results) by calling the session's public
    ``validate_tool_result(name, result)``; there is no constructor or per-call switch. That check
    raises ``RuntimeError`` (the offending value in its text, no JSON path), uses the session's
    own schema cache rather than Patchbay's bounded catalog, and sends an unpaginated,
    unbudgeted ``tools/list`` when the tool is not cached. Replacing the method on this one
    session instance turns it off for every call on the session; ``isError`` results were never
    checked by it.

    Args:
        session: ``client.session`` of an entered ``mcp.Client``.
    """

    async def skip(name: str, result: types.CallToolResult) -> None:
        return None

    session.validate_tool_result = skip  # type: ignore[method-assign]
