"""The version is written once, in ``patchbay.core.version``, and the package metadata agrees."""

from __future__ import annotations

import importlib.metadata

import patchbay
from patchbay.core.version import __version__


def test_the_package_metadata_and_the_public_name_carry_the_one_version() -> None:
    assert importlib.metadata.version("patchbay") == __version__
    assert patchbay.__version__ == __version__
