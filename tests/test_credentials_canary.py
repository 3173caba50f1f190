"""Canary proof of credentials by reference.

One full scenario with unique canary values: connectors with managed and environment credentials
over stdio and Streamable HTTP (a real server on 127.0.0.1 that only answers the right bearer),
added and inspected through the CLI, probed, called (a server that hands the secret back, one that
prints it on stderr, one call that fails quoting it, one connect that fails for an unset
variable), its events exported, and part of it again in fresh ``patchbay`` processes; always with
``PATCHBAY_DEBUG=1``, so every log record, the SDK's DEBUG ones (which quote whole server
messages) included, reaches the CLI's stderr. Then every file under the data home and the
workspace (the SQLite database and its side files included), every event log, every log record
(as the CLI's redacting handler writes it; records of Patchbay's own loggers even before that)
and every CLI output is scanned: no canary value appears anywhere but in
``credentials.json``, and there only the managed ones (an environment credential's value is never
stored). The digests the servers report prove each value did arrive where it was bound.

The REST API is part of the scenario: every answer of every read route, a real probe of each
connector through it (the stdio server prints its secrets on stderr) and a refused request that
carries a value are scanned with the rest.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from typer.testing import CliRunner

from patchbay.core.redaction import RedactingFilter
from patchbay.interfaces.cli import app
from patchbay.runtime import read_events
from tests.support.credentials import credential_http_server, files_under, sha256, stdio_argv

_RUN = uuid.uuid4().hex[:12]
STDIO_MANAGED = f"pbcnry-stdio-managed-{_RUN}"
STDIO_ENV = f"pbcnry-stdio-env-{_RUN}"
HTTP_BEARER = f"pbcnry-http-bearer-{_RUN}"
HTTP_HEADER = f"pbcnry-http-header-{_RUN}"
HTTP_ENV = f"pbcnry-http-env-{_RUN}"
CANARIES = (STDIO_MANAGED, STDIO_ENV, HTTP_BEARER, HTTP_HEADER, HTTP_ENV)
MANAGED = (STDIO_MANAGED, HTTP_BEARER, HTTP_HEADER)
ENVIRONMENT = {"PB_CANARY_STDIO_ENV": STDIO_ENV, "PB_CANARY_HTTP_ENV": HTTP_ENV}


def leaks(text: str) -> list[str]:
    """Every canary found in ``text``, as it is or in an encoded form (URL, JSON, the bearer line)."""
    found = []
    for canary in CANARIES:
        forms = {canary, quote(canary, safe=""), quote_plus(canary), json.dumps(canary)[1:-1]}
        if any(form in text for form in forms):
            found.append(canary)
    return found


class Outputs:
    """Everything the scenario printed, by where it came from."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []

    def add(self, where: str, text: str) -> str:
        self.texts.append((where, text))
        return text


def api_answers(home: Path, workspace: Path, outputs: Outputs) -> None:
    """Every read route of the REST API, a probe of each connector and a refused request carrying a
    canary, through an in-process client; each answer is added to ``outputs``."""
    import anyio
    import httpx2

    from patchbay.adapters.api_token import api_token
    from patchbay.core.settings import Settings
    from patchbay.interfaces.api import create_app

    async def run() -> None:
        api = create_app(Settings(home=home), workspace=workspace)
        transport = httpx2.ASGITransport(app=api)
        headers = {"Authorization": f"Bearer {api_token(home)}"}
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765", headers=headers) as client:

            async def answer(method: str, url: str, **kwargs: object) -> httpx2.Response:
                response = await client.request(method, url, **kwargs)
                outputs.add(f"API {method} {url}", response.text)
                return response

            cwd = {"cwd": str(workspace)}
            for connector in (await answer("GET", "/api/mcp/connectors")).json()["connectors"]:
                name = connector["name"]
                await answer("GET", f"/api/mcp/connectors/{name}")
                await answer("GET", f"/api/mcp/connectors/{name}/tools")
                await answer("GET", f"/api/mcp/connectors/{name}/tools", params=cwd)
                probe = await answer("POST", f"/api/mcp/connectors/{name}/probe", params=cwd)
                assert probe.json()["state"] == "ready", probe.text
            await answer("GET", "/api/mcp/catalog")
            await answer("GET", "/api/settings/mcp")
            await answer("GET", "/openapi.json")
            refused = await answer(
                "POST",
                "/api/mcp/connectors",
                json={
                    "name": "Not A Name",
                    "target": {"transport": "streamable_http", "url": "https://x.example/mcp"},
                    "bindings": [{"delivery": "bearer", "value": HTTP_BEARER}],
                },
            )
            assert refused.status_code == 422
        api.state.context.close()

    anyio.run(run)


@pytest.fixture
def scenario_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The canaries of environment credentials, ``PATCHBAY_DEBUG=1``, and the loggers as they were after."""
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATCHBAY_DEBUG", "1")
    names = ("", "mcp", "httpx2", "httpcore2", "patchbay")
    saved = {name: (logging.getLogger(name).handlers[:], logging.getLogger(name).level) for name in names}
    propagate = {name: logging.getLogger(name).propagate for name in names}
    yield
    for name, (handlers, level) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate[name]


def test_no_canary_leaves_the_credential_store(
    tmp_path: Path, scenario_env: None, caplog: pytest.LogCaptureFixture
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    outputs = Outputs()
    runner = CliRunner()
    ws = ["--project", str(workspace)]

    def cli(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, ["--home", str(home), *args], catch_exceptions=False)
        outputs.add(f"patchbay {' '.join(args[:3])} (stderr)", result.stderr)
        assert result.exit_code == code, result.output
        return outputs.add(f"patchbay {' '.join(args[:3])}", result.stdout)

    caplog.set_level(logging.DEBUG)
    with credential_http_server(HTTP_BEARER, HTTP_ENV) as url:
        # -- add, inspect -----------------------------------------------------------------------
        cli(
            "connector",
            "add",
            "local",
            "--env",
            f"PB_KEY={STDIO_MANAGED}",
            "--env",
            "PB_HOST=@env:PB_CANARY_STDIO_ENV",
            *ws,
            "--",
            *stdio_argv("PB_KEY", "PB_HOST"),
        )
        remote_flags = ["--url", url, "--allow-private"]
        cli(
            "connector",
            "add",
            "remote",
            *remote_flags,
            "--bearer",
            HTTP_BEARER,
            "--header",
            f"X-Api-Key: {HTTP_HEADER}",
        )
        cli("connector", "add", "remote-env", *remote_flags, "--bearer", "@env:PB_CANARY_HTTP_ENV", "--json")
        for name in ("local", "remote", "remote-env"):
            cli("connector", "show", name)
            cli("connector", "show", name, "--json")
            cli("grant", name, "digest", "allow")
        items = json.loads(cli("credential", "list", "--json"))["items"]
        assert sorted(item["source"] for item in items) == [
            "environment",
            "environment",
            "managed",
            "managed",
            "managed",
        ]
        cli("credential", "list")
        for item in items:
            cli("credential", "show", item["id"])
            cli("credential", "show", item["id"], "--json")

        # -- probe, call, fail ------------------------------------------------------------------
        for name in ("local", "remote", "remote-env"):
            probe = json.loads(cli("probe", name, *ws, "--json"))
            assert probe["state"] == "ready", probe
            cli("probe", name, *ws)
        sessions = []
        digests = {
            ("local", "PB_KEY"): STDIO_MANAGED,
            ("local", "PB_HOST"): STDIO_ENV,
            ("remote", "Authorization"): HTTP_BEARER,
            ("remote", "X-Api-Key"): HTTP_HEADER,
            ("remote-env", "Authorization"): HTTP_ENV,
        }
        for (name, bound), value in digests.items():
            body = json.loads(cli("call", f"mcp.{name}.digest", json.dumps({"name": bound}), *ws, "--json"))
            assert body["content"][0]["text"] == sha256(value), (name, bound)
            sessions.append(body["session_id"])
            revealed = cli("call", f"mcp.{name}.reveal", json.dumps({"name": bound}), *ws, "--yes")
            assert f"{bound} is [REDACTED]" in revealed
            failed = json.loads(
                cli("call", f"mcp.{name}.fail", json.dumps({"name": bound}), *ws, "--yes", "--json", code=1)
            )
            assert failed["error"]["code"] == "tool_error"
            sessions.append(failed["session_id"])

        # -- the REST API on the same data home ------------------------------------------------
        api_answers(home, workspace, outputs)

        # -- the same in fresh processes, every log record on stderr ----------------------------
        env = {**os.environ, "PATCHBAY_HOME": str(home), "PATCHBAY_DEBUG": "1"}
        fresh = [
            (["probe", "local", *ws], env, 0),
            (["call", "mcp.local.reveal", '{"name": "PB_HOST"}', *ws, "--yes"], env, 0),
            (["call", "mcp.remote.reveal", '{"name": "X-Api-Key"}', *ws, "--yes"], env, 0),
            (["call", "mcp.remote-env.reveal", '{"name": "Authorization"}', *ws, "--yes"], env, 0),
            (
                ["call", "mcp.remote-env.digest", '{"name": "Authorization"}', *ws, "--json"],
                {k: v for k, v in env.items() if k != "PB_CANARY_HTTP_ENV"},
                1,
            ),
        ]
        for argv, process_env, code in fresh:
            done = subprocess.run(
                ["patchbay", *argv], env=process_env, capture_output=True, text=True, timeout=90, cwd=workspace
            )
            outputs.add(f"fresh patchbay {argv[:2]} (stdout)", done.stdout)
            outputs.add(f"fresh patchbay {argv[:2]} (stderr)", done.stderr)
            assert done.returncode == code, done.stderr
            if code == 0 and argv[0] == "call":
                assert " is [REDACTED]" in done.stdout
        unset = json.loads(outputs.texts[-2][1])
        assert (
            unset["error"]["code"] == "mcp_server_unavailable" and unset["error"]["details"]["code"] == "auth_required"
        )
        assert "PB_CANARY_HTTP_ENV" in unset["error"]["message"]

    # -- export events ---------------------------------------------------------------------------
    for session in dict.fromkeys(sessions):
        cli("events", session)
        exported = json.loads(cli("events", session, "--json"))["events"]
        assert any(e["type"] == "tool.completed" or e["type"] == "tool.failed" for e in exported)
    logs = sorted((home / "sessions").glob("*.jsonl"))
    assert len(logs) >= len(set(sessions))
    for log in logs:
        outputs.add(f"event log {log.name}", json.dumps(read_events(log)))

    # -- scan ------------------------------------------------------------------------------------
    records = caplog.records
    assert any(r.name.startswith("mcp.") for r in records)  # the SDK's DEBUG records were there
    own = [r for r in records if r.name.startswith("patchbay")]
    outputs.add("Patchbay's own log records", "\n".join(r.getMessage() for r in own))
    written = []
    for record in records:
        copied = copy.copy(record)
        RedactingFilter().filter(copied)  # what the CLI's handler does to every record
        written.append(f"{copied.name} {copied.getMessage()} {copied.exc_text or ''}")
    outputs.add("log records as the CLI writes them", "\n".join(written))
    store = home / "credentials.json"
    scanned = 0
    for path in files_under(home, workspace):
        text = path.read_bytes().decode("utf-8", errors="replace")
        scanned += 1
        if path == store:
            assert sorted(leaks(text)) == sorted(MANAGED), "the store holds exactly the managed values"
            continue
        assert leaks(text) == [], f"canary in {path}"
    assert scanned >= 4 and any(p.name.startswith("patchbay.db") for p in files_under(home))
    for where, text in outputs.texts:
        assert leaks(text) == [], f"canary in {where}:\n{text[:3000]}"
    printed = "\n".join(text for _, text in outputs.texts)
    assert "DEBUG mcp." in printed  # the SDK's records did reach the CLI's stderr, redacted
    assert "[REDACTED]" in printed and "configured" in printed and "PB_CANARY_STDIO_ENV" in printed
