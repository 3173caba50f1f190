"""The supervised connection of a runtime to one MCP server: its start, restarts, requests and catalog."""
