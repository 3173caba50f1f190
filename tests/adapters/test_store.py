"""The store package (patchbay.adapters.store): its public API, exactly."""

from __future__ import annotations


def test_the_store_package_exports_exactly_its_public_api() -> None:
    import patchbay.adapters.store as store

    assert sorted(store.__all__) == ["Repository", "create_engine_for", "open_store", "upgrade_to_head"]
    assert all(callable(getattr(store, name)) for name in store.__all__)
