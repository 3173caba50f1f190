"""Schemathesis hooks for test_openapi_fuzz.py (loaded by ``schemathesis run`` through its config).

Every workspace named in a request can become a project, and every mutation re-projects the
snapshot of each project (``<workspace>/.patchbay/mcp-runtime.json``, seed 003 §10.3). A generated
``cwd`` that the API would accept (an absolute path, ``/`` above all) is therefore aimed at the
served workspace right before the request is sent, in every phase: the ``cwd`` query parameter of
the connector routes and the ``cwd`` of a ``POST /api/sessions`` body (opening a session makes its
workspace a project). Values the API refuses (relative, NUL, too long, not a string) are sent as
generated.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

WORKSPACE = os.environ["PB_FUZZ_WORKSPACE"]


def _accepted(value: object) -> bool:
    return isinstance(value, str) and value.startswith("/") and "\x00" not in value and len(value) <= 4096


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if isinstance(case.query, dict) and _accepted(case.query.get("cwd")):
        case.query["cwd"] = WORKSPACE
    if isinstance(case.body, dict) and _accepted(case.body.get("cwd")):
        case.body["cwd"] = WORKSPACE
