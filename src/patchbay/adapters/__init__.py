"""adapters layer."""
