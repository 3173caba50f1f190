"""Per-connector runtime options as the control plane changes them (``runtime_config``): sparse
merging of changes, and the strict write-side check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from patchbay.core.errors import ConfigError
from patchbay.core.models import ConnectorTarget, RuntimeOptions

__all__ = ["checked_options", "merge_runtime_options"]

#: Option sections whose changes merge key by key (a ``None`` value resets one key).
_SECTIONS = ("restart", "limits")


def merge_runtime_options(stored: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` (a connector's ``runtime_config``) with option ``changes`` applied; no validation.

    Only the keys given change; ``None`` removes a key (back to its default). ``restart`` and
    ``limits`` changes merge key by key the same way. Stored keys that are no option are kept.

    Raises:
        ConfigError: ``invalid_config`` naming a key that is no option, or a section that is no mapping.
    """
    config = dict(stored)
    for key, value in changes.items():
        if key not in RuntimeOptions.model_fields:
            raise ConfigError(str(key), f"is not a runtime option (known: {', '.join(RuntimeOptions.model_fields)})")
        if key in _SECTIONS and value is not None:
            if not isinstance(value, Mapping):
                raise ConfigError(key, "must be an object of option changes")
            current = config.get(key)
            merged = {**(current if isinstance(current, Mapping) else {}), **value}
            value = {sub: v for sub, v in merged.items() if v is not None} or None
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def checked_options(config: Mapping[str, Any], target: ConnectorTarget) -> RuntimeOptions:
    """The option keys of ``config`` parsed strictly for ``target`` (other keys are not ours)."""
    fields = RuntimeOptions.model_fields
    return RuntimeOptions.parse_strict({k: v for k, v in config.items() if k in fields}, transport=target.transport)
