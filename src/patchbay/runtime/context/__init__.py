"""Resources, prompts and what a host hands its model within a budget.

* :mod:`~patchbay.runtime.context.resources` - resource listing and the explicit include.
* :mod:`~patchbay.runtime.context.resource_uris` - resource URIs and RFC 6570 URI templates.
* :mod:`~patchbay.runtime.context.prompts` - prompt listing, ``/prompt`` parsing and expansion.
* :mod:`~patchbay.runtime.context.peer` - one connector as resource and prompt operations see it.
* :mod:`~patchbay.runtime.context.assembly` - ``Session``: the items a model sees, within a budget.
"""
