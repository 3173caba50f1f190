"""ToolRouter: which tool a name means (DESIGN.md "Names").

Two registries:

* local tools, by bare name (``read_file``); a local tool can never take an ``mcp.`` name (nor an
  ``mcp__`` wire-style name), so it can never shadow an MCP tool;
* MCP tools, by canonical name ``mcp.<connector>.<tool>``; two connectors exposing the same tool
  name both stay reachable (``mcp.fs.read_text`` ≠ ``mcp.fs-v2.read_text``).

Resolution is strict: a canonical name (or its wire name) → that connector's tool; a bare name that
is a local tool → the local tool, unless an MCP tool has the same original name, in which case the
call is refused as ambiguous (the runtime emits ``tool.ambiguous_call``); anything else is unknown.
There is no fuzzy matching.

Every registered tool also has a wire name (``mcp__<connector>__<tool>``, at most 64 characters of
``[A-Za-z0-9_-]``) for model APIs that forbid dots; the reverse table maps it back, never parsing.
A wire name reaches only the tool it spells exactly: a tool whose name is wire-safe owns
``mcp__<connector>__<name>``, a sanitised or shortened name always carries a hash suffix
(:func:`~patchbay.core.names.wire_tool_name`), and a connector's wire names are worked out from
its whole catalog, exact names first, so which tool gets which name never depends on the order
the server listed them in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from patchbay.core.errors import ErrorCode, FailureReason, PatchbayError, ToolCallError
from patchbay.core.names import MCP_PREFIX, canonical_tool_name, is_exact_wire_name, wire_tool_name

__all__ = ["Route", "ToolRouter"]

_LOCAL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class Route:
    """Where a resolved name leads.

    Attributes:
        kind: ``local`` or ``mcp``.
        name: the canonical name (``mcp.<connector>.<tool>``, or the local tool's bare name).
        tool: the server's original tool name (or the local name).
        connector: the connector name; None for a local tool.
    """

    kind: Literal["local", "mcp"]
    name: str
    tool: str
    connector: str | None = None


class ToolRouter:
    """Registry and strict resolver of local and MCP tool names.

    Usage::

        router = ToolRouter()
        router.add_local("read_file")
        router.set_connector_tools("fs", ["read_text", "list_dir"])
        router.resolve("mcp.fs.read_text")      # Route(kind="mcp", connector="fs", tool="read_text", ...)
        router.resolve(router.wire_name("mcp.fs.read_text"))   # the same route
    """

    def __init__(self) -> None:
        self._local: dict[str, Route] = {}
        self._mcp: dict[str, Route] = {}
        self._by_connector: dict[str, list[str]] = {}
        self._by_original: dict[str, set[str]] = {}
        self._wire: dict[str, str] = {}
        """canonical name → wire name."""
        self._unwire: dict[str, str] = {}
        """wire name → canonical name."""

    # -- registration -----------------------------------------------------------------------

    def add_local(self, name: str) -> Route:
        """Register a local tool under a bare name.

        Raises:
            PatchbayError: ``validation_error`` when ``name`` starts with ``mcp.`` or ``mcp__`` (any
                case), is not 1–64 characters of ``[A-Za-z0-9_-]``, or is already registered.
        """
        lowered = name.lower() if isinstance(name, str) else ""
        if lowered.startswith(MCP_PREFIX) or lowered.startswith("mcp__"):
            raise PatchbayError(
                f"local tool {name!r} may not take an MCP name (mcp.<connector>.<tool> is reserved)",
                code=ErrorCode.VALIDATION_ERROR,
                details={"tool": name},
            )
        if not isinstance(name, str) or not _LOCAL_NAME.fullmatch(name):
            raise PatchbayError(
                f"local tool name {name!r} must be 1-64 characters of [A-Za-z0-9_-]",
                code=ErrorCode.VALIDATION_ERROR,
                details={"tool": name},
            )
        if name in self._local:
            raise PatchbayError(
                f"local tool {name!r} is already registered", code=ErrorCode.VALIDATION_ERROR, details={"tool": name}
            )
        route = Route(kind="local", name=name, tool=name)
        self._local[name] = route
        return route

    def set_connector_tools(self, connector: str, tools: Iterable[str]) -> list[Route]:
        """Register (replacing any previous set) the tools ``connector`` exposes, by original name.

        A tool that stays registered keeps its wire name, unless a newly listed tool spells that
        wire name exactly: the exact match wins and the other tool is given a new suffixed name.
        """
        previous = self._by_connector.pop(connector, [])
        wanted = list(dict.fromkeys(tools))
        keep = {canonical_tool_name(connector, tool) for tool in wanted}
        for canonical in previous:
            if canonical not in keep:
                self._forget(canonical)
        routes = []
        for tool in wanted:
            canonical = canonical_tool_name(connector, tool)
            route = self._mcp.get(canonical)
            if route is None:
                route = Route(kind="mcp", name=canonical, tool=tool, connector=connector)
                self._mcp[canonical] = route
                self._by_original.setdefault(tool, set()).add(canonical)
            routes.append(route)
        self._by_connector[connector] = [route.name for route in routes]
        self._assign_wires(connector, wanted)
        return routes

    def remove_connector(self, connector: str) -> None:
        """Unregister every tool of ``connector`` (shutdown, permanent failure)."""
        for canonical in self._by_connector.pop(connector, []):
            self._forget(canonical)

    def _forget(self, canonical: str) -> None:
        route = self._mcp.pop(canonical)
        owners = self._by_original.get(route.tool)
        if owners is not None:
            owners.discard(canonical)
            if not owners:
                del self._by_original[route.tool]
        wire = self._wire.pop(canonical, None)
        if wire is not None:
            self._unwire.pop(wire, None)

    def _assign_wires(self, connector: str, tools: list[str]) -> None:
        """Give every tool of ``connector`` its wire name: exact names first, then the others in
        name order, each rehashed while its name is taken (by an exact name a server chose to
        equal it, or by another connector's shortened name)."""
        mine = {canonical_tool_name(connector, tool) for tool in tools}
        for canonical in mine:
            self._unwire.pop(self._wire.pop(canonical, ""), None)
        exact = [tool for tool in tools if is_exact_wire_name(connector, tool)]
        others = sorted(set(tools) - set(exact))
        for tool in exact:  # distinct tools have distinct exact wire names
            self._bind_wire(canonical_tool_name(connector, tool), wire_tool_name(connector, tool))
        for tool in others:
            attempt = 0
            wire = wire_tool_name(connector, tool)
            while wire in self._unwire:
                attempt += 1
                if attempt > 16:  # pragma: no cover - needs repeated SHA-256 prefix collisions
                    raise PatchbayError(f"wire name collision for {tool!r}", code=ErrorCode.VALIDATION_ERROR)
                wire = wire_tool_name(connector, tool, attempt=attempt)
            self._bind_wire(canonical_tool_name(connector, tool), wire)

    def _bind_wire(self, canonical: str, wire: str) -> None:
        self._wire[canonical] = wire
        self._unwire[wire] = canonical

    # -- lookup -----------------------------------------------------------------------------

    @property
    def local_names(self) -> list[str]:
        return list(self._local)

    def connector_routes(self, connector: str) -> list[Route]:
        """The registered tools of ``connector``, in catalog order."""
        return [self._mcp[name] for name in self._by_connector.get(connector, [])]

    def wire_name(self, name: str) -> str:
        """The wire name of a registered tool (a local tool's wire name is its own name).

        Raises:
            KeyError: ``name`` is not registered.
        """
        if name in self._local:
            return name
        return self._wire[name]

    def from_wire(self, wire: str) -> str:
        """The canonical name a wire name stands for.

        Raises:
            KeyError: no registered tool has that wire name.
        """
        if wire in self._local:
            return wire
        return self._unwire[wire]

    def resolve(self, name: str) -> Route:
        """Resolve a model/user supplied tool name strictly.

        Raises:
            ToolCallError: reason ``ambiguous_call`` for a bare name that is both a local tool and
                an MCP tool's original name (``details["candidates"]`` lists the canonical names);
                reason ``unknown_tool`` for anything not registered (including a bare name that
                only matches an MCP tool: MCP tools must be called by their full name).
        """
        route = self._mcp.get(name)
        if route is not None:
            return route
        canonical = self._unwire.get(name)
        if canonical is not None:
            return self._mcp[canonical]
        local = self._local.get(name)
        if local is not None:
            owners = self._by_original.get(name)
            if owners:
                candidates = sorted({name, *owners})
                raise ToolCallError(
                    FailureReason.AMBIGUOUS_CALL,
                    f"{name!r} is both a local tool and an MCP tool; call one of {candidates} by its full name",
                    details={"tool": name, "candidates": candidates},
                )
            return local
        hint = ""
        owners = self._by_original.get(name) or self._by_original.get(name.rpartition(".")[2])
        if owners:  # a bare or half-qualified MCP tool name: MCP tools need their full name
            hint = f"; MCP tools are called by their full name, e.g. {sorted(owners)[0]!r}"
        raise ToolCallError(FailureReason.UNKNOWN_TOOL, f"unknown tool {name!r}{hint}", details={"tool": name})
