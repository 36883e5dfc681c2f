"""Moving an index to another embedding model: :meth:`SemanticIndex.reembed`.

The new model's index is built beside the current one (a *shadow*: an empty index made
as this one is by :func:`shadow_options`, filled with the same documents, sentence spans,
chunks and themes, embedded by the new model), then swapped in as one change. Readers
answer from the old version until the swap; writes that land meanwhile are embedded too
before it.
"""

from __future__ import annotations

from typing import Any

from semrag.chunking.base import BoundaryChunker
from semrag.embeddings import Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.index.change import EmbedsNames
from semrag.index.index_reader import IndexReader
from semrag.index.parts.dense import DenseIndex
from semrag.index.parts.external import StoreBackedDense
from semrag.index.parts.sparse import BM25Index


def shadow_options(
    index: IndexReader, embedder: Embedder, chunker: BoundaryChunker | None
) -> tuple[dict[str, Any], DenseIndex, BM25Index]:
    """How to make an empty index as ``index`` is, with another embedder (what reembed fills).

    Returns:
        The ``SemanticIndex`` arguments, and the empty dense and BM25 parts it takes
        (``PartSet.use``): the same kinds and settings, the new model's dimension.

    Raises:
        ConfigError: if ``index`` cannot be re-embedded (see ``SemanticIndex.reembed``).
    """
    new = as_embedder(embedder)
    dense = index.dense
    if isinstance(dense, StoreBackedDense):
        raise ConfigError(
            "this index's dense channel is a vector store, which embeds the chunks itself: "
            "build a new store with the new model and a new index over it"
        )
    embeds = [f for f in index.followers if isinstance(f, EmbedsNames) and f.embedder is not None]
    if embeds:
        raise ConfigError(
            f"{type(embeds[0]).__name__} follows this index and embeds names with the old "
            "model: index.unfollow(it), reembed, then build it again over the index"
        )
    if chunker is None:
        old = index.chunker
        chunker = old.with_embedder(new) if old.embedder is index.embedder else old
    pieces = index.piece_index
    options = {
        "chunker": chunker,
        "embedder": new,
        "ssg": index.ssg_config or False,
        "dense": dense.kind,
        "chunk_vectors": index.chunk_vectors,
        "theme_llm": index.theme_llm,
        "on_llm_error": index.on_llm_error,
        "pieces": None if pieces is None else pieces.split,
        "passages": "passages" in index.parts,
        "sentence_dtype": None if index.ssg_config else index.sentence_dtype,
        "show_progress": index.show_progress,
    }
    bm25 = index.sparse
    return (
        options,
        DenseIndex(**{**dense.config(), "dim": new.dim}),
        BM25Index(k1=bm25.k1, b=bm25.b, epsilon=bm25.epsilon, idf=bm25.idf),
    )
