"""Memora's package: ``engine`` (files, settings, records, time, tokens, text, the
stores' parts, retrieval, the model client) and ``app`` (the tutor itself). The
design card's five modules (``chatbot``, ``memory``, ``long_term_memory``,
``user_profile``, ``context_builder``) stay at the repository root and sit
between the two: they use the engine, and the app uses them."""

__version__ = "0.14.0"
