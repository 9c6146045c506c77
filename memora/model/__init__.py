"""The model: the openai client, the servers it talks to, structured answers, prompts, tokens, embeddings."""
