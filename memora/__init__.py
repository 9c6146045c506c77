"""Memora's package, in layers; each imports only the ones below it (import-linter checks it):

``cli`` the terminal · ``data`` export, import, learners · ``app`` the session and the turn ·
``reading`` reading memories from the conversation · ``teaching`` the mistake ledger and review ·
``store`` the memory store's parts · ``model`` the model client · ``core`` settings, records, files, time, text.

The design card's five modules (``chatbot``, ``memory``, ``long_term_memory``,
``user_profile``, ``context_builder``) stay at the repository root and sit between
``store`` and ``teaching``: they use the layers below, and the ones above use them."""

__version__ = "0.14.0"
