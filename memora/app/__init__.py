"""The application: the ``Memora`` session, extraction, commands, the terminal, reports, learners, export/import."""
