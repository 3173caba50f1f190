"""Helpers for the credential tests: the credential fixture server over HTTP, digests, file scans."""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import FIXTURES

CREDENTIAL_SERVER = FIXTURES / "credential_server.py"


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def credential_http_server(*accepted_bearers: str) -> Iterator[str]:
    """Run tests/fixtures/credential_server.py over Streamable HTTP on 127.0.0.1; yield its ``/mcp`` URL.

    Requests whose bearer value is not one of ``accepted_bearers`` get 401 (only digests are
    passed to the server). The process is stopped on exit.
    """
    argv = [sys.executable, str(CREDENTIAL_SERVER), "--http"]
    for bearer in accepted_bearers:
        argv += ["--require-bearer-sha256", sha256(bearer)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline().split() if process.stdout else []
        assert line[:1] == ["ready"], f"credential server did not start: {line}"
        yield f"http://127.0.0.1:{line[1]}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def stdio_argv(*leak: str) -> list[str]:
    """The argv of the credential fixture server over stdio, writing ``NAME=value`` of ``leak`` to stderr."""
    argv = [sys.executable, str(CREDENTIAL_SERVER)]
    for name in leak:
        argv += ["--leak", name]
    return argv


def files_under(*roots: Path) -> list[Path]:
    """Every regular file below ``roots`` (hidden ones and database side files included)."""
    return sorted(p for root in roots if root.exists() for p in root.rglob("*") if p.is_file())
