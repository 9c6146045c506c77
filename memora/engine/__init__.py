"""Files, settings, records, time, tokens, text, the stores' parts, retrieval and the model client.

Nothing here imports the root modules or ``memora.app``."""
