"""OpenAPI fuzzing of the served API.

``schemathesis run`` (its whole engine: examples, coverage, fuzzing and stateful phases, every
check) is pointed at the ``/openapi.json`` of a real ``patchbay serve`` on 127.0.0.1 (ephemeral
port, stopped at the end), sending the API token the server printed on every request. Every response must pass the checks -- no 5xx; status code, content
type, headers and body conform to the document; invalid data is refused; a deleted resource is
gone -- and afterwards the SQLite database passes ``PRAGMA integrity_check`` and
``PRAGMA foreign_key_check``.

So that mutations reach the store rather than stopping at 404, a schemathesis config binds the
``connector``/``server_id`` path parameters and ``revision`` to dictionaries of values that exist
(seeded connectors, current revisions) with probability one half; the other half stays
generated. ``DELETE /api/mcp/connectors/{connector}`` gets seeded connectors of its own, so the
others keep theirs whichever order the run takes. A ``cwd`` the API would accept is always the served workspace (``fuzz_hooks.py``),
whether a query parameter or the body of ``POST /api/sessions``: a workspace named by a project
grant or a session becomes a project whose snapshot is re-projected on each mutation (seed 003
§10.3), and a generated ``/`` would have Patchbay write ``/.patchbay``. Invalid ``cwd`` values are
still sent (refused with 422 before they reach the store). The HAR report then proves that every
mutation succeeded at least once.

The session routes are fuzzed too, and reach live sessions (schemathesis links ``POST
/api/sessions`` to the routes that take its ``session_id``). A session only reaches connectors
that are registered and enabled, never a command or URL from its request; but the run registers
generated connectors too. So the served process gets a ``PATH`` holding only the two programs the
run needs (``patchbay``, ``mcp-server-time``, the seeded connectors' command): no generated
command name can start a program, and every connection attempt is bounded
(``PATCHBAY_CONNECT_TIMEOUT``). A tool call goes to a real server: when that server fails the call
the route answers 502 (``tool_error``, e.g. generated arguments) or 504 (``timeout``) by design
(see :mod:`patchbay.interfaces.api.errors`), so ``not_a_server_error`` accepts those two statuses
for that one operation; a 500 (or 503) is still a failure.

One check is left out: ``positive_data_acceptance`` (a request that matches the document must
be accepted). The connector rules of seed 003 §7.3 go beyond what a JSON Schema can say (one
executable word, a cwd inside the workspace, a URL that embeds no credential, a name nobody has
taken yet), so a schema-valid request may rightly get 422.

Bounded: ``EXAMPLES`` examples per operation and phase (``SESSION_TOOLS_EXAMPLES`` for listing a
session's tools, which starts its servers), a fixed seed, loopback only. The probe
operation is left out: a generated stdio connector is a generated command line, and probing runs
it (the probe route has its own tests against real servers). So is the live status stream: it
never ends (tests/interfaces/api/routes/test_status.py reads it).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy import text

from patchbay.adapters.store import create_engine_for
from tests.support.serve import serve_process

HERE = Path(__file__).parent
EXAMPLES = 20
SESSION_TOOLS_EXAMPLES = 4
"""Listing a live session's tools starts every enabled connector's server (a few seconds each)."""
SEEDED = ("seed", "seed-two", "seed-three")
DOOMED = ("doomed", "doomed-two")
"""Seeded too, but named only to ``DELETE /api/mcp/connectors/{connector}``: the other operations
keep their seeded connectors whichever order the run takes."""
DEFINITIONS = {  # a legacy .mcp.json in the served workspace, for the import routes
    "alpha": {"command": "mcp-server-time"},
    "beta": {"type": "http", "url": "https://beta.example.com/mcp", "headers": {"X-Key": "${BETA_KEY}"}},
    "gamma": {"command": "mcp-server-time", "env": {"TZ_KEY": "plain-value-for-fuzzing"}},
}


def _config(path: Path, workspace: Path) -> Path:
    def values(items: list[object]) -> str:
        return json.dumps(items)

    path.write_text(
        f"""
hooks = "fuzz_hooks"
generation.max-examples = {EXAMPLES}

[dictionaries.connectors]
values = {values(list(SEEDED))}

[dictionaries.workspaces]
values = {values([str(workspace)])}

[dictionaries.revisions]
values = [1, 2, 3]

[dictionaries.definitions]
values = {values(list(DEFINITIONS))}

[dictionaries.doomed]
values = {values(list(DOOMED))}

[parameters]
"path.connector" = {{ dictionary = "connectors", probability = 0.5 }}
"path.server_id" = {{ dictionary = "connectors", probability = 0.5 }}
"query.cwd" = {{ dictionary = "workspaces", probability = 0.5 }}
"body.revision" = {{ dictionary = "revisions", probability = 0.5 }}
"body.select[*]" = {{ dictionary = "definitions", probability = 0.5 }}

[[operations]]
include-name = "DELETE /api/mcp/connectors/{{connector}}"
parameters = {{ "path.connector" = {{ dictionary = "doomed", probability = 0.5 }} }}

[[operations]]
include-name = "GET /api/sessions/{{session_id}}/tools"
generation.max-examples = {SESSION_TOOLS_EXAMPLES}

[[operations]]
include-name = "POST /api/sessions/{{session_id}}/call"
checks.not_a_server_error.expected-statuses = ["1XX", "2XX", "3XX", "4XX", "502", "504"]

[[operations]]
include-name = "POST /api/mcp/connectors"
checks.not_a_server_error.expected-statuses = ["1XX", "2XX", "3XX", "4XX", "502", "504"]
"""
    )
    return path


def test_served_api_survives_fuzzing_and_the_database_stays_consistent(tmp_path: Path, store_url: str | None) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": DEFINITIONS}))
    user_home = tmp_path / "userhome"  # the served user's ~: no real host file is ever read
    user_home.mkdir()
    config = _config(tmp_path / "schemathesis.toml", workspace)
    har = tmp_path / "fuzz.har"
    served_env = {
        **os.environ,
        "HOME": str(user_home),
        "PATH": str(_only_programs(tmp_path / "bin", "patchbay", "mcp-server-time")),
        "PATCHBAY_CONNECT_TIMEOUT": "5",
        "PATCHBAY_APPROVAL_EXPIRY": "1",  # a browser-approved session's ask waits 1 s, not 10 min
    }
    with serve_process(home, workspace, env=served_env) as served:
        for name in SEEDED + DOOMED:
            body = {"name": name, "target": {"transport": "stdio", "command": "mcp-server-time"}, "enabled": True}
            assert served.session.post(f"{served.url}/api/mcp/connectors", json=body, timeout=30).status_code == 201
        run = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "--config-file",
                str(config),
                "run",
                f"{served.url}/openapi.json",
                "--header",
                f"Authorization: {served.headers['Authorization']}",  # the token serve printed
                "--checks",
                "all",
                "--exclude-checks",
                "positive_data_acceptance",
                "--exclude-path-regex",
                "(/probe|/status/stream|/approvals/stream)$",  # the event streams never end by themselves
                "--seed",
                "20260904",
                "--workers",
                "1",
                "--no-color",
                "--report",
                "har",
                "--report-har-path",
                str(har),
            ],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(HERE), "PB_FUZZ_WORKSPACE": str(workspace.resolve())},
            capture_output=True,
            text=True,
            # a guard against a hung run only: the work is bounded by max-examples, and a busy
            # machine (2 shared cores) takes several times as long as an idle one
            timeout=1800,
        )
        report = run.stdout[-12000:] + run.stderr[-3000:]
        assert run.returncode == 0, report
        # seed 003 §8.1, §8.2 (+ sources), §8.3, §8.4 but probe; projects; sessions; health; approvals but the stream
        assert "Tested: 35" in run.stdout, report
    assert served.process.returncode is not None
    if store_url is None:
        with sqlite3.connect(home / "patchbay.db") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
            paths = conn.execute("SELECT path FROM projects").fetchall()
    else:  # PostgreSQL enforces its constraints on every write; the projects are read back the same
        engine = create_engine_for(store_url)
        try:
            with engine.connect() as pg:
                paths = [tuple(row) for row in pg.execute(text("SELECT path FROM projects"))]
        finally:
            engine.dispose()
    # every workspace the run named is the served one: no snapshot was projected elsewhere
    assert paths == [(str(workspace.resolve()),)]
    # The fuzzing reached the store: every mutation succeeded at least once (both grant scopes).
    succeeded = _successes(har, served.url)
    for method, template, with_cwd in MUTATIONS:
        scopes = (False, True) if with_cwd is None else (with_cwd,)
        assert any((method, template, scope) in succeeded for scope in scopes), (method, template, sorted(succeeded))


def _only_programs(directory: Path, *names: str) -> Path:
    """A directory holding links to only ``names`` (from the venv), to serve as a whole ``PATH``."""
    directory.mkdir()
    for name in names:
        (directory / name).symlink_to(Path(sys.executable).parent / name)
    return directory


MUTATIONS: tuple[tuple[str, str, bool | None], ...] = (
    ("POST", "/api/mcp/connectors", None),
    ("PATCH", "/api/mcp/connectors/{connector}", False),
    ("DELETE", "/api/mcp/connectors/{connector}", False),
    ("PUT", "/api/mcp/connectors/{connector}/settings", False),
    ("POST", "/api/mcp/connectors/{connector}/disconnect", False),
    ("PUT", "/api/mcp/connectors/{connector}/tools/{tool}", False),
    ("PUT", "/api/mcp/connectors/{connector}/tools/{tool}", True),
    ("DELETE", "/api/mcp/connectors/{connector}/tools/{tool}", False),
    ("PUT", "/api/mcp/connectors/{connector}/resources/grant", None),
    ("PUT", "/api/mcp/connectors/{connector}/prompts/{prompt}/grant", None),
    ("PUT", "/api/settings/mcp/{server_id}", False),
    ("POST", "/api/mcp/import/preview", False),
    ("POST", "/api/sessions", False),
    ("DELETE", "/api/sessions/{session_id}", False),
)
"""Operations that must have succeeded at least once: (method, path, with a ``cwd``; None: with or
without, where ``cwd`` is only the base of a stdio ``target.cwd``). An import commit needs a selection that
names only importable definitions and no stray ``paths``/``renames``/``inputs``: fuzzed, rarely
a success (its successes are tested in routes/test_imports.py)."""


def _template(path: str) -> str:
    parts = path.split("/")
    if path.startswith("/api/mcp/import/") or path == "/api/sessions":
        return path
    if path.startswith("/api/sessions/"):
        parts[3] = "{session_id}"
        return "/".join(parts)
    if path.startswith("/api/settings/mcp/"):
        return "/api/settings/mcp/{server_id}"
    if len(parts) > 4:
        parts[4] = "{connector}"
    if len(parts) > 6 and parts[5] == "tools":
        parts[6:] = ["{tool}"]
    if len(parts) > 7 and parts[5] == "prompts" and parts[-1] == "grant":
        parts[6:] = ["{prompt}", "grant"]
    return "/".join(parts)


def _successes(har: Path, base: str) -> set[tuple[str, str, bool]]:
    """(method, path template, with ``cwd``) of every 2xx answer recorded in the HAR report."""
    found = set()
    for entry in json.loads(har.read_text())["log"]["entries"]:
        if 200 <= entry["response"]["status"] < 300:
            url = urlsplit(entry["request"]["url"].removeprefix(base))
            found.add((entry["request"]["method"], _template(url.path), "cwd=" in url.query))
    return found
