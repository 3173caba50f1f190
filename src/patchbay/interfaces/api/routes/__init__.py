"""The API's routes by area: ``connectors`` (CRUD, settings, disconnect), ``tools`` (probe, tools,
grants), ``imports`` (legacy config import), ``sessions`` (hosted workspace runtimes and the
governed call path), ``compat`` (deprecated projections), ``health`` (``GET /api/health``) and
``approvals`` (calls waiting for a person's answer)."""
