"""Seeding the built-in connector catalogue into the registry.

:func:`seed` makes the registry hold every built-in of :data:`patchbay.core.builtins.BUILTINS`:

* a built-in not registered yet is created with ``source: builtin`` and ``enabled`` set to its
  ``enabled_by_default`` -- the only time that value applies;
* a registered built-in whose command changed (another interpreter path, a moved module) gets the
  new target and nothing else: its enable/disable choice, approval mode, include/exclude lists,
  credential bindings, grants and cached catalog stay (the cached catalog is kept, though stale
  under the new fingerprint until the next probe);
* a name held by a connector the user made (``custom``/``imported``) is left alone and reported.

Two processes seeding at once are safe: the loser of the name race finds the built-in there.
It runs when a :class:`~patchbay.control.connectors.ConnectorService` opens with
``settings.builtins`` on (the default; ``PATCHBAY_BUILTINS=off`` turns it off).

Design: docs/builtins.md
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchbay.adapters.store import Repository
from patchbay.core.builtins import BUILTINS, BuiltinSpec, builtin_target
from patchbay.core.errors import ConfigError, NotFoundError, RevisionConflictError
from patchbay.core.models import ConnectorSettings

__all__ = ["SeedReport", "seed", "seeding_interpreter"]


def seeding_interpreter(
    executable: str | None = None, prefix: str | None = None, base_prefix: str | None = None
) -> str:
    """The interpreter the built-ins' targets name: this process's, spelled one way per venv.

    A venv's ``bin/`` holds ``python``, ``python3`` and ``python3.X`` for one interpreter, and
    entry-point scripts and ``python -m`` name different ones; written as they come, every switch
    between ``patchbay`` and ``python -m pytest`` would re-point the built-ins and stale their
    cached tools. Inside a venv this is ``<venv>/bin/python``; outside one, ``executable``.

    Args:
        executable, prefix, base_prefix: default ``sys.executable``, ``sys.prefix``, ``sys.base_prefix``.
    """
    executable = executable or sys.executable
    prefix = prefix or sys.prefix
    base_prefix = base_prefix or sys.base_prefix
    canonical = Path(prefix) / "bin" / "python"
    if prefix != base_prefix and Path(executable).parent == canonical.parent and canonical.exists():
        return str(canonical)
    return executable


@dataclass(frozen=True, slots=True)
class SeedReport:
    """What one :func:`seed` did, by connector name.

    Attributes:
        created: built-ins registered now (with their default enablement).
        upgraded: built-ins whose target was brought up to date.
        shadowed: catalogue names held by a connector that is not built in (left alone).
    """

    created: tuple[str, ...] = ()
    upgraded: tuple[str, ...] = ()
    shadowed: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the registry was written."""
        return bool(self.created or self.upgraded)


def seed(
    repository: Repository,
    python: str,
    catalogue: Sequence[BuiltinSpec] = BUILTINS,
    *,
    audit_file: str | None = None,
) -> SeedReport:
    """Bring the registry's built-ins up to ``catalogue``, their command run by ``python``.

    Args:
        repository: the canonical store.
        python: the interpreter (absolute path) the built-ins' stdio targets start.
        catalogue: the built-ins (default :data:`~patchbay.core.builtins.BUILTINS`).
        audit_file: the egress audit file the built-ins append their request lines to (their
            target names it with their connector id, so a new one is written in two steps).

    Raises:
        CanonicalStateUnavailable: the store cannot be written.
    """
    existing = {connector.name.lower(): connector for connector in repository.connectors.list_all()}
    created: list[str] = []
    upgraded: list[str] = []
    shadowed: list[str] = []
    for spec in catalogue:
        current = existing.get(spec.name.lower())
        if current is None:
            try:
                current = repository.connectors.create(
                    spec.name,
                    spec.display_name,
                    builtin_target(spec, python),
                    source="builtin",
                    description=spec.description,
                    terms_url=spec.terms_url,
                    settings=ConnectorSettings(enabled=spec.enabled_by_default),
                )
            except ConfigError:  # another process registered the name in between
                continue
            created.append(spec.name)
        if current.source != "builtin":
            shadowed.append(spec.name)
            continue
        target = builtin_target(spec, python, audit_file=audit_file, connector_id=current.connector_id)
        if current.target != target:
            try:
                repository.connectors.update(current.connector_id, current.revision, target=target)
            except (RevisionConflictError, NotFoundError):  # changed or removed in between: next time
                continue
            if spec.name not in created:
                upgraded.append(spec.name)
    return SeedReport(tuple(created), tuple(upgraded), tuple(shadowed))
