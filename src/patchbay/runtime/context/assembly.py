"""What a host hands its model: transcript, tool results, included resources, within a budget.

A :class:`Session` keeps, for one :class:`~patchbay.runtime.Runtime`, the items a model may see
(transcript messages, tool results of governed calls, explicitly included resources, expanded
prompt messages), screens every MCP item for injection (:mod:`patchbay.runtime.screening`) as it
enters, and :meth:`Session.build_context` fits them into a token budget and records
``context.built``. Tokens are counted by :func:`estimate_tokens`, an estimate that errs high.

Design: docs/context.md (buckets, labels and why no tokenizer)
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from patchbay.core.errors import ValidationError
from patchbay.runtime.calls.result import ToolCallResult
from patchbay.runtime.screening import CONTENT_SCREENED, apply_policy, screen, screened_event_payload

__all__ = ["BuiltContext", "ContextBuilder", "ContextItem", "Session", "estimate_tokens"]

Role = Literal["user", "assistant", "tool"]
Kind = Literal["message", "tool_result", "resource", "prompt"]


def estimate_tokens(text: str) -> int:
    """A conservative token count for ``text``.

    Rule: one token per 3 characters of Latin-script text (English BPE vocabularies average about
    4), one token per CJK, kana or hangul character (they are usually 1-2 tokens each, rarely
    less), one per other non-ASCII character's 2 UTF-8 bytes, plus one per line break; at least 1
    for non-empty text. Overestimates most texts by 10-40 %, which keeps a budget safe.
    """
    if not text:
        return 0
    latin = wide = other = 0
    for char in text:
        if char.isascii():
            latin += 1
        elif unicodedata.east_asian_width(char) in ("W", "F"):
            wide += 1
        else:
            other += 1
    return max(1, math.ceil(latin / 3) + wide + math.ceil(other / 2) + text.count("\n"))


@dataclass(frozen=True)
class ContextItem:
    """One thing a model may see.

    Attributes:
        role: ``user``, ``assistant`` or ``tool`` (tool results).
        kind: ``message``, ``tool_result``, ``resource`` or ``prompt``.
        text: the text as the model sees it (prefixed; labelled or withheld when flagged).
        source: ``{"mcp": {"server", "tool" | "uri" | "prompt"}}`` for MCP items, else None.
        untrusted: the injection screening flagged it.
        tokens: :func:`estimate_tokens` of ``text`` (or the builder's counter).
    """

    role: Role
    kind: Kind
    text: str
    source: dict[str, Any] | None = None
    untrusted: bool = False
    tokens: int = 0

    def message(self) -> dict[str, Any]:
        """``{"role", "content"}`` plus ``source`` for MCP items (hosts keep it for audit)."""
        out: dict[str, Any] = {"role": self.role, "content": self.text}
        if self.source is not None:
            out["source"] = self.source
        return out


@dataclass(frozen=True)
class BuiltContext:
    """The result of :meth:`ContextBuilder.build`.

    Attributes:
        messages: what to hand the model, in transcript order (:meth:`ContextItem.message`).
        tokens: estimated tokens of ``messages``.
        resource_tokens: the part of ``tokens`` spent on resources.
        sources: ``{"transcript": n, "toolResults": [names], "mcpResources": [uris],
            "prompts": [names]}`` -- what made it in.
        dropped: items left out for the budget: ``{"kind", "tokens", "source"}`` each.
    """

    messages: list[dict[str, Any]]
    tokens: int
    resource_tokens: int
    sources: dict[str, Any]
    dropped: list[dict[str, Any]] = field(default_factory=list)


class ContextBuilder:
    """Fit items into a token budget (resources have their own bucket).

    Args:
        budget_tokens: the whole context's budget (resources included).
        resource_budget_tokens: the most tokens resources may take (their bucket); the rest of the
            budget is for transcript, tool results and prompt messages.
        count: token counter; default :func:`estimate_tokens`.

    Within each bucket the newest items win; the latest user message is always kept (a context
    without the question is useless), even if it alone exceeds the budget.

    Raises:
        ValidationError: ``validation_error`` for a negative budget or a resource bucket larger
            than the budget.
    """

    def __init__(
        self, *, budget_tokens: int, resource_budget_tokens: int, count: Callable[[str], int] = estimate_tokens
    ):
        if budget_tokens < 0 or resource_budget_tokens < 0 or resource_budget_tokens > budget_tokens:
            raise ValidationError(
                "budgets must be >= 0 and the resource bucket no larger than the whole budget",
                details={"budget_tokens": budget_tokens, "resource_budget_tokens": resource_budget_tokens},
            )
        self.budget_tokens = budget_tokens
        self.resource_budget_tokens = resource_budget_tokens
        self._count = count

    def build(self, items: list[ContextItem]) -> BuiltContext:
        """Choose which ``items`` fit; see the class docstring for the rules."""
        costs = [item.tokens or self._count(item.text) for item in items]
        keep = [False] * len(items)
        last_user = max(
            (i for i, item in enumerate(items) if item.role == "user" and item.kind == "message"), default=None
        )
        general_left = self.budget_tokens - self.resource_budget_tokens
        resource_left = self.resource_budget_tokens
        if last_user is not None:
            keep[last_user] = True
            general_left -= costs[last_user]
        for index in range(len(items) - 1, -1, -1):
            if keep[index]:
                continue
            if items[index].kind == "resource":
                if costs[index] <= resource_left:
                    keep[index], resource_left = True, resource_left - costs[index]
            elif costs[index] <= general_left:
                keep[index], general_left = True, general_left - costs[index]
        sources: dict[str, Any] = {"transcript": 0, "toolResults": [], "mcpResources": [], "prompts": []}
        messages, dropped = [], []
        tokens = resource_tokens = 0
        for item, cost, kept in zip(items, costs, keep, strict=True):
            if not kept:
                dropped.append({"kind": item.kind, "tokens": cost, "source": item.source})
                continue
            messages.append(item.message())
            tokens += cost
            mcp = (item.source or {}).get("mcp", {})
            if item.kind == "resource":
                resource_tokens += cost
                sources["mcpResources"].append(mcp.get("uri"))
            elif item.kind == "tool_result":
                sources["toolResults"].append(mcp.get("tool") and f"mcp.{mcp.get('server')}.{mcp.get('tool')}")
            elif item.kind == "prompt":
                sources["prompts"].append(mcp.get("prompt"))
            else:
                sources["transcript"] += 1
        return BuiltContext(messages, tokens, resource_tokens, sources, dropped)


class Session:
    """A host's conversation over one :class:`~patchbay.runtime.Runtime` (entered by the caller).

    Usage::

        async with Runtime(config, settings=settings, approver=ask) as runtime:
            session = Session(runtime)
            session.add_message("user", "what changed in the repo?")
            await session.call_tool("mcp.git.git_status", {"repo_path": "."})
            context = await session.build_context()       # context.messages → the model

    Args:
        runtime: an entered runtime; its event log records the session's events.
        budget_tokens: the whole context budget (default 100 000).
        resource_budget_tokens: the resources' bucket (default a quarter of the budget).
    """

    def __init__(self, runtime: Any, *, budget_tokens: int = 100_000, resource_budget_tokens: int | None = None):
        self.runtime = runtime
        self.builder = ContextBuilder(
            budget_tokens=budget_tokens,
            resource_budget_tokens=budget_tokens // 4 if resource_budget_tokens is None else resource_budget_tokens,
        )
        self.items: list[ContextItem] = []

    # -- adding -----------------------------------------------------------------------------

    def add_message(self, role: Literal["user", "assistant"], text: str) -> ContextItem:
        """A transcript message; a user message is recorded as ``user.message``.

        Raises:
            ValidationError: ``validation_error`` for another role.
        """
        if role not in ("user", "assistant"):
            raise ValidationError("a transcript message is from the user or the assistant", details={"role": role})
        if role == "user":
            self.runtime.record_event("user.message", {"content": text})
        item = ContextItem(role, "message", text, tokens=self.builder._count(text))
        self.items.append(item)
        return item

    def add_mcp_item(self, kind: Kind, text: str, *, server: str, name: str, key: str) -> ContextItem:
        """Screen an MCP item and add it: ``[mcp:<server>:<name>]`` prefix, ``source.mcp[key] = name``.

        Args:
            kind: ``tool_result`` (role ``tool``), ``resource`` or ``prompt`` (role ``user``).
            key: ``tool``, ``uri`` or ``prompt``.
        """
        settings = self.runtime.settings
        result = screen(text, source=f"mcp:{server}:{name}", max_bytes=settings.screening_max_bytes)
        if result.untrusted:
            self.runtime.record_event(CONTENT_SCREENED, screened_event_payload(result, settings.screening_policy))
        body = apply_policy(text, result, settings.screening_policy)
        prefixed = f"[mcp:{server}:{name}]\n{body}"
        role: Role = "tool" if kind == "tool_result" else "user"
        item = ContextItem(
            role,
            kind,
            prefixed,
            source={"mcp": {"server": server, key: name}},
            untrusted=result.untrusted,
            tokens=self.builder._count(prefixed),
        )
        self.items.append(item)
        return item

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """Call a tool through the runtime's governed path and add its result (MCP results screened).

        Raises:
            ToolCallError: as :meth:`Runtime.call`; nothing is added.
        """
        result: ToolCallResult = await self.runtime.call(name, arguments)
        prefix = result.untrusted_prefix
        if prefix:
            server, tool = prefix[len("[mcp:") : -1].split(":", 1)
            self.add_mcp_item("tool_result", result.text, server=server, name=tool, key="tool")
        else:
            text = result.text
            self.items.append(ContextItem("tool", "tool_result", text, tokens=self.builder._count(text)))
        return result

    async def include_resource(self, connector: str, uri: str) -> ContextItem:
        """Include one resource the user chose: read through the runtime's governed include
        (PermissionEngine, risk ``read``, ``sourcedFrom: user_explicit_include``;
        ``mcp.resource.requested``/``fetched``), screened, added to the resource bucket.

        Raises:
            ToolCallError: as :meth:`Runtime.include_resource` (denied, unknown server, read failed).
        """
        included = await self.runtime.include_resource(connector, uri)
        return self.add_mcp_item("resource", included.body, server=connector, name=included.uri, key="uri")

    async def expand_prompt(
        self, connector: str, prompt: str, arguments: Mapping[str, Any] | None = None
    ) -> list[ContextItem]:
        """Expand a server prompt into user messages, each screened and carrying ``source: {"mcp":
        {"server", "prompt"}}``; never a system message.

        Raises:
            ValidationError / ToolCallError: as :meth:`Runtime.expand_prompt` (arguments checked
                locally before anything is sent).
        """
        expanded = await self.runtime.expand_prompt(connector, prompt, arguments)
        return [
            self.add_mcp_item("prompt", message.text, server=connector, name=prompt, key="prompt")
            for message in expanded.messages
        ]

    # -- building ---------------------------------------------------------------------------

    async def build_context(self) -> BuiltContext:
        """Fit the session's items into the budget and record ``context.built``
        ``{sources, tools, tokens, resourceTokens, dropped}`` (``tools``: the canonical names of the
        tools the model may call; ``dropped``: kind, tokens and source of items left out)."""
        built = self.builder.build(self.items)
        tools = [tool.name for tool in await self.runtime.list_tools() if tool.decision != "deny"]
        self.runtime.record_event(
            "context.built",
            {
                "sources": built.sources,
                "tools": tools,
                "tokens": built.tokens,
                "resourceTokens": built.resource_tokens,
                "dropped": built.dropped,
            },
        )
        return built
