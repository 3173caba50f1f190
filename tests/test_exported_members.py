import patchbay

EXPECTED = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "PatchbayError",
    "Runtime",
    "RuntimeConfig",
    "RuntimeServer",
    "Settings",
    "ToolCallError",
    "ToolCallResult",
    "__version__",
]


def test_the_package_exports_exactly_the_curated_public_names_sorted() -> None:
    assert patchbay.__all__ == EXPECTED
    assert patchbay.__all__ == sorted(patchbay.__all__)
    for name in patchbay.__all__:
        assert hasattr(patchbay, name), name


def test_the_package_version_is_set() -> None:
    assert patchbay.__version__ == "0.1.0"
