"""A local fake origin for the built-in science connectors: one HTTP server on 127.0.0.1 that
answers like the public APIs, from the committed fixtures (tests/fixtures/science/), with scripted
failures (429, 5xx, redirects, oversized bodies) queued per path.

Usage::

    with FakeOrigin() as origin:
        origin.route("/search", Reply.file("paper_search/epmc_search_page1.json"))
        origin.queue("/search", Reply(429, headers={"Retry-After": "1"}))
        ... point a connector at origin.url (the loopback ``--base-url`` override) ...
        assert origin.requests[0].path == "/search"

A route key is a path, or ``path?name=value`` to answer only requests with that query parameter
(checked first). Unrouted paths answer :attr:`FakeOrigin.fallback` when set, else 404. Every request is recorded (path, query, headers).
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.parse
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from patchbay import Runtime, RuntimeServer, Settings, ToolCallError
from patchbay.core.builtins import builtin_spec
from patchbay.core.credentials import CredentialBinding
from patchbay.core.models import ConnectorSettings, StdioTarget
from tests.support.paths import FIXTURES
from tests.support.recording import config

SCIENCE = FIXTURES / "science"


@dataclass(frozen=True)
class Reply:
    """One answer: status, headers, body; ``length=False`` sends no Content-Length (the body ends
    when the connection closes)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    length: bool = True

    @staticmethod
    def file(name: str, content_type: str = "application/json") -> Reply:
        """The fixture ``tests/fixtures/science/<name>``."""
        return Reply(200, (SCIENCE / name).read_bytes(), {"Content-Type": content_type})


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]


class FakeOrigin:
    """The fake origin (see the module docstring); a context manager that starts and stops it."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.fallback: Reply | None = None
        """The answer to a path no route or queue names (None: 404)."""
        self._routes: dict[str, Reply] = {}
        self._queues: dict[str, deque[Reply]] = defaultdict(deque)
        self._lock = threading.Lock()
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parsed = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parsed.query))
                reply = origin._answer(parsed.path, query, {k.lower(): v for k, v in self.headers.items()})
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.length:
                    self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client stopped reading (a size cap did its job)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, key: str, reply: Reply) -> None:
        """Answer ``key`` (a path, or ``path?name=value``) with ``reply`` from now on."""
        with self._lock:
            self._routes[key] = reply

    def queue(self, key: str, *replies: Reply) -> None:
        """Answer the next requests to ``key`` with ``replies``, in order, before its route."""
        with self._lock:
            self._queues[key].extend(replies)

    def paths(self) -> list[str]:
        """The path of every request received, in order."""
        with self._lock:
            return [seen.path for seen in self.requests]

    def _answer(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(Seen(path, query, headers))
            keys = [f"{path}?{name}={value}" for name, value in query.items()] + [path]
            for key in keys:
                if self._queues.get(key):
                    return self._queues[key].popleft()
            for key in keys:
                if key in self._routes:
                    return self._routes[key]
            if self.fallback is not None:
                return self.fallback
        return Reply(404, b'{"error": "not found"}', {"Content-Type": "application/json"})

    def __enter__(self) -> FakeOrigin:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# One valid argument set per built-in tool (the live smoke suite calls each real API with it).
EXAMPLE_ARGUMENTS: dict[str, dict[str, Any]] = {
    "search_europepmc": {"query": "p53 apoptosis", "page_size": 2},
    "read_europepmc_fulltext": {"pmcid": "PMC3257301", "max_chars": 1000},
    "search_preprints": {"server": "biorxiv", "from_date": "2024-01-02", "to_date": "2024-01-02", "page_size": 2},
    "search_pubmed": {"query": "p53 apoptosis", "page_size": 2},
    "search_works": {"query": "open access", "page_size": 2},
    "get_work": {"work": "W2741809807"},
    "get_references": {"work": "W2741809807", "page_size": 2},
    "search_authors": {"query": "Heather Piwowar", "page_size": 2},
    "search_genes": {"query": "TP53", "page_size": 2},
    "search_ontology_terms": {"query": "apoptosis", "ontology": "go", "page_size": 2},
    "gene_pathways": {"identifier": "P04637", "page_size": 2},
    "lookup_feature": {"symbol": "TP53"},
    "predict_variant_effect": {"hgvs": "9:g.22125504G>C", "max_consequences": 2},
    "region_overlap": {"chromosome": "17", "start": 7661779, "end": 7687538, "page_size": 5},
    "search_cell_types": {"query": "neuron", "page_size": 2},
    "get_cell_type": {"cell_type": "CL:0000540"},
    "get_marker_genes": {"cell_type": "CL:0000540", "page_size": 2},
}
EXAMPLE_ARGUMENTS.update(
    {
        "search_studies": {"condition": "asthma", "page_size": 2},
        "get_study": {"nct_id": "NCT04280705"},
        "search_eligibility": {"condition": "breast cancer", "age_years": 45, "sex": "FEMALE", "page_size": 2},
        "search_structures": {"query": "hemoglobin", "method": "xray", "page_size": 2},
        "get_entry": {"pdb_id": "4HHB"},
        "get_alphafold_prediction": {"uniprot_accession": "P69905"},
    }
)


def builtin_server(name: str, origin: FakeOrigin, approval: str = "allow_all", **env: str) -> RuntimeServer:
    """The built-in ``name`` as a runtime sees it, its real stdio server pointed at ``origin``
    (the loopback ``--base-url`` override); ``env`` become plain env bindings."""
    spec = builtin_spec(name)
    assert spec is not None, name
    return RuntimeServer(
        connector_id=f"id-{name}",
        name=name,
        target=StdioTarget(command=sys.executable, args=("-I", "-m", spec.module, "--base-url", origin.url)),
        settings=ConnectorSettings(approval_mode=approval),  # type: ignore[arg-type]
        bindings=tuple(CredentialBinding(delivery="env", name=key, value=value) for key, value in env.items()),
    )


async def call_each(
    tmp_path: Path, server: RuntimeServer, *steps: tuple[str, dict[str, Any]], deadline: float = 60
) -> list[Any]:
    """Run each ``(tool, arguments)`` of ``server`` in one governed Runtime; a result's record
    (checked to be the text's JSON too), or the ToolCallError's error record."""
    out: list[Any] = []
    with anyio.fail_after(deadline):
        async with Runtime(config(tmp_path, server), settings=Settings(home=tmp_path / "h")) as runtime:
            for tool, arguments in steps:
                try:
                    result = await runtime.call(f"mcp.{server.name}.{tool}", arguments)
                except ToolCallError as exc:
                    out.append(json.loads(exc.result.text))
                else:
                    assert result.structured_content == json.loads(result.text)
                    out.append(result.structured_content)
    return out


def fixture_path(name: str) -> Path:
    """``tests/fixtures/science/<name>``."""
    return SCIENCE / name
