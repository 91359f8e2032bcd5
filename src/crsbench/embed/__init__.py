"""The embedding step: images through a frozen encoder in batches (`extraction`), each matrix cached
under its content hash (`cache`). Nothing downstream touches images or models."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "EmbeddingRequest": "cache", "Embedding": "cache", "EmbeddingCache": "cache", "CachedEmbedder": "cache",
    "EMBEDDING_VERSION": "cache",
})
