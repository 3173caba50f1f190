"""The session event log: writing it, and reading it back."""
