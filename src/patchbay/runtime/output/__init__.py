"""Guarding what a tool result may bring in: size bounds, outputSchema checks, artifacts."""
