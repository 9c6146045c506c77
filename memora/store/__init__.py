"""The memory store's parts: the SQLite catalog, Chroma, the search index seam, lexical terms,
retrieval, the deletion log."""
