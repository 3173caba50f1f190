"""The governed call path: which tool a name means, whether it may run, and running it."""
