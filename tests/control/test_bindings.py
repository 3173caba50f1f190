"""Binding specs parsed from ``KEY=value``, ``Name: value`` and bearer text keep values apart from
references."""

from __future__ import annotations

import pytest

from patchbay.control.bindings import BindingSpec, parse_bearer, parse_env, parse_header
from patchbay.core.errors import ConfigError

MANAGED = "cnrySVCmanaged-7f3e9d1c"


def test_parsing_keeps_values_apart_from_references() -> None:
    assert parse_env(f"PB_KEY={MANAGED}") == BindingSpec("env", "PB_KEY", value=MANAGED)
    assert parse_env("PB_KEY=@env:HOST_VAR") == BindingSpec("env", "PB_KEY", variable="HOST_VAR")
    assert parse_env("PB_KEY=@@literal") == BindingSpec("env", "PB_KEY", value="@literal")
    assert parse_header(f"X-Api-Key:  {MANAGED}") == BindingSpec("header", "X-Api-Key", value=MANAGED)
    assert parse_bearer("@env:TOKEN_VAR") == BindingSpec("bearer", "Authorization", variable="TOKEN_VAR")
    assert MANAGED not in repr(parse_env(f"PB_KEY={MANAGED}"))
    for bad in ("PB_KEY", f"1BAD={MANAGED}", "PB_KEY=@nope:x", "PB_KEY=@env:not-a-name"):
        with pytest.raises(ConfigError) as info:
            parse_env(bad)
        assert MANAGED not in info.value.message
