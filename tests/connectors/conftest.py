"""The live smoke suite (``-m live``) runs only when asked for by name: a plain run skips it."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "live" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="calls real public APIs: run with -m live on a machine with internet")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)
