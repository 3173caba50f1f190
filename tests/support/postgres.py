"""The machine's PostgreSQL for tests: one fresh schema per use (:func:`postgres_schema`), or one
fresh database per test copied from a migrated template (:class:`PostgresDatabases`, what
``--store=postgres`` uses), dropped afterwards.

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
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

__all__ = ["POSTGRES_URL", "PostgresDatabases", "postgres_schema"]

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


class PostgresDatabases:
    """Fresh PostgreSQL databases for one test run: a template database migrated to head once,
    and one database per test copied from it (``CREATE DATABASE ... TEMPLATE``, tens of ms) and
    dropped after the test with ``WITH (FORCE)``, so no connection a test left open keeps it.

    Names carry a random suffix, so runs sharing the server never meet. :meth:`open` fails the
    test under ``CI`` and skips it elsewhere when the server is not reachable.
    """

    def __init__(self, url: str = POSTGRES_URL):
        self._url = make_url(url)
        self._prefix = f"patchbay_t_{uuid.uuid4().hex[:10]}"
        self._template: str | None = None
        self._admin: Engine | None = None

    def _admin_engine(self) -> Engine:
        if self._admin is None:
            self._admin = create_engine(
                self._url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}, poolclass=NullPool
            )
        return self._admin

    def _database_url(self, name: str) -> str:
        return self._url.set(database=name).render_as_string(hide_password=False)

    def _create(self, name: str, template: str | None = None) -> None:
        clause = f' TEMPLATE "{template}"' if template else ""
        try:
            with self._admin_engine().connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"{clause}'))
        except OperationalError as exc:
            message = f"PostgreSQL not reachable at {POSTGRES_URL}: {exc.orig}"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)

    def _drop(self, name: str) -> None:
        with self._admin_engine().connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def _template_name(self) -> str:
        if self._template is None:
            from patchbay.adapters.store import create_engine_for, upgrade_to_head

            name = f"{self._prefix}_template"
            self._create(name)
            engine = create_engine_for(self._database_url(name))
            try:
                upgrade_to_head(engine)
            finally:
                engine.dispose()  # a template must have no connection while it is copied
            self._template = name
        return self._template

    @contextmanager
    def open(self) -> Iterator[str]:
        """The URL of a new database at the migrations' head; dropped on exit."""
        template = self._template_name()
        name = f"{self._prefix}_{uuid.uuid4().hex[:12]}"
        self._create(name, template)
        try:
            yield self._database_url(name)
        finally:
            self._drop(name)

    def close(self) -> None:
        """Drop the template (if made) and close the admin engine."""
        if self._template is not None:
            self._drop(self._template)
            self._template = None
        if self._admin is not None:
            self._admin.dispose()
            self._admin = None
