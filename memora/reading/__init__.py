"""Reading the conversation for memories: extraction, the reading queue, cues, slots, conflicts, profile proposals."""
