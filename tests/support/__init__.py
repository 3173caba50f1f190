"""Helpers the tests share (fixtures stay in the conftest.py files).

- :mod:`tests.support.paths`: the repository and its fixture servers directory.
- :mod:`tests.support.servers`: fixture servers and the npm/PyPI peers, 127.0.0.1 only.
- :mod:`tests.support.processes`: OS-level process-group checks.
- :mod:`tests.support.waiting`: polling a real condition that has no event.
- :mod:`tests.support.events`: expected event chains.
- :mod:`tests.support.snapshots`: runtime snapshots written by a test.
- :mod:`tests.support.credentials`, :mod:`tests.support.egress`, :mod:`tests.support.oauth`: the
  credential, egress-audit and OAuth fixture servers and readers.
- :mod:`tests.support.api`, :mod:`tests.support.serve`: the REST API in process, and
  ``patchbay serve`` as a real process.
"""
