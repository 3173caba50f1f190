"""The governed call path: which tool a name means, whether it may run, and running it.

* :mod:`~patchbay.runtime.calls.router` - ``ToolRouter``: a name to exactly one tool, or refused.
* :mod:`~patchbay.runtime.calls.permissions` - ``PermissionEngine``: allow, ask or deny per call.
* :mod:`~patchbay.runtime.calls.executor` - ``ToolExecutor``: one call from its name to its result.
* :mod:`~patchbay.runtime.calls.result` - a call's result type and its event chain.
"""
