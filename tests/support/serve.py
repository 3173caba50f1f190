"""``patchbay serve`` as a real process on an ephemeral loopback port (``Served.headers`` has its
token; ``Served.session`` is a ``requests`` session that sends it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests


@dataclass
class Served:
    """A running ``patchbay serve``: what it printed at start, and the process."""

    info: dict[str, Any]
    process: subprocess.Popen[str]
    session: requests.Session

    @property
    def url(self) -> str:
        return self.info["url"]

    @property
    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header with the token the server printed at start."""
        return {"Authorization": f"Bearer {self.info['token']}"}


def _read_json(stream: Any) -> dict[str, Any]:
    lines = []
    for line in stream:
        lines.append(line)
        if line.rstrip() == "}":
            return json.loads("".join(lines))
    raise AssertionError(f"serve printed no start document: {''.join(lines)!r}")


@contextlib.contextmanager
def serve_process(home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Run ``patchbay --home HOME serve --port 0 --json ARGS`` in ``cwd`` until the block ends;
    then SIGINT, and kill if it is not gone within 15 s."""
    process = subprocess.Popen(
        ["patchbay", "--home", str(home), "serve", "--port", "0", "--json", *args],
        cwd=cwd,
        env=env or dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    session = requests.Session()
    try:
        assert process.stdout is not None
        info = _read_json(process.stdout)
        if info.get("token"):
            session.headers["Authorization"] = f"Bearer {info['token']}"
        yield Served(info=info, process=process, session=session)
    finally:
        session.close()
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
