"""A connector's bindings resolved by :class:`ConnectorAccess` when the runtime has no credential store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patchbay import RuntimeServer, Settings
from patchbay.core.credentials import CredentialBinding
from patchbay.core.errors import CredentialUnavailable
from patchbay.runtime.connection.access import ConnectorAccess
from tests.support.servers import fixture_server

pytestmark = pytest.mark.anyio

REF = "cred_" + "0" * 32


def access(tmp_path: Path, *bindings: dict[str, Any]) -> ConnectorAccess:
    server = RuntimeServer(
        connector_id="con_plain",
        name="plain",
        target=fixture_server("lifecycle_server.py"),
        bindings=tuple(CredentialBinding(**binding) for binding in bindings),
    )
    return ConnectorAccess(server, Settings(home=tmp_path / "home"), None, None)


async def test_plain_values_are_delivered_without_a_credential_store(tmp_path: Path) -> None:
    plain = access(tmp_path, {"delivery": "env", "name": "REGION", "value": "eu-west"})
    assert await plain.resolve() == ({"REGION": "eu-west"}, {})
    assert plain.known == ()


async def test_without_a_store_the_error_names_the_first_credential_reference(tmp_path: Path) -> None:
    mixed = access(
        tmp_path,
        {"delivery": "env", "name": "REGION", "value": "eu-west"},
        {"delivery": "env", "name": "API_KEY", "ref": REF},
    )
    with pytest.raises(CredentialUnavailable) as caught:
        await mixed.resolve()
    assert caught.value.code == "auth_required"
    assert caught.value.details["ref"] == REF
    assert caught.value.details["binding"] == "env API_KEY"
