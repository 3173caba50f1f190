"""Credential shapes and rules (seed 003 §7.3, §11.1, addendum 2026-09-07): bindings, delivery, values."""

from __future__ import annotations

import pydantic
import pytest

from patchbay.core.credentials import (
    Credential,
    CredentialBinding,
    bindings_from_config,
    check_bindings,
    deliver,
    validate_header_name,
    validate_secret_value,
)
from patchbay.core.errors import ConfigError
from patchbay.core.models import Connector, HttpTarget, RuntimeServer

REF_A = "cred_" + "a" * 32
REF_B = "cred_" + "b" * 32


def test_delivery_puts_env_headers_and_bearer_where_they_belong() -> None:
    bindings = [
        CredentialBinding(ref=REF_A, delivery="env", name="PB_KEY"),
        CredentialBinding(ref=REF_B, delivery="bearer", name="Authorization"),
        CredentialBinding(ref=REF_A, delivery="header", name="X-Api-Key"),
    ]
    env, headers = deliver(bindings, {REF_A: "value-a", REF_B: "value-b"})
    assert env == {"PB_KEY": "value-a"}
    assert headers == {"Authorization": "Bearer value-b", "X-Api-Key": "value-a"}


@pytest.mark.parametrize(
    ("delivery", "name"),
    [("env", "1BAD"), ("env", "A-B"), ("env", ""), ("header", "Bad Header"), ("header", "X:Y"), ("bearer", "X-Key")],
)
def test_binding_names_are_checked(delivery: str, name: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        CredentialBinding(ref=REF_A, delivery=delivery, name=name)  # type: ignore[arg-type]


def test_a_binding_refers_by_credential_id_only() -> None:
    with pytest.raises(pydantic.ValidationError):
        CredentialBinding(ref="ghp_notanid", delivery="env", name="PB")


@pytest.mark.parametrize("name", ["Host", "content-length", "Mcp-Session-Id", "mcp-protocol-version"])
def test_headers_the_transport_sets_cannot_carry_a_credential(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_header_name("header", name)
    assert info.value.code == "invalid_config"


def test_bindings_must_fit_the_transport_and_never_fill_one_place_twice() -> None:
    env = CredentialBinding(ref=REF_A, delivery="env", name="PB")
    header = CredentialBinding(ref=REF_A, delivery="header", name="authorization")
    bearer = CredentialBinding(ref=REF_B, delivery="bearer", name="Authorization")
    assert check_bindings([env], "stdio") == (env,)
    for bindings, transport in (([env], "streamable_http"), ([bearer], "stdio"), ([env], "socket")):
        with pytest.raises(ConfigError):
            check_bindings(bindings, transport)
    with pytest.raises(ConfigError) as info:
        check_bindings([header, bearer], "sse")
    assert "same place" in info.value.message


@pytest.mark.parametrize(
    ("value", "delivery"),
    [("", "env"), ("a\x00b", "env"), ("line\r\nX-Evil: 1", "header"), (" padded", "header"), ("two words", "bearer")],
)
def test_unfit_values_are_refused_without_being_quoted(value: str, delivery: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_secret_value("value", value, delivery)  # type: ignore[arg-type]
    assert value.strip() == "" or value not in info.value.message


def test_environment_values_may_hold_what_a_header_may_not() -> None:
    assert validate_secret_value("value", "two words\tand a tab", "env") == "two words\tand a tab"


def test_an_environment_credential_keeps_only_a_variable_name() -> None:
    with pytest.raises(pydantic.ValidationError):
        Credential(credential_id=REF_A, kind="api_key", source="environment", owner_id="c", variable="X")
    with pytest.raises(pydantic.ValidationError):
        Credential(credential_id=REF_A, kind="env_reference", source="environment", owner_id="c")
    shared = Credential(
        credential_id=REF_A,
        kind="env_reference",
        source="environment",
        owner_id="c1",
        variable="X",
        shared_with=("c2",),
    )
    assert shared.usable_by("c1") and shared.usable_by("c2") and not shared.usable_by("c3")


def test_connectors_and_runtime_servers_carry_bindings_as_references() -> None:
    stored = [{"ref": REF_A, "delivery": "bearer", "name": "Authorization"}]
    connector = Connector(
        connector_id="c1",
        name="remote",
        display_name="remote",
        target=HttpTarget(url="https://example.com/mcp"),
        runtime_config={"bindings": stored, "lifecycle": "eager"},
    )
    assert connector.bindings == (CredentialBinding(ref=REF_A, delivery="bearer", name="Authorization"),)
    server = RuntimeServer(connector_id="c1", name="remote", target=connector.target, bindings=connector.bindings)
    assert server.model_dump(mode="json")["bindings"] == stored
    with pytest.raises(ConfigError) as info:
        bindings_from_config({"bindings": [{"ref": "nope", "delivery": "env", "name": "X"}]})
    assert info.value.details["field"] == "bindings"


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("NODE_ENV", "production", False),
        ("LOG_LEVEL", "info", False),
        ("PORT", "8080", False),
        ("API_URL", "https://api.example.com/v1", False),
        ("GITHUB_TOKEN", "anything", True),
        ("X-Key", "abc", True),
        ("SENTRY_DSN", "https://o1.ingest.sentry.io/1", True),
        ("HOST", "ghp_" + "a" * 36, True),
        ("HOST", "cnryDESKTOPplain-5e6f7a8b", True),
    ],
)
def test_looks_secret_classifies_by_name_and_value(name: str, value: str, secret: bool) -> None:
    from patchbay.core.credentials import looks_secret

    assert looks_secret(name, value) is secret


def test_a_plain_binding_is_stored_without_a_ref_and_refuses_secret_shapes() -> None:
    plain = CredentialBinding(delivery="env", name="NODE_ENV", value="production")
    assert plain.is_plain and plain.model_dump() == {"delivery": "env", "name": "NODE_ENV", "value": "production"}
    with pytest.raises(pydantic.ValidationError):
        CredentialBinding(delivery="bearer", name="Authorization", value="x")
    with pytest.raises(pydantic.ValidationError):
        CredentialBinding(delivery="env", name="X", value="ghp_" + "a" * 36)
    with pytest.raises(pydantic.ValidationError):
        CredentialBinding(delivery="env", name="X")
