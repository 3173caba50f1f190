"""The connector list kept between requests: what it serves is what rendering the whole list
gives, after every kind of change, and every string an entry carries is redacted."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.encoders import jsonable_encoder

import patchbay.interfaces.api.contracts as c
from patchbay.adapters.store import open_store
from patchbay.control.connectors import ConnectorService
from patchbay.core.models import ConnectorSettings, ProbeOutcome, StdioTarget
from patchbay.core.redaction import register_secret
from patchbay.core.settings import Settings
from patchbay.interfaces.api._views import connector_summaries
from patchbay.interfaces.api.listing import ConnectorListing
from patchbay.interfaces.api.responses import RedactedJSONResponse


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ConnectorService]:
    settings = Settings(home=tmp_path / "home")
    repository = open_store(settings)
    yield ConnectorService(repository, settings)
    repository.close()


def _whole(service: ConnectorService) -> bytes:
    """The list body rendered from scratch, as the route answered before entries were kept."""
    listed = c.ConnectorList(connectors=connector_summaries(service, service.list_connectors()))
    return RedactedJSONResponse(jsonable_encoder(listed)).body


def _stdio(service: ConnectorService, tmp_path: Path, *args: str) -> StdioTarget:
    return service.stdio_target(sys.executable, list(args), cwd=None, workspace=tmp_path)


def test_the_kept_list_is_the_whole_list_after_every_kind_of_change(service: ConnectorService, tmp_path: Path) -> None:
    listing = ConnectorListing()
    assert listing.render(service) == _whole(service) == b'{"connectors":[]}'
    for name in ("beta", "alpha", "gamma"):
        service.add(name, _stdio(service, tmp_path, "-m", name))
    assert listing.render(service) == _whole(service)
    assert listing.render(service) == _whole(service)  # nothing changed: every entry reused
    alpha = service.get("alpha")
    service.update_details("alpha", expected_revision=alpha.revision, description="moved")
    assert listing.render(service) == _whole(service)
    service.set_enabled("beta", True)  # the settings revision only
    assert listing.render(service) == _whole(service)
    gamma = service.get("gamma")
    service.repository.probe_outcomes.record(
        ProbeOutcome(connector_id=gamma.connector_id, state="error", code="timeout", config_revision=gamma.revision)
    )  # no connector row changed
    body = listing.render(service)
    assert body == _whole(service) and b'"timeout"' in body
    service.remove("beta")
    service.add("delta", _stdio(service, tmp_path, "-m", "delta"))
    body = listing.render(service)
    assert body == _whole(service)
    assert [x.name for x in c.ConnectorList.model_validate_json(body).connectors] == ["alpha", "delta", "gamma"]


def test_a_secret_in_any_text_of_an_entry_is_masked(service: ConnectorService, tmp_path: Path) -> None:
    listing = ConnectorListing()
    planted = "api_key=abcd1234efgh5678"
    # straight into the store: the connector service refuses secret-looking targets and names
    connector, _ = service.repository.connectors.create_many(
        [
            {
                "name": "time",
                "display_name": "Time ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "description": f"ask ops: {planted}",
                "target": StdioTarget(command=sys.executable, args=("-m", "time_server", f"--{planted}")),
            },
            {  # an invalid stored configuration: its error quotes what is wrong
                "name": "broken",
                "display_name": "Broken",
                "target": StdioTarget(command=sys.executable),
                "runtime_config": {"lifecycle": planted, "env": {"TOKEN": planted}},
                "settings": ConnectorSettings(include_tools=(planted,), exclude_tools=(planted,)),
            },
        ]
    )
    service.repository.probe_outcomes.record(
        ProbeOutcome(
            connector_id=connector.connector_id,
            state="error",
            code="handshake_failed",
            message=f"server said {planted}",
            config_revision=connector.revision,
        )
    )
    body = listing.render(service).decode()
    assert "abcd1234efgh5678" not in body and "ghp_abcdef" not in body
    assert body.count("[REDACTED]") >= 7  # description, display name, argument, probe, error, globs
    assert '"config_state":"invalid"' in body
    # a value registered after an entry was kept is masked in it at the next request
    word = "plainwordthatbecomesasecret"
    service.update_details("time", expected_revision=connector.revision, description=f"see {word}")
    assert word in listing.render(service).decode()
    register_secret(word, transient=True)
    assert word not in listing.render(service).decode()
