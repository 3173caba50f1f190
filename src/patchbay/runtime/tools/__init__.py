"""Tools as a model API sees them: per-tool definitions, and the one-tool proxy form."""
