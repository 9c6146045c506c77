"""Helpers the tests share: the fake OpenAI server, scripted answers, child
processes and threads. Test modules import from here, never from each other."""
