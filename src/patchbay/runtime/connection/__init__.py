"""The supervised connection of a runtime to one MCP server: its start, restarts, requests and catalog.

* :mod:`~patchbay.runtime.connection.server_connection` - ``ServerConnection``: owner task, lifecycle.
* :mod:`~patchbay.runtime.connection.exchange` - ``RequestExchange``: one request, its timeouts.
* :mod:`~patchbay.runtime.connection.restart_policy` - whether and when a crashed server restarts.
* :mod:`~patchbay.runtime.connection.catalog_refresh` - ``CatalogRefresh``: re-list on list_changed.
* :mod:`~patchbay.runtime.connection.access` - what one connection may reach, with which secrets.
* :mod:`~patchbay.runtime.connection.hooks` - a person's browser and answers, lent by the host.
* :mod:`~patchbay.runtime.connection.elicitation` - which call a server's elicitation is for, who answers.

Design: docs/connections.md
"""
