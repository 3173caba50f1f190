"""Alembic environment for Patchbay's canonical store.

Runs online only, on the connection the caller put in ``config.attributes["connection"]``
(see :func:`patchbay.adapters.store.db.upgrade_to_head`); no ``alembic.ini`` and no URL
are read. SQLite uses batch mode so later ``ALTER``s work through table copies.
"""

from __future__ import annotations

from alembic import context

from patchbay.adapters.store.tables import metadata

config = context.config


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "Patchbay migrations run on a caller-provided connection: "
            "use patchbay.adapters.store.upgrade_to_head(engine)"
        )
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("Patchbay migrations do not support offline (--sql) mode")
run_migrations_online()
