"""Helpers the tests share: the fake OpenAI server, scripted answers, child
processes and threads, the local model as the session shares it. Test modules
import from here, never from each other."""
