"""Settings read from the environment: the data home and its default."""

from __future__ import annotations

import pytest

from patchbay.core.settings import Settings, default_home


def test_an_empty_home_setting_means_the_default_data_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHBAY_HOME", "")
    assert Settings().home == default_home()
