"""adapters store layer."""
