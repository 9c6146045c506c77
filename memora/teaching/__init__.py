"""Teaching: the mistake ledger, FSRS scheduling, daily activity, the drill, Anki decks, progress."""
