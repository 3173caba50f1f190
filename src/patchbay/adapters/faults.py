"""Named crash points for the crash-consistency tests of the control plane's writes.

A write that spans the credential store and the database passes named steps (``create.credentials_written``,
``create.committed``, ``update.credentials_written``, ``update.committed``, ``remove.row_deleted``,
``remove.credentials_deleted``). When the environment variable :data:`CRASH_AT_ENV` names the step
a process is at, the process ends at once with ``os._exit`` (no cleanup, no ``finally``, as a
``kill -9`` would), so a test can run a write in a subprocess and check what a crash at that exact
step leaves behind. Unset (always, outside those tests), a crash point costs one dictionary
lookup.
"""

from __future__ import annotations

import os

__all__ = ["CRASH_AT_ENV", "CRASH_EXIT_CODE", "crash_point"]

CRASH_AT_ENV = "PATCHBAY_TEST_CRASH_AT"
"""The environment variable naming the step at which the process exits (tests only)."""
CRASH_EXIT_CODE = 86
"""The exit status of a process that stopped at a crash point."""


def crash_point(step: str) -> None:
    """Exit the process immediately (status :data:`CRASH_EXIT_CODE`) if :data:`CRASH_AT_ENV` names ``step``."""
    if os.environ.get(CRASH_AT_ENV) == step:
        os._exit(CRASH_EXIT_CODE)
