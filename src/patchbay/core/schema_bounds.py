"""Size bounds on a tool's JSON Schemas: nesting depth, JSON value count, compact-JSON bytes.

A server's tool schemas are untrusted input that Patchbay hands on (to a model API, to a JSON
Schema validator). A tool whose ``inputSchema`` + ``outputSchema`` exceed a bound is left out of
the catalog (the bounds are ``Settings.schema_max_depth``,
``schema_max_nodes`` and ``schema_max_bytes``).

Measures, over both schemas of one tool together:

* **depth**: containers (objects, arrays) on the deepest path; a scalar is 0, ``{}`` is 1,
  ``{"type": "object", "properties": {"a": {"type": "string"}}}`` is 3. The larger of the two.
* **nodes**: JSON values, containers and scalars alike (object keys are not values);
  ``{"type": "object"}`` is 2. The sum of the two.
* **bytes**: UTF-8 bytes of the compact JSON text (``separators=(",", ":")``, no ASCII
  escaping), exactly what ``json.dumps(schema, separators=(",", ":"), ensure_ascii=False)``
  yields. The sum of the two.

The walk is iterative (an explicit stack), so hostile nesting cannot exhaust the interpreter's
recursion limit, and it stops as soon as the node or byte bound is passed, so its cost is bounded
by the limits and not by the input (a cyclic in-process structure also stops there). A stopped
walk reports lower bounds (``complete=False``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from patchbay.core.settings import Settings

__all__ = [
    "DEFAULT_SCHEMA_BOUNDS",
    "BoundExceeded",
    "SchemaBounds",
    "SchemaSize",
    "exceeded_bounds",
    "measure_schemas",
]

Bound = Literal["depth", "nodes", "bytes"]


@dataclass(frozen=True)
class SchemaBounds:
    """The three limits on one tool's schemas.

    Args:
        max_depth: deepest container nesting allowed (``Settings.schema_max_depth``, 32).
        max_nodes: most JSON values allowed, both schemas together (``schema_max_nodes``, 10,000).
        max_bytes: most compact-JSON UTF-8 bytes, both schemas together (``schema_max_bytes``,
            256 KiB).
    """

    max_depth: int = 32
    max_nodes: int = 10_000
    max_bytes: int = 256 * 1024

    @classmethod
    def from_settings(cls, settings: Settings) -> SchemaBounds:
        """The bounds named by a :class:`patchbay.core.settings.Settings` (``schema_max_*``)."""
        return cls(settings.schema_max_depth, settings.schema_max_nodes, settings.schema_max_bytes)

    def limit(self, bound: Bound) -> int:
        return {"depth": self.max_depth, "nodes": self.max_nodes, "bytes": self.max_bytes}[bound]


DEFAULT_SCHEMA_BOUNDS = SchemaBounds()
"""The Settings defaults: depth 32, 10,000 nodes, 256 KiB."""


@dataclass(frozen=True)
class SchemaSize:
    """What :func:`measure_schemas` found.

    ``complete`` is False when the walk stopped early at a node or byte limit: the three numbers
    are then lower bounds (each already past its limit or not, as measured so far).
    """

    depth: int
    nodes: int
    bytes: int
    complete: bool = True


@dataclass(frozen=True)
class BoundExceeded:
    """One bound a tool's schemas break.

    Args:
        bound: ``"depth"``, ``"nodes"`` or ``"bytes"``.
        measured: the measured value (a lower bound when ``exact`` is False).
        limit: the limit it is over.
        exact: False when the walk stopped early, so the real value is at least ``measured``.
    """

    bound: Bound
    measured: int
    limit: int
    exact: bool = True

    def describe(self) -> str:
        """E.g. ``"depth 41 exceeds the limit of 32"`` or ``"nodes at least 10001 exceed ..."``."""
        amount = f"{self.measured}" if self.exact else f"at least {self.measured}"
        verb = "exceeds" if self.bound == "depth" else "exceed"
        return f"{self.bound} {amount} {verb} the limit of {self.limit}"


_SCALAR_BYTES = {True: 4, False: 5}  # "true", "false"
_END = object()


def _scalar_bytes(value: Any) -> int:
    """Compact-JSON UTF-8 bytes of one scalar, as ``json.dumps`` writes it."""
    if value is None:
        return 4
    if value is True or value is False:
        return _SCALAR_BYTES[value]
    if isinstance(value, str):
        return len(encode_basestring(value).encode("utf-8", "surrogatepass"))
    if isinstance(value, int):
        try:
            return len(int.__repr__(value))
        except ValueError:  # past the interpreter's int-to-text digit limit: estimate the digits
            return int(abs(value).bit_length() * math.log10(2)) + 1 + (value < 0)
    if isinstance(value, float):
        if math.isnan(value):
            return 3  # NaN
        if math.isinf(value):
            return 8 if value > 0 else 9  # Infinity / -Infinity
        return len(float.__repr__(value))
    # Not JSON (only possible for in-process callers): count its text form.
    return len(str(value).encode("utf-8", "surrogatepass"))


def _key_bytes(key: Any) -> int:
    # json.dumps turns non-string keys into strings; a key costs its quoted form plus ":".
    text = key if isinstance(key, str) else str(key)
    return len(encode_basestring(text).encode("utf-8", "surrogatepass")) + 1


def measure_schemas(
    schemas: Iterable[Any], *, stop_after_nodes: int | None = None, stop_after_bytes: int | None = None
) -> SchemaSize:
    """Measure one tool's schemas (see the module docstring for the three measures).

    Args:
        schemas: the tool's schemas, e.g. ``(input_schema, output_schema)``; ``None`` entries (no
            output schema) are skipped.
        stop_after_nodes: stop walking once more than this many nodes were counted.
        stop_after_bytes: stop walking once more than this many bytes were counted.

    Returns:
        A :class:`SchemaSize`; ``complete=False`` when a ``stop_after_*`` limit ended the walk.
    """
    depth = nodes = size = 0
    node_cap = math.inf if stop_after_nodes is None else stop_after_nodes
    byte_cap = math.inf if stop_after_bytes is None else stop_after_bytes
    for schema in schemas:
        if schema is None:
            continue
        # One frame per open container: [iterator over its members, its depth, is_object, members seen].
        # Members are visited lazily, one per step, so a huge array costs nothing before the caps.
        stack: list[list[Any]] = []
        pending: tuple[Any, int] | None = (schema, 0)  # (value, depth of the container holding it)
        while pending is not None or stack:
            if pending is None:
                frame = stack[-1]
                member: Any = next(frame[0], _END)
                if member is _END:
                    stack.pop()
                    continue
                if frame[3]:
                    size += 1  # ","
                frame[3] += 1
                if frame[2]:
                    key, member = member
                    size += _key_bytes(key)
                pending = (member, frame[1])
            value, level = pending
            pending = None
            nodes += 1
            if isinstance(value, Mapping):
                depth = max(depth, level + 1)
                size += 2  # "{}"
                stack.append([iter(value.items()), level + 1, True, 0])
            elif isinstance(value, list | tuple):
                depth = max(depth, level + 1)
                size += 2  # "[]"
                stack.append([iter(value), level + 1, False, 0])
            else:
                size += _scalar_bytes(value)
            if nodes > node_cap or size > byte_cap:
                return SchemaSize(depth, nodes, size, complete=False)
    return SchemaSize(depth, nodes, size)


def exceeded_bounds(
    input_schema: Any, output_schema: Any = None, bounds: SchemaBounds = DEFAULT_SCHEMA_BOUNDS
) -> list[BoundExceeded]:
    """The bounds one tool's ``inputSchema`` + ``outputSchema`` break, in the order depth, nodes, bytes.

    An empty list means the tool is within bounds. The walk stops once the node or byte limit is
    passed, so the cost is bounded by ``bounds`` whatever the schemas' size.

    Args:
        input_schema: the tool's ``inputSchema`` (a JSON object as parsed by the SDK).
        output_schema: the tool's ``outputSchema`` or ``None``.
        bounds: the limits (default: the Settings defaults; use :meth:`SchemaBounds.from_settings`).

    Why: schemas bounded by depth, node count and bytes, as settings.
    """
    measured = measure_schemas(
        (input_schema, output_schema), stop_after_nodes=bounds.max_nodes, stop_after_bytes=bounds.max_bytes
    )
    values: dict[Bound, int] = {"depth": measured.depth, "nodes": measured.nodes, "bytes": measured.bytes}
    return [
        BoundExceeded(bound, value, bounds.limit(bound), exact=measured.complete)
        for bound, value in values.items()
        if value > bounds.limit(bound)
    ]
