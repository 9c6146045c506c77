"""What Chroma itself holds for a learner, read the way any other client would."""

from __future__ import annotations

from long_term_memory import collection_name


def chroma_collection(store):
    """The learner's Chroma collection, fetched by name through the store's connection."""
    return store.connection.collection(collection_name(store.user_id), create=False)
