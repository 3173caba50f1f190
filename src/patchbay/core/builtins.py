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

__all__ = ["BUILTINS", "BuiltinSpec", "DataSource", "builtin_spec", "builtin_target"]


@dataclass(frozen=True, slots=True)
class DataSource:
    """One public service a built-in reaches, and the conditions its data comes under.

    Attributes:
        name: the service's own name (``"Europe PMC"``).
        url: its home page (https).
        terms_url: its terms of use (https).
        licence: the licence of the data it returns, in a few words (``"CC0 1.0"``; ``"varies
            per article"`` where each record carries its own).
        licence_url: where that licence, or the per-record licensing, is stated (https).
    """

    name: str
    url: str
    terms_url: str
    licence: str
    licence_url: str


@dataclass(frozen=True, slots=True)
class BuiltinSpec:
    """One built-in connector of the catalogue.

    Attributes:
        name: the connector name it is registered under (``validate_connector_name``).
        display_name: shown in the CLI and on the settings page.
        module: the ``python -m`` module that serves it (under ``patchbay.connectors``).
        description: one sentence: what it searches.
        data_sources: the public services it reaches, each with its terms and licence links.
        terms_url: the terms of use of its main data source (https), seeded into the registry.
        enabled_by_default: the ``enabled`` setting it is first created with.
        optional_env: environment variables it reads when a credential binding supplies them
            (suggested binding targets, e.g. ``NCBI_API_KEY``); never stored in config.
    """

    name: str
    display_name: str
    module: str
    description: str
    data_sources: tuple[DataSource, ...]
    terms_url: str
    enabled_by_default: bool
    optional_env: tuple[str, ...] = ()


_CC0 = "https://creativecommons.org/publicdomain/zero/1.0/"
_CC_BY = "https://creativecommons.org/licenses/by/4.0/"
_EBI_TERMS = "https://www.ebi.ac.uk/about/terms-of-use/"
_ENSEMBL_TERMS = "https://www.ensembl.org/info/about/legal/disclaimer.html"
_ENSEMBL_DATA_POLICY = "https://www.ensembl.org/info/about/legal/index.html"

EUROPE_PMC = DataSource(
    "Europe PMC",
    "https://europepmc.org",
    "https://europepmc.org/Copyright",
    "varies per article (the open access subset is under Creative Commons licences)",
    "https://europepmc.org/downloads/openaccess",
)
BIORXIV = DataSource(
    "bioRxiv",
    "https://www.biorxiv.org",
    "https://www.biorxiv.org/about-biorxiv",
    "chosen per preprint by its authors",
    "https://www.biorxiv.org/about/FAQ",
)
MEDRXIV = DataSource(
    "medRxiv",
    "https://www.medrxiv.org",
    "https://www.medrxiv.org/content/about-medrxiv",
    "chosen per preprint by its authors",
    "https://www.medrxiv.org/content/faq",
)
PUBMED = DataSource(
    "PubMed (NCBI E-utilities)",
    "https://pubmed.ncbi.nlm.nih.gov",
    "https://www.ncbi.nlm.nih.gov/home/about/policies/",
    "NLM terms; abstracts may be under their publishers' copyright",
    "https://www.nlm.nih.gov/databases/download/terms_and_conditions.html",
)
OPENALEX = DataSource("OpenAlex", "https://openalex.org", "https://openalex.org/terms", "CC0 1.0", _CC0)
MYGENE = DataSource(
    "MyGene.info",
    "https://mygene.info",
    "https://mygene.info/terms/",
    "varies per upstream source",
    "https://docs.mygene.info/en/latest/doc/data.html",
)
EBI_OLS = DataSource(
    "EBI OLS",
    "https://www.ebi.ac.uk/ols4",
    _EBI_TERMS,
    "each ontology's own licence",
    "https://www.ebi.ac.uk/ols4/ontologies",
)
REACTOME = DataSource("Reactome", "https://reactome.org", "https://reactome.org/license", "CC BY 4.0", _CC_BY)
ENSEMBL_REST = DataSource(
    "Ensembl REST",
    "https://rest.ensembl.org",
    _ENSEMBL_TERMS,
    "no restrictions (Ensembl data policy)",
    _ENSEMBL_DATA_POLICY,
)
ENSEMBL_VEP = DataSource(
    "Ensembl VEP",
    "https://www.ensembl.org/info/docs/tools/vep/index.html",
    _ENSEMBL_TERMS,
    "no restrictions (Ensembl data policy)",
    _ENSEMBL_DATA_POLICY,
)
CLINICAL_TRIALS = DataSource(
    "ClinicalTrials.gov",
    "https://clinicaltrials.gov",
    "https://clinicaltrials.gov/about-site/terms-conditions",
    "public domain (US government), with the exceptions its terms list",
    "https://clinicaltrials.gov/about-site/terms-conditions",
)
RCSB_PDB = DataSource("RCSB PDB", "https://www.rcsb.org", "https://www.rcsb.org/pages/usage-policy", "CC0 1.0", _CC0)
ALPHAFOLD_DB = DataSource("AlphaFold DB", "https://alphafold.ebi.ac.uk", _EBI_TERMS, "CC BY 4.0", _CC_BY)
CELLGUIDE = DataSource(
    "CZ CELLxGENE CellGuide",
    "https://cellxgene.cziscience.com/cellguide",
    "https://cellxgene.cziscience.com/tos",
    "CC BY 4.0",
    _CC_BY,
)

BUILTINS: tuple[BuiltinSpec, ...] = (
    BuiltinSpec(
        name="paper-search",
        display_name="Paper Search",
        module="patchbay.connectors.paper_search",
        description="Search papers and preprints: Europe PMC (search, open full text), bioRxiv/medRxiv, PubMed.",
        data_sources=(EUROPE_PMC, BIORXIV, MEDRXIV, PUBMED),
        terms_url=EUROPE_PMC.terms_url,
        enabled_by_default=True,
        optional_env=("NCBI_API_KEY", "PATCHBAY_SCIENCE_CONTACT"),
    ),
    BuiltinSpec(
        name="literature-graph",
        display_name="Literature Graph",
        module="patchbay.connectors.literature_graph",
        description="The OpenAlex scholarly graph: works search, work detail, references, author search.",
        data_sources=(OPENALEX,),
        terms_url=OPENALEX.terms_url,
        enabled_by_default=False,
        optional_env=("OPENALEX_API_KEY", "PATCHBAY_SCIENCE_CONTACT"),
    ),
    BuiltinSpec(
        name="genes-ontologies",
        display_name="Genes & Ontologies",
        module="patchbay.connectors.genes_ontologies",
        description="Genes, ontology terms and pathways: MyGene.info gene search and detail, EBI OLS terms, Reactome.",
        data_sources=(MYGENE, EBI_OLS, REACTOME),
        terms_url=_EBI_TERMS,
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="genomes",
        display_name="Genomes",
        module="patchbay.connectors.genomes",
        description="Ensembl REST: feature lookup by id or symbol, variant effect prediction (VEP), region overlap.",
        data_sources=(ENSEMBL_REST, ENSEMBL_VEP),
        terms_url=_ENSEMBL_TERMS,
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="clinical-trials",
        display_name="Clinical Trials",
        module="patchbay.connectors.clinical_trials",
        description="ClinicalTrials.gov (API v2): study search, study detail, eligibility search.",
        data_sources=(CLINICAL_TRIALS,),
        terms_url=CLINICAL_TRIALS.terms_url,
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="structures-interactions",
        display_name="Structures & Interactions",
        module="patchbay.connectors.structures_interactions",
        description="Protein structures: RCSB PDB search and entry detail, AlphaFold DB predictions.",
        data_sources=(RCSB_PDB, ALPHAFOLD_DB),
        terms_url=RCSB_PDB.terms_url,
        enabled_by_default=False,
        optional_env=("PATCHBAY_SCIENCE_CONTACT",),
    ),
    BuiltinSpec(
        name="cellguide",
        display_name="CellGuide",
        module="patchbay.connectors.cellguide",
        description="CZ CELLxGENE CellGuide: cell type search and detail, computational and canonical marker genes.",
        data_sources=(CELLGUIDE,),
        terms_url=CELLGUIDE.terms_url,
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
