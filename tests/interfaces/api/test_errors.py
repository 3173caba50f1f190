"""Every API failure, FastAPI's own included, answers in the one error shape with a stable,
documented code and a message that says in words what is wrong."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from patchbay.core import errors as core_errors
from patchbay.core.errors import ErrorCode, FailureReason
from patchbay.interfaces.api import errors as api_errors
from patchbay.interfaces.api.errors import STATUS, TOOL_STATUS
from tests.support.api import Api, error_of

pytestmark = pytest.mark.anyio

TIME = {"transport": "stdio", "command": "mcp-server-time"}


async def test_fastapi_failures_use_the_one_error_shape(api: Api) -> None:
    secret = "PBAPI do-not-echo 3f9a1c"
    invalid = await api.client.post("/api/mcp/connectors", json={"name": secret, "target": 42})
    assert invalid.status_code == 422
    error = error_of(invalid)
    assert error["code"] == "validation_error" and error["details"]["field"] == "body.name"
    assert {e["field"] for e in error["details"]["errors"]} == {"body.name", "body.target"}
    assert secret not in invalid.text  # refused input is never quoted back

    not_json = await api.client.post(
        "/api/mcp/connectors", content=b"\xff\xfe{", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 422 and error_of(not_json)["code"] == "validation_error"
    text_body = await api.client.post(
        "/api/mcp/connectors", content=b'{"name": "x"}', headers={"content-type": "text/plain"}
    )
    assert text_body.status_code == 422  # a form or text/plain post from a page is no JSON body

    nowhere = await api.client.get("/api/mcp/nowhere")
    assert nowhere.status_code == 404 and error_of(nowhere)["code"] == "not_found"
    method = await api.client.post("/api/mcp/connectors/time/tools/t")
    assert method.status_code == 405 and error_of(method)["code"] == "method_not_allowed"
    assert method.headers["allow"] == "DELETE, PUT"  # every method of the path, not the first route's


async def test_request_errors_say_what_is_wrong_in_words(api: Api) -> None:
    broken = await api.client.post(
        "/api/mcp/connectors", content=b'{\n  "name": "x",\n  oops}', headers={"content-type": "application/json"}
    )
    error = error_of(broken)
    assert broken.status_code == 422 and error["code"] == "validation_error"
    assert error["message"] == "the body is not valid JSON (line 3, column 3)"
    assert error["details"]["field"] == "body" and (error["details"]["line"], error["details"]["column"]) == (3, 3)

    bare = await api.client.post("/api/mcp/connectors", content=b'{"name": "x"}', headers={"content-type": ""})
    assert bare.status_code == 422
    assert error_of(bare)["message"] == "body: send a JSON object with content-type: application/json"

    relative = await api.client.post("/api/sessions", json={"cwd": "work/repo"})
    assert relative.status_code == 422
    assert error_of(relative)["message"] == "cwd: must be an absolute path"
    assert error_of(relative)["details"]["field"] == "body.cwd"
    bad_name = await api.client.post("/api/mcp/connectors", json={"name": "Bad Name", "target": TIME})
    assert error_of(bad_name)["message"].startswith("name: must be 1-64 characters of a-z, 0-9 and -")
    assert "pattern" not in error_of(bad_name)["message"]


def _codes_in_api_source() -> tuple[set[str], list[str]]:
    """``(codes, literals)``: every ErrorCode/FailureReason the API's modules name, and every code
    they spell as a bare string (an ``error_response`` code, a ``"code"`` key or ``code=``
    argument, a ``Literal`` of a field named ``code``)."""
    enums = {"ErrorCode": ErrorCode, "FailureReason": FailureReason}
    codes: set[str] = set()
    literals: list[str] = []

    def literal(node: ast.AST) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            literals.append(node.value)

    for path in Path(api_errors.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in enums:
                codes.add(str(getattr(enums[node.value.id], node.attr)))
            elif (
                isinstance(node, ast.Call) and ast.unparse(node.func).endswith("error_response") and len(node.args) > 1
            ):
                literal(node.args[1])
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "code":
                        literal(value)
            elif isinstance(node, ast.keyword) and node.arg == "code":
                literal(node.value)
            elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "code":
                for part in ast.walk(node.annotation):
                    literal(part)
    return codes, literals


def test_every_code_the_api_can_answer_with_is_a_stable_code_and_documented() -> None:
    named, literals = _codes_in_api_source()
    stable = {*ErrorCode, *FailureReason}
    assert set(literals) <= stable  # e.g. the RuntimeReload contract's Literal["runtime_reload_failed"]
    # invalid_config is answered as validation_error (details.cause names it)
    answered = {*STATUS, *TOOL_STATUS, *named, *literals} - {ErrorCode.INVALID_CONFIG}
    assert {"origin_refused", "method_not_allowed", "unauthorized", "payload_too_large"} <= set(STATUS)

    table = api_errors.__doc__ or ""  # the status table: "    code    status    raised by"
    listed = set(re.findall(r"^    \(?([a-z_]+)\)?\s+\d{3}\s", table, re.MULTILINE))
    assert answered - listed == set()
    assert all(f"``{code}``" in (core_errors.__doc__ or "") for code in answered)

    readme = next(p / "README.md" for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
    text = readme.read_text(encoding="utf-8")
    tool_part = text.split("answers with its failure reason as the code", 1)[1].split("Every error is", 1)[0]
    error_part = text.split("Every error is", 1)[1].split("No response carries", 1)[0]
    assert {code for code in TOOL_STATUS if f"`{code}`" not in tool_part} == set()
    assert {code for code in STATUS if f"`{code}`" not in error_part} == {"invalid_config"}


def test_no_api_module_spells_an_error_code_as_a_bare_string_in_a_response() -> None:
    _, literals = _codes_in_api_source()
    assert literals == ["runtime_reload_failed"]  # a contract's Literal type; every response uses the enums
