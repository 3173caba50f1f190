"""patchbay.interfaces.api.app, the API application.

Sections, in this order:

- The API as a whole: The API as a whole: one error shape with stable codes for FastAPI's own
  failures too, the OpenAPI document (contracts, error responses, deprecated projections), who may
  call it (Host/Origin), and redaction of every string on the way out.
- The offline documentation pages: ``/docs`` and ``/redoc`` work offline: their pages reference only
  this server's own URLs (the fastapi-offline package's assets), each answering 200 behind the
  token."""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from patchbay.core import errors as core_errors
from patchbay.core.errors import ErrorCode, FailureReason
from patchbay.interfaces.api import errors as api_errors
from patchbay.interfaces.api.errors import STATUS, TOOL_STATUS
from tests.support.api import Api, error_of

pytestmark = pytest.mark.anyio


# --- The API as a whole ---

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


async def test_requests_for_other_hosts_or_from_other_origins_are_refused(api: Api) -> None:
    rebound = await api.client.get("/api/mcp/connectors", headers={"host": "attacker.example:8765"})
    assert rebound.status_code == 403 and error_of(rebound)["code"] == "origin_refused"
    page = await api.client.post(
        "/api/mcp/connectors",
        json={"name": "pwn", "target": {"transport": "stdio", "command": "touch"}},
        headers={"origin": "https://attacker.example"},
    )
    assert page.status_code == 403 and error_of(page)["code"] == "origin_refused"
    assert (await api.client.get("/api/mcp/connectors")).json() == {"connectors": []}
    own = await api.client.get("/api/mcp/connectors", headers={"origin": "http://127.0.0.1:8765"})
    for host in ("localhost:8765", "[::1]:8765", "127.0.0.1"):
        assert (await api.client.get("/api/mcp/connectors", headers={"host": host})).status_code == 200, host
    assert own.status_code == 200 and "access-control-allow-origin" not in own.headers


async def test_strings_are_redacted_on_the_way_out(api: Api) -> None:
    created = await api.create("time", TIME, description="ask ops: api_key=abcd1234efgh5678 for quota")
    assert "abcd1234efgh5678" not in str(created) and "[REDACTED]" in created["description"]


async def test_the_openapi_document_describes_contracts_errors_and_deprecations(api: Api) -> None:
    document = (await api.client.get("/openapi.json")).json()
    paths = document["paths"]
    assert set(paths) == {
        "/api/mcp/connectors",
        "/api/mcp/connectors/{connector}",
        "/api/mcp/connectors/{connector}/settings",
        "/api/mcp/connectors/{connector}/probe",
        "/api/mcp/connectors/{connector}/tools",
        "/api/mcp/connectors/{connector}/tools/{tool}",
        "/api/mcp/connectors/{connector}/resources/grant",
        "/api/mcp/connectors/{connector}/prompts/{prompt}/grant",
        "/api/mcp/connectors/{connector}/disconnect",
        "/api/mcp/catalog",
        "/api/settings/mcp",
        "/api/settings/mcp/{server_id}",
        "/api/mcp/import/preview",
        "/api/mcp/import/commit",
        "/api/sessions",
        "/api/sessions/{session_id}",
        "/api/sessions/{session_id}/tools",
        "/api/sessions/{session_id}/events",
        "/api/sessions/{session_id}/call",
    }
    legacy = {"/api/mcp/catalog", "/api/settings/mcp", "/api/settings/mcp/{server_id}"}
    error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            responses = operation["responses"]
            for status in ("422", "503"):
                assert responses[status]["content"]["application/json"]["schema"] == error_ref, (path, method)
            assert bool(operation.get("deprecated")) == (path in legacy), path
    assert "409" in paths["/api/mcp/connectors/{connector}"]["patch"]["responses"]
    call = paths["/api/sessions/{session_id}/call"]["post"]["responses"]
    assert {"200", "403", "404", "409", "422", "502", "503", "504"} <= set(call)
    assert "unknown_tool" in call["422"]["description"] and "tool_error" in call["502"]["description"]
    # every mutation answers with runtime_reload (seed 003 §10.5), reads do not
    reload_ref = {"$ref": "#/components/schemas/RuntimeReload"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            ok = next(answer for status, answer in operation["responses"].items() if status.startswith("2"))
            ref = ok["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            mutation = method != "get" and not path.startswith("/api/sessions") and not path.endswith("/preview")
            has_reload = document["components"]["schemas"][ref]["properties"].get("runtime_reload") == reload_ref
            assert has_reload == mutation, (method, path, ref)
    code = document["components"]["schemas"]["RuntimeReload"]["properties"]["code"]
    assert [choice.get("const", choice["type"]) for choice in code["anyOf"]] == ["runtime_reload_failed", "null"]
    assert "403" in paths["/api/mcp/connectors/{connector}"]["delete"]["responses"]
    value = document["components"]["schemas"]["BindingRequest"]["properties"]["value"]
    assert value["anyOf"][0] == {"type": "string", "format": "password", "writeOnly": True}
    # no response schema has a field that could carry a secret value
    schemas = document["components"]["schemas"]
    responses = {
        ref.rsplit("/", 1)[1]
        for operations in paths.values()
        for operation in operations.values()
        for answer in operation["responses"].values()
        for ref in [answer.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")]
        if ref
    }
    assert "ConnectorDetail" in responses and "DisconnectResult" in responses

    def fields(name: str, seen: set[str]) -> set[str]:
        if name in seen:
            return set()
        seen.add(name)
        found = set(schemas[name].get("properties", {}))
        for text in [str(schemas[name])]:
            for ref in {part.split("'")[0] for part in text.split("#/components/schemas/")[1:]}:
                found |= fields(ref, seen)
        return found

    every = set().union(*(fields(name, set()) for name in responses))
    assert not every & {"value", "secret", "token", "password", "access_token", "refresh_token", "client_secret"}


def test_the_runtime_options_view_shows_every_runtime_option() -> None:
    from patchbay.core.models import RuntimeOptions
    from patchbay.interfaces.api.contracts import RuntimeOptionsChange, RuntimeOptionsView

    assert set(RuntimeOptionsView.model_fields) == set(RuntimeOptions.model_fields)
    assert set(RuntimeOptionsChange.model_fields) == set(RuntimeOptions.model_fields)


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


# --- The offline documentation pages ---


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href", "spec-url") and value]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_a_docs_page_references_only_local_urls_that_answer(api: Api, page: str) -> None:
    response = await api.client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert not re.search(r"(https?:)?//[a-z0-9]", response.text, re.I), response.text  # no other site at all
    parser = _References()
    parser.feed(response.text)
    urls = parser.urls + re.findall(r"url: '([^']+)'", response.text)  # Swagger UI's document
    assert "/openapi.json" in urls and any(u.endswith(".js") for u in urls)
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        asset = await api.client.get(url)
        assert asset.status_code == 200, url
        if url.endswith(".css"):  # a stylesheet fetches nothing from elsewhere either
            for target in re.findall(r"url\(\s*['\"]?([^'\")]+)", asset.text):
                assert target.startswith(("data:", "/", "#")) or "//" not in target, target
        assert (await api.client.get(url, headers={"Authorization": "Bearer nope"})).status_code == 401
