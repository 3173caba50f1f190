"""A tool's input schema made acceptable to a model API. Pure; no I/O.

MCP servers publish ``inputSchema`` in whatever JSON Schema dialect their SDK emits; model APIs
accept less, and one unacceptable tool makes the API refuse the whole request.
:func:`convert_input_schema` rewrites a schema for a target (``openai`` or ``anthropic``): local
``$ref`` targets inlined, cycles expanded :data:`RECURSION_LIMIT` times, draft-04/07 forms made 2020-12,
the top level made ``type: "object"``, then checked against the 2020-12 meta-schema and the size
bounds. A schema that cannot be made acceptable raises :class:`UnacceptableSchema` and the tool is
left out with its reason. Results are memoised (:data:`CACHE_MAX_ENTRIES` entries,
:data:`CACHE_MAX_CHARS` characters, least recently used out first).

Design: docs/tool-definitions.md
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import unquote

from jsonschema import Draft202012Validator, SchemaError

from patchbay.core.errors import UnacceptableSchema
from patchbay.core.schema_bounds import DEFAULT_SCHEMA_BOUNDS, SchemaBounds, exceeded_bounds

__all__ = [
    "CACHE_MAX_CHARS",
    "CACHE_MAX_ENTRIES",
    "RECURSION_LIMIT",
    "Target",
    "convert_input_schema",
    "object_input_schema",
]

Target = Literal["openai", "anthropic"]

RECURSION_LIMIT = 2
"""How many times one ``$ref`` may be expanded on one path before it becomes a stub."""

CACHE_MAX_ENTRIES = 4096
CACHE_MAX_CHARS = 16 * 1024 * 1024

_MAX_REASON = 300

# Keywords whose value is one subschema (``items`` may also be a draft-07 list of them).
_SCHEMA_KEYS = frozenset(
    {
        "additionalProperties",
        "propertyNames",
        "additionalItems",
        "items",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
_SCHEMA_LIST_KEYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP_KEYS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_DEFINITION_KEYS = ("$defs", "definitions")
_DROPPED = frozenset({"$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$vocabulary", *_DEFINITION_KEYS})
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})
_INTERACTING = (
    frozenset({"properties", "patternProperties", "additionalProperties", "unevaluatedProperties"}),
    frozenset({"items", "prefixItems", "additionalItems", "unevaluatedItems", "contains"}),
    frozenset({"if", "then", "else"}),
)
_BOOLEAN_OK_FOR_OPENAI = frozenset({"additionalProperties", "unevaluatedProperties"})
_COMBINATORS = ("allOf", "anyOf", "oneOf")


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


def _subschemas(node: dict[str, Any]) -> Iterator[Any]:
    """The subschemas directly inside a schema object, definitions included."""
    for key, value in node.items():
        if key in _SCHEMA_KEYS:
            if isinstance(value, list):
                yield from value
            else:
                yield value
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            yield from value
        elif (key in _SCHEMA_MAP_KEYS or key in _DEFINITION_KEYS) and isinstance(value, dict):
            yield from value.values()
        elif key == "dependencies" and isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict | bool))


class _Expander:
    """Inlines references and rewrites draft-04/07 forms, within a node budget and a depth limit."""

    def __init__(self, root: Any, target: Target, bounds: SchemaBounds):
        self.root = root
        self.target = target
        self.bounds = bounds
        self.spent = 0
        self.active: dict[str, int] = {}
        base = root.get("$id") if isinstance(root, dict) else None
        self.base = base.partition("#")[0] if isinstance(base, str) else None
        self.anchors = self._collect_anchors(root)

    def _collect_anchors(self, root: Any) -> dict[str, Any]:
        anchors: dict[str, Any] = {}
        stack = [root]
        seen = 0
        while stack:
            node = stack.pop()
            seen += 1
            if seen > self.bounds.max_nodes:
                break  # the expansion below refuses a schema this large anyway
            if not isinstance(node, dict):
                continue
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                anchors.setdefault(anchor, node)
            legacy = node.get("$id")
            if isinstance(legacy, str) and legacy.startswith("#") and len(legacy) > 1:
                anchors.setdefault(legacy[1:], node)
            stack.extend(_subschemas(node))
        return anchors

    def lookup(self, ref: str) -> tuple[str, Any]:
        """``(key, target)`` for a local reference; the key identifies the target for cycle counting."""
        uri, _, fragment = ref.partition("#")
        if uri and uri != self.base:
            raise UnacceptableSchema(_cut(f"$ref {ref!r} is not local (only #... references are resolved)"))
        fragment = unquote(fragment)
        if fragment == "":
            return "#", self.root
        if not fragment.startswith("/"):
            if fragment in self.anchors:
                return "#" + fragment, self.anchors[fragment]
            raise UnacceptableSchema(_cut(f"$ref {ref!r} names no anchor in the schema"))
        node: Any = self.root
        for raw in fragment[1:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise UnacceptableSchema(_cut(f"$ref {ref!r} points at nothing in the schema"))
        return "#" + fragment, node

    def _spend(self, depth: int) -> None:
        self.spent += 1
        if self.spent > self.bounds.max_nodes:
            raise UnacceptableSchema(
                f"expanding its $refs gives more than {self.bounds.max_nodes} schema nodes (schema_max_nodes)"
            )
        if depth > self.bounds.max_depth:
            raise UnacceptableSchema(
                f"expanding its $refs nests deeper than {self.bounds.max_depth} levels (schema_max_depth)"
            )

    def expand(self, node: Any, depth: int, key: str | None = None) -> Any:
        """A copy of ``node`` (a schema at keyword ``key``) with references inlined."""
        self._spend(depth)
        if isinstance(node, bool):
            if self.target == "openai" and key not in _BOOLEAN_OK_FOR_OPENAI:
                return {} if node else {"not": {}}
            return node
        if not isinstance(node, dict):
            return copy.deepcopy(node)  # not a schema; the meta-schema gate reports it
        for keyword in ("$dynamicRef", "$recursiveRef"):
            if keyword in node:
                raise UnacceptableSchema(f"{keyword} is not supported (only $ref to the same document)")
        if "$ref" not in node:
            return self._members(node, depth)
        ref = node["$ref"]
        if not isinstance(ref, str):
            raise UnacceptableSchema("a $ref is not a string")
        ref_key, target = self.lookup(ref)
        count = self.active.get(ref_key, 0)
        if count >= RECURSION_LIMIT:
            resolved: Any = {"description": f"Recursive ({ref}); not expanded further."}
            if isinstance(target, dict) and isinstance(target.get("type"), str | list):
                resolved["type"] = copy.deepcopy(target["type"])
        else:
            self.active[ref_key] = count + 1
            try:
                resolved = self.expand(target, depth + 1, key)
            finally:
                self.active[ref_key] = count
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not siblings:
            return resolved
        return _merge(resolved, self._members(siblings, depth))

    def _members(self, node: dict[str, Any], depth: int) -> Any:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key in _SCHEMA_KEYS:
                if isinstance(value, list):
                    out[key] = [self.expand(item, depth + 1, "prefixItems") for item in value]
                else:
                    out[key] = self.expand(value, depth + 1, key)
            elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
                out[key] = [self.expand(item, depth + 1, key) for item in value]
            elif key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
                out[key] = {name: self.expand(sub, depth + 1, key) for name, sub in value.items()}
            elif key == "dependencies" and isinstance(value, dict):
                out[key] = {
                    name: self.expand(sub, depth + 1, key) if isinstance(sub, dict | bool) else copy.deepcopy(sub)
                    for name, sub in value.items()
                }
            else:
                out[key] = copy.deepcopy(value)  # data (enum, const, default, required...), not schemas
        _to_2020_12(out)
        if self.target == "openai":
            kind = out.get("type")
            if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in out:
                out["items"] = {}
        return out


def _to_2020_12(out: dict[str, Any]) -> None:
    """Rewrite draft-04/07 forms of one schema object in place (see the module docstring, step 3)."""
    if isinstance(out.get("items"), list):
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out.pop("additionalItems")
    else:
        out.pop("additionalItems", None)  # ignored by draft-07 unless items is a list
    for exclusive, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = out.get(exclusive)
        if isinstance(flag, bool):
            del out[exclusive]
            bound = out.get(inclusive)
            if flag and isinstance(bound, int | float) and not isinstance(bound, bool):
                out[exclusive] = out.pop(inclusive)
    dependencies = out.pop("dependencies", None)
    if isinstance(dependencies, dict):
        for name, value in dependencies.items():
            group = "dependentRequired" if isinstance(value, list) else "dependentSchemas"
            out.setdefault(group, {}).setdefault(name, value)


def _interacting(keys: set[str]) -> set[frozenset[str]]:
    return {group for group in _INTERACTING if keys & group}


def _merge(resolved: Any, siblings: dict[str, Any]) -> Any:
    """A ``$ref``'s target combined with the keywords written beside it (both apply)."""
    if resolved is True:
        return siblings
    if not isinstance(resolved, dict):
        return resolved  # false: nothing validates, whatever the siblings say
    annotations = {k: v for k, v in siblings.items() if k in _ANNOTATIONS}
    merged = dict(resolved)
    # A keyword repeated with the same value (``type: "object"`` beside a ``$ref``) adds nothing.
    rest = {k: v for k, v in siblings.items() if k not in _ANNOTATIONS and (k not in merged or merged[k] != v)}
    if rest:
        if set(rest) & set(merged) or _interacting(set(rest)) & _interacting(set(merged)):
            merged = {"allOf": [merged, rest]}
        else:
            merged.update(rest)
    merged.update(annotations)
    return merged


def _is_object_type(kind: Any) -> bool:
    return kind is None or kind == "object" or (isinstance(kind, list) and "object" in kind)


def _flatten(schema: dict[str, Any], keyword: str) -> dict[str, Any]:
    """Fold a top-level ``allOf``/``anyOf``/``oneOf`` into the object schema (step 4)."""
    members = schema.pop(keyword)
    if not isinstance(members, list):
        raise UnacceptableSchema(f"the top-level {keyword} is not a list")
    usable = []
    for member in members:
        if member is True:
            member = {}
        if isinstance(member, dict) and _is_object_type(member.get("type")):
            usable.append(member)
    if not usable:
        raise UnacceptableSchema(f"no alternative of the top-level {keyword} describes an arguments object")
    wrap = "allOf" if keyword == "allOf" else "anyOf"
    properties = dict(schema.get("properties") or {})
    for member in usable:
        for name, sub in (member.get("properties") or {}).items():
            if name in properties and properties[name] != sub:
                properties[name] = {wrap: [properties[name], sub]}
            else:
                properties[name] = sub
    requireds = [[r for r in (member.get("required") or []) if isinstance(r, str)] for member in usable]
    if keyword == "allOf":
        extra = [name for required in requireds for name in required]
    else:
        extra = [name for name in requireds[0] if all(name in required for required in requireds[1:])]
    required = list(dict.fromkeys([*(schema.get("required") or []), *extra]))
    schema["properties"] = properties
    if required:
        schema["required"] = required
    return schema


def object_input_schema(schema: Any) -> dict[str, Any]:
    """The top-level ``type: "object"`` rule alone, for the MCP Tool shape (the rest is left as is).

    ``{}``/``true`` becomes ``{"type": "object"}``, a missing ``type`` is added and ``["object",
    ...]`` becomes ``"object"``.

    Raises:
        UnacceptableSchema: the top level can never be an object.
    """
    if schema is True or schema == {}:
        return {"type": "object"}
    if not isinstance(schema, dict):
        raise UnacceptableSchema("the input schema accepts no arguments object")
    kind = schema.get("type")
    if kind == "object":
        return schema
    if not _is_object_type(kind):
        raise UnacceptableSchema(
            _cut(f"the input schema's top level is type {kind!r}, not an object (MCP arguments are an object)")
        )
    return {**schema, "type": "object"}


def convert_input_schema(schema: Any, target: Target, bounds: SchemaBounds = DEFAULT_SCHEMA_BOUNDS) -> dict[str, Any]:
    """``schema`` rewritten so that the ``target`` API accepts it (see the module docstring).

    Args:
        schema: a tool's ``inputSchema`` as the server sent it (not modified).
        target: ``"openai"`` (function ``parameters``, non-strict) or ``"anthropic"``
            (``input_schema``).
        bounds: the size limits (``Settings.schema_max_*``) the expanded schema must stay within.

    Returns:
        A new schema: top level ``{"type": "object", "properties": {...}, ...}``, no ``$ref``.

    Raises:
        UnacceptableSchema: the tool must be left out; ``str(exc)`` says why (an unresolvable or
            remote ``$ref``, a top level that is not an object, an expansion over the bounds, or a
            result the draft 2020-12 meta-schema refuses).
    """
    try:
        text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):  # not JSON (only from in-process callers): no memo
        return _convert(schema, target, bounds)
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), target, bounds)
    hit = _MEMO.get(key)
    if hit is None:
        try:
            hit = (True, json.dumps(_convert(schema, target, bounds), separators=(",", ":"), ensure_ascii=False))
        except UnacceptableSchema as exc:
            hit = (False, str(exc))
        _MEMO.put(key, hit)
    ok, payload = hit
    if not ok:
        raise UnacceptableSchema(payload)
    converted: dict[str, Any] = json.loads(payload)  # a fresh copy: callers may change it
    return converted


class _Memo:
    """A small LRU of conversion outcomes, bounded by entries and by characters held."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, str, SchemaBounds], tuple[bool, str]] = OrderedDict()
        self._chars = 0

    def get(self, key: tuple[str, str, SchemaBounds]) -> tuple[bool, str] | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: tuple[str, str, SchemaBounds], value: tuple[bool, str]) -> None:
        if len(value[1]) > CACHE_MAX_CHARS // 4:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._chars -= len(old[1])
            self._items[key] = value
            self._chars += len(value[1])
            while len(self._items) > CACHE_MAX_ENTRIES or self._chars > CACHE_MAX_CHARS:
                _, dropped = self._items.popitem(last=False)
                self._chars -= len(dropped[1])


_MEMO = _Memo()


def _convert(schema: Any, target: Target, bounds: SchemaBounds) -> dict[str, Any]:
    if schema == {} or schema is True:
        schema = {"type": "object"}
    if not isinstance(schema, dict):
        raise UnacceptableSchema("the input schema accepts no arguments object")
    expanded = _Expander(schema, target, bounds).expand(schema, 0)
    if not isinstance(expanded, dict):
        raise UnacceptableSchema("the input schema accepts no arguments object")
    for keyword in _COMBINATORS:
        if keyword in expanded:
            expanded = _flatten(expanded, keyword)
    expanded = object_input_schema(expanded)
    if target == "openai":
        for keyword in ("enum", "const", "not"):
            expanded.pop(keyword, None)
    expanded.setdefault("properties", {})
    expanded = {"type": "object", **expanded}  # ``type`` first, for people reading the schema
    try:
        Draft202012Validator.check_schema(expanded)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path)
        raise UnacceptableSchema(
            _cut(f"not a valid JSON Schema (draft 2020-12) at '/{where}': {exc.message}")
        ) from None
    broken = exceeded_bounds(expanded, None, bounds)
    if broken:
        raise UnacceptableSchema(f"the converted schema's {broken[0].describe()}")
    return expanded
