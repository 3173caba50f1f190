"""The catalogue of built-in connectors: which ones exist, how they start, what they are seeded with.

A built-in connector is an MCP server inside this package (``patchbay.connectors.<module>``),
started as an ordinary stdio connector: ``<the venv's python> -I -m patchbay.connectors.<module>``
(``-I``: isolated mode, so the workspace it runs in, which servers can write, is never on
``sys.path``). The control plane seeds the catalogue into the registry
(:mod:`patchbay.control.builtins`); nothing here does I/O.

``enabled_by_default`` applies only when a built-in is first created: a later catalogue upgrade
never touches a user's enable/disable choice, bindings, grants or cached catalog.

Design: docs/builtins.md
"""

from __future__ import annotations

from dataclasses import dataclass

from patchbay.core.models import StdioTarget

__all__ = ["BUILTINS", "BuiltinSpec", "builtin_spec", "builtin_target"]


@dataclass(frozen=True, slots=True)
class BuiltinSpec:
    """One built-in connector of the catalogue.

    Attributes:
        name: the connector name it is registered under (``validate_connector_name``).
        display_name: shown in the CLI and on the settings page.
        module: the ``python -m`` module that serves it (under ``patchbay.connectors``).
        description: one sentence: what it searches.
        data_sources: the public services it reaches, by name.
        terms_url: the data sources' terms of use (https).
        enabled_by_default: the ``enabled`` setting it is first created with.
        optional_env: environment variables it reads when a credential binding supplies them
            (suggested binding targets, e.g. ``NCBI_API_KEY``); never stored in config.
    """

    name: str
    display_name: str
    module: str
    description: str
    data_sources: tuple[str, ...]
    terms_url: str
    enabled_by_default: bool
    optional_env: tuple[str, ...] = ()


BUILTINS: tuple[BuiltinSpec, ...] = (
    BuiltinSpec(
        name="paper-search",
        display_name="Paper Search",
        module="patchbay.connectors.paper_search",
        description="Search papers and preprints: Europe PMC (search, open full text), bioRxiv/medRxiv, PubMed.",
        data_sources=("Europe PMC", "bioRxiv", "medRxiv", "PubMed (NCBI E-utilities)"),
        terms_url="https://europepmc.org/Copyright",
        enabled_by_default=True,
        optional_env=("NCBI_API_KEY", "PATCHBAY_SCIENCE_CONTACT"),
    ),
    BuiltinSpec(
        name="literature-graph",
        display_name="Literature Graph",
        module="patchbay.connectors.literature_graph",
        description="The OpenAlex scholarly graph: works search, work detail, references, author search.",
        data_sources=("OpenAlex",),
        terms_url="https://openalex.org/terms",
        enabled_by_default=False,
        optional_env=("OPENALEX_API_KEY", "PATCHBAY_SCIENCE_CONTACT"),
    ),
    BuiltinSpec(
        name="genes-ontologies",
        display_name="Genes & Ontologies",
        module="patchbay.connectors.genes_ontologies",
        description="Genes, ontology terms and pathways: MyGene.info gene search and detail, EBI OLS terms, Reactome.",
        data_sources=("MyGene.info", "EBI OLS", "Reactome"),
        terms_url="https://www.ebi.ac.uk/about/terms-of-use/",
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="genomes",
        display_name="Genomes",
        module="patchbay.connectors.genomes",
        description="Ensembl REST: feature lookup by id or symbol, variant effect prediction (VEP), region overlap.",
        data_sources=("Ensembl REST", "Ensembl VEP"),
        terms_url="https://www.ensembl.org/info/about/legal/disclaimer.html",
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="clinical-trials",
        display_name="Clinical Trials",
        module="patchbay.connectors.clinical_trials",
        description="ClinicalTrials.gov (API v2): study search, study detail, eligibility search.",
        data_sources=("ClinicalTrials.gov",),
        terms_url="https://clinicaltrials.gov/about-site/terms-conditions",
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="structures-interactions",
        display_name="Structures & Interactions",
        module="patchbay.connectors.structures_interactions",
        description="Protein structures: RCSB PDB search and entry detail, AlphaFold DB predictions.",
        data_sources=("RCSB PDB", "AlphaFold DB"),
        terms_url="https://www.rcsb.org/pages/usage-policy",
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="cellguide",
        display_name="CellGuide",
        module="patchbay.connectors.cellguide",
        description="CZ CELLxGENE CellGuide: cell type search and detail, computational and canonical marker genes.",
        data_sources=("CZ CELLxGENE CellGuide",),
        terms_url="https://cellxgene.cziscience.com/tos",
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
)
"""Every built-in connector, by name order of the catalogue."""


def builtin_spec(name: str) -> BuiltinSpec | None:
    """The catalogue entry registered under connector name ``name``; None for any other name."""
    return next((spec for spec in BUILTINS if spec.name == name), None)


def builtin_target(
    spec: BuiltinSpec, python: str, *, audit_file: str | None = None, connector_id: str | None = None
) -> StdioTarget:
    """The stdio target that starts ``spec``'s server with interpreter ``python`` (an absolute path,
    normally ``sys.executable`` of the process that seeds).

    With ``audit_file`` (the data home's ``egress-audit.jsonl``) and ``connector_id``, the server
    appends one metadata-only egress audit line per HTTP request it sends or the guard refuses.
    """
    args: tuple[str, ...] = ("-I", "-m", spec.module)
    if audit_file is not None and connector_id is not None:
        args += ("--audit-file", audit_file, "--connector-id", connector_id)
    return StdioTarget(command=python, args=args)
