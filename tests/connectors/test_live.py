"""Live smoke suite: each built-in tool called once against the real public API, through the real
stdio server and a governed Runtime (no override: the real origins, the real egress guard).

Opt-in, never in CI: ``.venv/bin/pytest tests/connectors/test_live.py -m live``. Set
``PATCHBAY_SCIENCE_CONTACT`` in the environment to send a contact (it is passed as a binding).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from patchbay import Runtime, RuntimeServer, Settings
from patchbay.core.builtins import BUILTINS
from patchbay.core.credentials import CredentialBinding
from patchbay.core.models import ConnectorSettings, StdioTarget
from tests.support.recording import config

pytestmark = [pytest.mark.anyio, pytest.mark.live]

CALLS: dict[str, dict[str, Any]] = {
    "search_europepmc": {"query": "p53 apoptosis", "page_size": 2},
    "read_europepmc_fulltext": {"pmcid": "PMC3257301", "max_chars": 1000},
    "search_preprints": {"server": "biorxiv", "from_date": "2024-01-02", "to_date": "2024-01-02", "page_size": 2},
    "search_pubmed": {"query": "p53 apoptosis", "page_size": 2},
    "search_works": {"query": "open access", "page_size": 2},
    "get_work": {"work": "W2741809807"},
    "get_references": {"work": "W2741809807", "page_size": 2},
    "search_authors": {"query": "Heather Piwowar", "page_size": 2},
    "search_genes": {"query": "TP53", "page_size": 2},
    "search_ontology_terms": {"query": "apoptosis", "ontology": "go", "page_size": 2},
    "gene_pathways": {"identifier": "P04637", "page_size": 2},
    "lookup_feature": {"symbol": "TP53"},
    "predict_variant_effect": {"hgvs": "9:g.22125504G>C", "max_consequences": 2},
    "region_overlap": {"chromosome": "17", "start": 7661779, "end": 7687538, "page_size": 5},
    "search_cell_types": {"query": "neuron", "page_size": 2},
    "get_cell_type": {"cell_type": "CL:0000540"},
    "get_marker_genes": {"cell_type": "CL:0000540", "page_size": 2},
}
CALLS.update(
    {
        "search_studies": {"condition": "asthma", "page_size": 2},
        "get_study": {"nct_id": "NCT04280705"},
        "search_eligibility": {"condition": "breast cancer", "age_years": 45, "sex": "FEMALE", "page_size": 2},
        "search_structures": {"query": "hemoglobin", "method": "xray", "page_size": 2},
        "get_entry": {"pdb_id": "4HHB"},
        "get_alphafold_prediction": {"uniprot_accession": "P69905"},
    }
)

CASES = [
    (spec, tool.name)
    for spec in BUILTINS
    for tool in importlib.import_module(spec.module).TOOLS  # type: ignore[attr-defined]
]


@pytest.mark.parametrize(("spec", "tool"), CASES, ids=[f"{spec.name}.{tool}" for spec, tool in CASES])
async def test_each_tool_answers_from_its_real_api_with_provenance(tmp_path: Path, spec: Any, tool: str) -> None:
    contact = os.environ.get("PATCHBAY_SCIENCE_CONTACT", "")
    server = RuntimeServer(
        connector_id=f"id-{spec.name}",
        name=spec.name,
        target=StdioTarget(command=sys.executable, args=("-I", "-m", spec.module)),
        settings=ConnectorSettings(approval_mode="allow_all"),
        bindings=(CredentialBinding(delivery="env", name="PATCHBAY_SCIENCE_CONTACT", value=contact),)
        if contact
        else (),
    )
    with anyio.fail_after(90):
        async with Runtime(config(tmp_path, server), settings=Settings(home=tmp_path / "home")) as runtime:
            result = await runtime.call(f"mcp.{spec.name}.{tool}", CALLS[tool])
    record = result.structured_content
    assert record["provenance"]["endpoint"].startswith("https://")
    assert record["provenance"]["retrieved_at"].endswith("Z")
