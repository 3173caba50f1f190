"""Resources, prompts and what a host hands its model within a budget."""
