"""Core: models, names, policy, errors, redaction, settings. Pure; imports nothing above it."""
