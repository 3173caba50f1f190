"""MCP prompts: listing, local argument checks, ``/prompt`` parsing and expansion.

:func:`list_prompts` lists what a user may trigger (``/prompt NAME key=value``);
:func:`expand_prompt` checks the arguments against the server's declaration before anything is
sent (``validation_error``), refuses a denied prompt (``permission_denied``), logs
``mcp.prompt.invoked`` and ``mcp.prompt.expanded``, and returns the messages as *user* messages
with ``source: {mcp: {server, prompt}}``. A failed ``prompts/get`` raises its ``ToolCallError``.

Design: docs/context.md (the event chain, roles and how prompts are governed)
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from patchbay.core.errors import FailureReason, NotFoundError, ToolCallError, ValidationError
from patchbay.core.policy import Decision, decide_prompt
from patchbay.runtime.context.peer import ConnectorPeer, list_all
from patchbay.runtime.events.log import encode_json

__all__ = [
    "ExpandedMessage",
    "ExpandedPrompt",
    "PromptArgumentInfo",
    "PromptInfo",
    "check_prompt_arguments",
    "expand_prompt",
    "list_prompts",
    "parse_prompt_arguments",
    "parse_prompt_command",
]

PROMPT_COMMAND = "/prompt"
MAX_PROMPT_NAME_CHARS = 512
MAX_ARGUMENT_BYTES = 1024 * 1024
"""Most UTF-8 bytes of all argument names and values of one expansion together."""


@dataclass(frozen=True, slots=True)
class PromptArgumentInfo:
    """One argument a prompt declares.

    Attributes:
        name: the argument's name.
        required: whether it must be given (and non-empty).
        title / description: as declared, if any.
    """

    name: str
    required: bool = False
    title: str | None = None
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "required": self.required, "title": self.title, "description": self.description}


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """One prompt as the server lists it (untrusted metadata).

    Attributes:
        name: what :func:`expand_prompt` takes.
        title / description: as listed.
        arguments: the declared arguments, in server order.
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgumentInfo, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": [argument.to_dict() for argument in self.arguments],
        }


@dataclass(frozen=True, slots=True)
class ExpandedMessage:
    """One message of an expansion, as a user message.

    Attributes:
        content: the content block in wire form (``{"type": "text", "text": ...}``, ``image``,
            ``audio``, ``resource``, ``resource_link``).
        server_role: the role the server gave it (``user`` or ``assistant``); for audit only.
        source: ``{"mcp": {"server", "prompt"}}``.
        role: always ``"user"``.
    """

    content: dict[str, Any]
    server_role: str
    source: dict[str, Any]
    role: str = "user"

    @property
    def text(self) -> str:
        """The text of a text block (or of an embedded text resource); ``""`` otherwise."""
        if self.content.get("type") == "text":
            return str(self.content.get("text", ""))
        if self.content.get("type") == "resource":
            return str((self.content.get("resource") or {}).get("text", ""))
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "serverRole": self.server_role, "source": self.source, "content": self.content}


@dataclass(frozen=True, slots=True)
class ExpandedPrompt:
    """The result of ``prompts/get``, as user messages.

    Attributes:
        server: the connector.
        prompt: the prompt's name.
        prompt_call_id: ``pc_<seq>``, naming the expansion's events.
        arguments: the arguments sent.
        description: the server's description of the expansion, if any.
        messages: the messages, all ``role == "user"``.
    """

    server: str
    prompt: str
    prompt_call_id: str
    arguments: dict[str, str]
    description: str | None
    messages: tuple[ExpandedMessage, ...]

    @property
    def source(self) -> dict[str, Any]:
        """``{"mcp": {"server", "prompt"}}``."""
        return {"mcp": {"server": self.server, "prompt": self.prompt}}

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "prompt": self.prompt,
            "promptCallId": self.prompt_call_id,
            "arguments": self.arguments,
            "description": self.description,
            "messages": [message.to_dict() for message in self.messages],
        }


# -- parsing and checking --------------------------------------------------------------------


def parse_prompt_arguments(tokens: Iterable[str]) -> dict[str, str]:
    """``key=value`` tokens (already split, e.g. by a shell) → ``{key: value}``.

    The value is everything after the first ``=`` (it may be empty, contain spaces or ``=``).

    Raises:
        ValidationError: ``validation_error`` (field ``arguments``): a token without ``=``, an
            empty key, or a key given twice.
    """
    arguments: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep:
            raise ValidationError(
                f'expected key=value, got {token[:100]!r} (quote values with spaces: key="two words")',
                details={"field": "arguments"},
            )
        if not key or key != key.strip():
            raise ValidationError(
                f"{token[:100]!r}: the argument name is empty or has spaces", details={"field": "arguments"}
            )
        if key in arguments:
            raise ValidationError(
                f"argument '{key[:100]}' is given twice", details={"field": "arguments", "argument": key[:100]}
            )
        arguments[key] = value
    return arguments


def parse_prompt_command(text: str) -> tuple[str, dict[str, str]]:
    """Parse a host's ``/prompt NAME key=value key2="two words"`` line.

    Words are split like a POSIX shell (:mod:`shlex`): quotes group words and are removed,
    backslashes escape, ``#`` is an ordinary character. The first word after ``/prompt`` is the
    prompt name; each following word is ``key=value`` (see :func:`parse_prompt_arguments`).

    Returns:
        ``(name, arguments)``, e.g. ``("bugfix_review", {"pr": "456", "note": "two words"})``.

    Raises:
        ValidationError: ``validation_error``: not a ``/prompt`` line (field ``command``), an
            unterminated quote or trailing backslash (field ``command``), no prompt name, a name
            that looks like ``key=value`` (field ``prompt``), or a bad ``key=value`` word (field
            ``arguments``).
    """
    if not isinstance(text, str):
        raise ValidationError("a /prompt command must be text", details={"field": "command"})
    stripped = text.strip()
    head = stripped.split(None, 1)[0] if stripped else ""
    rest = stripped[len(head) :]
    if head != PROMPT_COMMAND:
        raise ValidationError(
            f"not a {PROMPT_COMMAND} command: it must start with '{PROMPT_COMMAND} NAME'", details={"field": "command"}
        )
    try:
        words = shlex.split(rest, comments=False, posix=True)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise ValidationError(f"{PROMPT_COMMAND}: {str(exc).lower()}", details={"field": "command"}) from None
    if not words:
        raise ValidationError(
            f"{PROMPT_COMMAND}: the prompt name is missing ({PROMPT_COMMAND} NAME key=value ...)",
            details={"field": "prompt"},
        )
    name, tokens = words[0], words[1:]
    if "=" in name:
        raise ValidationError(
            f"{PROMPT_COMMAND}: the prompt name comes first, before key=value arguments (got {name[:100]!r})",
            details={"field": "prompt"},
        )
    return name, parse_prompt_arguments(tokens)


def check_prompt_arguments(prompt: PromptInfo, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """Check arguments against the prompt's declaration, before anything is sent.

    Rules: every name must be declared; every value must be a string; a required argument must
    be present and not empty (nor only whitespace); an empty optional argument is left out, as if
    not given. Values are otherwise kept exactly (spaces included).

    Returns:
        The arguments to send.

    Raises:
        ValidationError: ``validation_error`` (field ``arguments``, ``details["argument"]``):
            an unknown argument (``prompt 'p' has no argument 'x' (it takes: a, b)``), a missing
            or empty required one (``argument '<name>' is required``), a value that is not a
            string, or more than :data:`MAX_ARGUMENT_BYTES` in total.
    """
    given = {} if arguments is None else arguments
    if not isinstance(given, Mapping):
        raise ValidationError("prompt arguments must be an object of strings", details={"field": "arguments"})
    declared = {argument.name: argument for argument in prompt.arguments}
    total = 0
    for key, value in given.items():
        if not isinstance(key, str) or key not in declared:
            shown = str(key)[:100]
            raise ValidationError(
                f"prompt {prompt.name[:100]!r} has no argument {shown!r} (it takes: {', '.join(declared) or 'none'})",
                details={"field": "arguments", "argument": shown},
            )
        if not isinstance(value, str):
            raise ValidationError(f"argument '{key}' must be a string", details={"field": "arguments", "argument": key})
        try:
            total += len(key.encode("utf-8")) + len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValidationError(
                f"argument '{key}' must be valid UTF-8", details={"field": "arguments", "argument": key}
            ) from None
    if total > MAX_ARGUMENT_BYTES:
        raise ValidationError(f"prompt arguments exceed {MAX_ARGUMENT_BYTES} bytes", details={"field": "arguments"})
    for argument in prompt.arguments:
        if argument.required and not str(given.get(argument.name, "")).strip():
            raise ValidationError(
                f"argument '{argument.name}' is required", details={"field": "arguments", "argument": argument.name}
            )
    return {key: value for key, value in given.items() if value.strip() or declared[key].required}


# -- listing and expansion -------------------------------------------------------------------


def _prompts_offered(capabilities: types.ServerCapabilities) -> bool:
    return capabilities.prompts is not None


def _prompt_decision(peer: ConnectorPeer, prompt: str) -> Decision:
    server = peer.server
    return decide_prompt(
        server.settings, prompt, global_grants=server.global_prompt_grants, project_grants=server.project_prompt_grants
    )


async def list_prompts(peer: ConnectorPeer) -> list[PromptInfo]:
    """Every prompt the connector lists (``prompts/list``, all pages) that no prompt grant denies;
    a server without the prompts capability lists none.

    Raises:
        CatalogError: ``tool_list_failed`` past the page or metadata bound.
        ToolCallError: ``mcp_server_unavailable``, ``timeout``, ``tool_error``, ...
    """

    async def fetch(client: Client, cursor: str | None) -> types.ListPromptsResult:
        return await client.list_prompts(cursor=cursor, cache_mode="bypass")

    listed = await list_all(peer, "prompts/list", fetch, lambda page: page.prompts, _prompts_offered)
    return [
        PromptInfo(
            p.name,
            p.title,
            p.description,
            tuple(PromptArgumentInfo(a.name, bool(a.required), a.title, a.description) for a in p.arguments or ()),
        )
        for p in listed
        if _prompt_decision(peer, p.name).decision == "allow"
    ]


def _summary(message: ExpandedMessage, preview_chars: int) -> dict[str, Any]:
    """What ``mcp.prompt.expanded`` records of one message: never a large blob."""
    block = message.content
    kind = block.get("type")
    content: dict[str, Any] = {"type": kind}
    if kind == "text":
        content["text"] = str(block.get("text", ""))[:preview_chars]
    elif kind == "resource":
        resource = block.get("resource") or {}
        content["uri"] = resource.get("uri")
        if "text" in resource:
            content["text"] = str(resource.get("text", ""))[:preview_chars]
    elif kind == "resource_link":
        content["uri"] = block.get("uri")
    if block.get("mimeType"):
        content["mimeType"] = block["mimeType"]
    return {
        "role": message.role,
        "serverRole": message.server_role,
        "source": message.source,
        "content": content,
        "size": len(encode_json(block).encode("utf-8")),
    }


async def expand_prompt(peer: ConnectorPeer, prompt: str, arguments: Mapping[str, Any] | None = None) -> ExpandedPrompt:
    """Expand a prompt: list the connector's prompts, check the arguments against the
    declaration (:func:`check_prompt_arguments`), then send ``prompts/get``.

    Args:
        peer: the connector.
        prompt: the prompt's name as listed.
        arguments: argument name → string value.

    Returns:
        The :class:`ExpandedPrompt`; its messages are user messages with their source.

    Raises:
        ValidationError: ``validation_error`` for a bad name or arguments (nothing sent but the
            listing, nothing logged).
        NotFoundError: ``not_found`` when the connector lists no such prompt.
        ToolCallError: ``permission_denied`` when a prompt grant denies it (nothing is sent, not
            even the listing).
        CatalogError: ``tool_list_failed`` (the listing).
        ToolCallError: ``mcp_server_unavailable``, ``timeout``, ``tool_error`` (a JSON-RPC error,
            ``details["mcpCode"]``), ...; ``details["promptCallId"]`` once invoked.
    """
    if not isinstance(prompt, str) or not prompt or len(prompt) > MAX_PROMPT_NAME_CHARS or not prompt.isprintable():
        raise ValidationError(
            f"a prompt name must be 1-{MAX_PROMPT_NAME_CHARS} printable characters", details={"field": "prompt"}
        )
    decision = _prompt_decision(peer, prompt)
    if decision.decision != "allow":
        raise ToolCallError(
            FailureReason.PERMISSION_DENIED,
            f"prompt {prompt[:100]!r} of {peer.name!r} is denied by a prompt grant ({decision.source})",
            details={"connector": peer.name, "prompt": prompt[:100], "sourcedFrom": decision.source},
        )
    declared = next((p for p in await list_prompts(peer) if p.name == prompt), None)
    if declared is None:
        raise NotFoundError(
            f"connector {peer.name!r} has no prompt {prompt[:100]!r}",
            details={"connector": peer.name, "prompt": prompt[:100]},
        )
    sent = check_prompt_arguments(declared, arguments)
    log, name = peer.log, peer.name
    call_id = f"pc_{log.append('mcp.prompt.invoked', {'server': name, 'prompt': prompt, 'arguments': sent})}"
    started = time.perf_counter()

    def failed(reason: str, message: str) -> None:
        log.append(
            "mcp.call.failed",
            {
                "server": name,
                "promptCallId": call_id,
                "method": "prompts/get",
                "durationMs": round((time.perf_counter() - started) * 1000, 3),
                "reason": reason,
                "error": message[: peer.settings.result_preview_chars],
            },
        )

    async def get(client: Client) -> types.GetPromptResult:
        return await client.get_prompt(prompt, sent)

    try:
        result = await peer.request("prompts/get", get)
    except ToolCallError as exc:
        failed(str(exc.reason), exc.message)
        if "promptCallId" in exc.details:
            raise
        raise exc.with_details(promptCallId=call_id) from exc
    except anyio.get_cancelled_exc_class():
        failed(str(FailureReason.CANCELLED), "the expansion was cancelled")
        raise
    source = {"mcp": {"server": name, "prompt": prompt}}
    messages = tuple(
        ExpandedMessage(m.content.model_dump(mode="json", by_alias=True, exclude_none=True), m.role, source)
        for m in result.messages
    )
    preview = peer.settings.result_preview_chars
    log.append(
        "mcp.prompt.expanded",
        {
            "server": name,
            "prompt": prompt,
            "promptCallId": call_id,
            "messages": [_summary(message, preview) for message in messages],
        },
    )
    return ExpandedPrompt(name, prompt, call_id, sent, result.description, messages)
