"""The machine's PostgreSQL for tests: one fresh schema per use, dropped afterwards.

PostgreSQL runs at ``PATCHBAY_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``, trust auth). The schema is selected
through libpq's ``options=-csearch_path=...`` in the URL, so every engine (and every ``patchbay
serve`` given the URL) made from it works in that schema only. When the server is not reachable
the test fails under ``CI`` and is skipped elsewhere.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

__all__ = ["POSTGRES_URL", "postgres_schema"]

POSTGRES_URL = os.environ.get("PATCHBAY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A store URL on a new, empty schema of the test PostgreSQL; the schema is dropped on exit."""
    admin = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
    schema = f"patchbay_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as exc:
        admin.dispose()
        message = f"PostgreSQL not reachable at {POSTGRES_URL}: {exc.orig}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
