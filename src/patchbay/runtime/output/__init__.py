"""Guarding what a tool result may bring in: size bounds, outputSchema checks, artifacts.

* :mod:`~patchbay.runtime.output.guard` - the output guard: cut a result over the size bounds.
* :mod:`~patchbay.runtime.output.artifacts` - ``ArtifactStore``: whole results, content-addressed.
* :mod:`~patchbay.runtime.output.schema_check` - ``structuredContent`` against ``outputSchema``.
"""
