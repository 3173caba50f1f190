"""Which results the exchange checks against their outputSchema without a thread hop."""

from __future__ import annotations

from patchbay.runtime.exchange import _INLINE_CHARS, _INLINE_NODES, _quick_to_check


def test_a_small_structured_result_is_checked_in_the_callers_task() -> None:
    assert _quick_to_check({"count": 3, "items": [{"name": "a"}, {"name": "b"}]})
    assert _quick_to_check(None)


def test_many_values_or_long_strings_go_off_the_event_loop() -> None:
    assert not _quick_to_check({"items": list(range(_INLINE_NODES + 1))})
    assert not _quick_to_check({"text": "x" * (_INLINE_CHARS + 1)})
    assert not _quick_to_check({"k" * (_INLINE_CHARS + 1): 1})


def test_deep_nesting_is_walked_without_recursion() -> None:
    deep: object = "leaf"
    for _ in range(10_000):
        deep = [deep]
    assert not _quick_to_check(deep)
