"""The one error model: every exception class and code in one module, listed in its docstring;
errors are copied with more context, never edited once raised."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from patchbay.core import errors
from patchbay.core.errors import (
    ConfigError,
    EgressBlocked,
    ErrorCode,
    FailureReason,
    NotFoundError,
    PatchbayError,
    ToolCallError,
)

SRC = Path(errors.__file__).resolve().parents[1]


def _exception_classes() -> list[type[BaseException]]:
    return [
        value
        for name in errors.__all__
        if isinstance(value := getattr(errors, name), type) and issubclass(value, BaseException)
    ]


def test_every_exported_error_class_is_drawn_in_the_hierarchy_with_a_docstring() -> None:
    doc = errors.__doc__ or ""
    tree = set(re.findall(r"^    [│├└─ ]*([A-Z]\w+)", doc, re.MULTILINE))  # the first name on each tree line
    for cls in _exception_classes():
        assert cls.__name__ in tree, cls
        assert cls.__module__ == "patchbay.core.errors"
        assert (cls.__doc__ or "").strip(), cls


def test_every_code_and_failure_reason_is_listed_in_the_module_docstring() -> None:
    doc = errors.__doc__ or ""
    for code in [*ErrorCode, *FailureReason]:
        assert f"``{code}``" in doc, code


def test_no_other_module_defines_a_public_error_class_unless_it_must_subclass_a_library_one() -> None:
    allowed = {"PayloadTooLarge", "SseEndpointRefused"}  # a starlette and an httpx2 exception
    found = set()
    for path in SRC.rglob("*.py"):
        if path.name == "errors.py" and path.parent.name == "core":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {ast.unparse(base) for base in node.bases}
                if any(base.endswith(("Error", "Exception")) or base in errors.__all__ for base in bases):
                    found.add(node.name)
    assert found <= allowed
    doc = errors.__doc__ or ""
    assert all(name in doc for name in allowed)


def test_with_details_returns_a_new_error_and_leaves_the_raised_one_as_it_was() -> None:
    raised = ToolCallError(FailureReason.TIMEOUT, "no answer in 30 s", details={"tool": "t"}, result="kept")
    copy = raised.with_details(toolCallId="c1")
    assert type(copy) is ToolCallError and copy is not raised
    assert copy.reason is FailureReason.TIMEOUT and copy.message == raised.message and copy.result == "kept"
    assert copy.details == {"reason": "timeout", "tool": "t", "toolCallId": "c1"}
    assert raised.details == {"reason": "timeout", "tool": "t"}
    assert copy.to_dict()["code"] == "timeout" and str(copy) == str(raised)


def test_with_details_keeps_a_subclass_and_what_it_derives_from_details() -> None:
    blocked = EgressBlocked("10.0.0.1 is a private address")
    placed = blocked.with_details(origin="http://10.0.0.1:80")
    assert isinstance(placed, EgressBlocked) and placed.code is ErrorCode.NETWORK_BLOCKED
    assert placed.origin == "http://10.0.0.1:80" and blocked.origin is None
    assert placed.reason == blocked.reason == "10.0.0.1 is a private address"
    config = ConfigError("target.command", "must not be empty").with_details(cause="x")
    assert config.field == "target.command" and config.details == {"field": "target.command", "cause": "x"}


def test_with_message_says_the_same_failure_in_other_words_redacted() -> None:
    raised = NotFoundError("no connector 'x'", details={"name": "x"})
    secret = "ghp_" + "a" * 36
    said = raised.with_message(f"no connector 'x' (token {secret})", hint="list")
    assert secret not in said.message and secret not in str(said) and said.args == (said.message,)
    assert said.code is ErrorCode.NOT_FOUND and said.details == {"name": "x", "hint": "list"}
    assert raised.message == "no connector 'x'" and raised.details == {"name": "x"}


def test_details_given_to_an_error_are_copied() -> None:
    given = {"field": "name"}
    error = PatchbayError("bad", code=ErrorCode.VALIDATION_ERROR, details=given)
    given["field"] = "other"
    assert error.details == {"field": "name"}


_ERROR_ATTRIBUTES = {"message", "code", "details", "reason", "result", "origin"}
_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _edits(tree: ast.AST) -> list[str]:
    """Assignments to an error's attributes on anything but ``self``, and in-place edits of a
    ``.details`` dict (``x.details[k] = v``, ``x.details.update(...)``)."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript):
                target = target.value
                if isinstance(target, ast.Attribute) and target.attr == "details":
                    found.append(ast.unparse(node))
            elif (
                isinstance(target, ast.Attribute)
                and target.attr in _ERROR_ATTRIBUTES
                and not (isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"))
            ):
                found.append(ast.unparse(node))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "details"
        ):
            found.append(ast.unparse(node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_note":
            found.append(ast.unparse(node))
    return found


def test_no_code_edits_an_error_after_constructing_it() -> None:
    edits = {}
    for path in SRC.rglob("*.py"):
        if path == Path(errors.__file__).resolve():
            continue  # with_details/with_message build their copies here
        if found := _edits(ast.parse(path.read_text(encoding="utf-8"))):
            edits[str(path.relative_to(SRC))] = found
    assert edits == {}


@pytest.mark.parametrize(
    "source",
    [
        "exc.details['x'] = 1",
        "exc.details.setdefault('x', 1)",
        "error.message = 'better'",
        "failure.details.update(a=1)",
        "exc.add_note('more')",
    ],
)
def test_the_edit_finder_finds_edits(source: str) -> None:
    assert _edits(ast.parse(source)) == [source]
