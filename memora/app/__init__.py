"""The session and the turn: ``Memora``, its state, recall, the undo log, the session file, erasure."""
