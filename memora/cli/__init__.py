"""The terminal: the commands, which lines are commands, the consoles, the memory page, reports."""
