"""patchbay.interfaces.api.app, the API application.

Sections, in this order:

- The API as a whole: the OpenAPI document (contracts, error responses, deprecated projections),
  who may call it (Host/Origin), and every runtime option in its view.
- The offline documentation pages: ``/docs`` and ``/redoc`` work offline: their pages reference only
  this server's own URLs (the fastapi-offline package's assets), each answering 200 behind the
  token."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests.support.api import Api, error_of

pytestmark = pytest.mark.anyio


# --- The API as a whole ---


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
        "/api/mcp/connectors/{connector}/oauth/config",
        "/api/mcp/connectors/{connector}/oauth/status",
        "/api/mcp/connectors/{connector}/oauth/start",
        "/api/mcp/connectors/{connector}/oauth",
        "/api/mcp/catalog",
        "/api/settings/mcp",
        "/api/settings/mcp/{server_id}",
        "/api/mcp/import/sources",
        "/api/mcp/import/preview",
        "/api/mcp/import/commit",
        "/api/projects",
        "/api/sessions",
        "/api/sessions/{session_id}",
        "/api/sessions/{session_id}/tools",
        "/api/sessions/{session_id}/events",
        "/api/sessions/{session_id}/call",
        "/api/health",
        "/api/mcp/status/stream",
        "/api/approvals",
        "/api/approvals/stream",
        "/api/approvals/{approval_id}",
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
            if path == "/api/approvals/stream":  # Server-Sent Events, not JSON
                assert "text/event-stream" in ok["content"]
                continue
            ref = ok["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            mutation = method != "get" and not path.startswith(("/api/sessions", "/api/approvals"))
            mutation = mutation and not path.endswith("/preview")
            mutation = mutation and not path.endswith("/oauth/start")  # starts a login, commits nothing yet
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
