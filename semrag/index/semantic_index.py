"""SemanticIndex: documents, sentences, chunks, vectors, dense + BM25 indexes and the SSG.

One object owns everything retrievers need, computed once and batched:

* the documents and their sentence spans (from the chunker's splitter);
* one vector per sentence (the chunker reuses them through the embedder's cache);
* the chunks of the chunker, a vector per chunk, a FAISS index and a BM25 index over the
  same integer ids;
* the semantic similarity graph (window nodes, kNN edges, themes, bridges).

These are the index's *parts*. A write (``add_documents``, ``delete``) computes what it
adds once, makes one :class:`~semrag.index.change.Change` and hands it to every part in
``_commit``: the dense and BM25 indexes, the graph (:class:`~semrag.index.live_ssg.LiveSSG`)
and every follower (a :class:`~semrag.graph.KnowledgeGraph` built over the index). No
part rebuilds from scratch; each applies the change. Readers of the graph take one
:class:`SSGView` (a version) and never see a half-applied change.

``save(dir)`` writes a versioned directory atomically; ``SemanticIndex.load(dir)`` checks
format, checksums and the embedder's dimension.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag._steps import acall, adrive, call, drive
from semrag._validation import HasMethods, Options, validate_params
from semrag.chunking.base import BoundaryChunker
from semrag.embeddings import BaseEmbedder, as_embedder
from semrag.errors import ConfigError
from semrag.fingerprint import EmbedderFingerprint, stored_fingerprint
from semrag.index._ingest import Ingestion
from semrag.index._parts import Parts
from semrag.index._reads import Reads
from semrag.index._reembed import reembedding
from semrag.index._saved import Saving
from semrag.index._search import Search
from semrag.index._ssg_view import SSGAccess, SSGView
from semrag.index._versioned import Versioned
from semrag.index.corpus import Corpus
from semrag.index.external import StoreBackedDense, VectorClient
from semrag.index.live_ssg import LiveSSG
from semrag.index.part_set import PartSet
from semrag.index.passages import PassagePhrases
from semrag.index.pieces import PieceIndex, check_split
from semrag.index.sparse import IDF_VARIANTS, BM25Index
from semrag.index.ssg import SSGConfig
from semrag.llm import LLM

__all__ = ["SSGView", "SemanticIndex"]

Floats = npt.NDArray[np.float32]


class SemanticIndex(Reads, Parts, Ingestion, Search, SSGAccess, Versioned, Saving):
    """Everything the retrievers search, built once and kept in step.

    Args:
        chunker: any semrag chunker; default ``SemanticChunker(embedder)``.
        embedder: the embedder for sentences, chunks and queries; default the chunker's,
            or the packaged all-MiniLM-L6-v2.
        ssg: the semantic similarity graph (what :class:`~semrag.SSGRetriever` walks): an
            :class:`~semrag.index.ssg.SSGConfig`, ``True`` for the defaults, or ``False``
            (the default: the default retrievers do not read it; add it later with
            ``index.enable("ssg")``, from the kept sentence vectors).
        dense: ``"auto"`` (the default: exact inner product until the index holds
            :data:`~semrag.index.dense.AUTO_HNSW_ROWS` chunks, 50,000, then an HNSW graph,
            built once by the change that gets there), ``"flat"`` (always exact),
            ``"hnsw"`` (always approximate), or a
            :class:`~semrag.index.external.VectorClient`: the dense channel on a vector
            store you already run (the adapters wrap LangChain and LlamaIndex stores).
        sparse: the BM25 idf: ``"okapi"`` (as rank-bm25 scores; a term in more than half
            the chunks scores 0 or near it, which on a corpus of a few chunks is most
            terms) or ``"lucene"`` (always positive, as Lucene and Elasticsearch score;
            use it for small corpora). See :class:`~semrag.index.sparse.BM25Index`.
        chunk_vectors: ``"embed"`` embeds each chunk's text (the model truncates long
            chunks); ``"mean"`` averages the chunk's sentence vectors (no extra cost, no
            truncation).
        theme_llm: an :class:`~semrag.llm.LLM` that names document themes; without one,
            themes are TF-IDF keywords.
        on_llm_error: when the theme LLM fails for a document: ``"fallback"`` (its
            keyword themes are used and :attr:`notes` says so) or ``"raise"``.
        pieces: ``(max_tokens, overlap_tokens)``: also keep every chunk cut again into
            small overlapping pieces with their vectors, as SKETCH searches them (the
            paper: ``(100, 16)``; see :class:`~semrag.index.pieces.PieceIndex`). Each
            change splits and embeds its own documents' pieces, and they are saved with
            the index, so no SKETCH query with that split embeds a piece. ``None``
            (default): a :class:`~semrag.retrieval.SketchRetriever` makes them itself on
            its first query after each change.
        passages: also keep every chunk's entity phrases and the phrase names' vectors,
            what :class:`~semrag.retrieval.PPRRetriever` (``GraphRetriever()``'s default)
            builds its passage graph from (see :class:`~semrag.index.passages.PassagePhrases`).
            Each change finds its own documents' phrases and embeds their new names, and
            they are saved with the index, so a retriever (in this process or one that
            loads the index) finds no phrase and embeds no name. ``False`` (default): the
            first ``PPRRetriever`` query enables the part (:meth:`enable`), and from then
            on it is kept the same way.
        sentence_dtype: how the sentence vectors are held (what IAR's sentence scores,
            SPC, local search and a later ``enable("ssg")`` read): ``"float16"`` (the
            default without an SSG: half the memory; on the development sets a sentence
            score moves by 6e-5 at most and IAR's top 10 do not change) or
            ``"float32"``. With an SSG its rows are the sentence vectors and
            ``SSGConfig(vector_dtype=...)`` decides (leave this out).
        show_progress: progress bars on long builds.

    Attributes:
        notes: every fallback taken while indexing, with its reason.

    Examples:
        >>> from semrag import Document
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> docs = [Document("a", "Cats purr. Cats nap."), Document("b", "Stocks fell.")]
        >>> index.add_documents(docs)
        >>> [h.chunk.doc_id for h in index.search("stocks", k=1)]
        ['b']
    """

    def __init__(
        self,
        chunker: BoundaryChunker | None = None,
        embedder: Any = None,
        *,
        ssg: SSGConfig | bool = False,
        dense: str | VectorClient = "auto",
        sparse: str = "okapi",
        chunk_vectors: str = "embed",
        theme_llm: LLM | None = None,
        on_llm_error: str = "fallback",
        pieces: tuple[int, int] | None = None,
        passages: bool = False,
        sentence_dtype: str | None = None,
        show_progress: bool = False,
    ) -> None:
        from semrag.chunking.semantic import SemanticChunker

        p = validate_params(
            "SemanticIndex",
            {
                "dense": [
                    Options("auto", "flat", "hnsw"),
                    HasMethods("upsert", "delete", "search"),
                ],
                "sparse": [Options(*IDF_VARIANTS)],
                "chunk_vectors": [Options("embed", "mean")],
                "theme_llm": [HasMethods("complete", "acomplete"), None],
                "on_llm_error": [Options("fallback", "raise")],
                "passages": [bool],
                "sentence_dtype": [Options("float16", "float32"), None],
                "show_progress": [bool],
            },
            {
                "dense": dense,
                "sparse": sparse,
                "chunk_vectors": chunk_vectors,
                "theme_llm": theme_llm,
                "on_llm_error": on_llm_error,
                "passages": passages,
                "sentence_dtype": sentence_dtype,
                "show_progress": show_progress,
            },
        )
        show_progress = p["show_progress"]
        self.on_llm_error = on_llm_error
        self.notes: list[str] = []

        if embedder is None and chunker is not None:
            self.embedder: BaseEmbedder = chunker.embedder
        else:
            self.embedder = as_embedder(embedder)
        self.chunker = chunker if chunker is not None else SemanticChunker(self.embedder)
        self.ssg_config: SSGConfig | None = SSGConfig() if ssg is True else (ssg or None)
        if self.ssg_config is not None and not isinstance(self.ssg_config, SSGConfig):
            raise ConfigError("ssg must be an SSGConfig, True or False")
        if (
            sentence_dtype is not None
            and self.ssg_config is not None
            and sentence_dtype != self.ssg_config.vector_dtype
        ):
            raise ConfigError(
                f"sentence_dtype={sentence_dtype!r} but the similarity graph holds the "
                f"sentence vectors as {self.ssg_config.vector_dtype}: with an SSG, set "
                "SSGConfig(vector_dtype=...) and leave sentence_dtype out"
            )
        self._sentence_dtype = sentence_dtype or "float16"
        self.dense_kind = dense if isinstance(dense, str) else StoreBackedDense.kind
        self.chunk_vectors = chunk_vectors
        self.theme_llm = theme_llm
        self.show_progress = show_progress
        self._corpus = Corpus()
        dim = self.embedder.dim
        self._part_set = PartSet(
            dim,
            self.dense_kind,
            BM25Index(idf=sparse),
            dense=None if isinstance(dense, str) else StoreBackedDense(dense, dim),
            ssg=LiveSSG(self.ssg_config, dim) if self.ssg_config else None,
            pieces=None
            if pieces is None
            else PieceIndex(
                check_split("SemanticIndex", pieces),
                self.chunker.tokenizer,
                self.embedder,
                self.dense_kind,
            ),
            passages=PassagePhrases(self.embedder) if passages else None,
        )
        self._fingerprint: EmbedderFingerprint | None = None  # see the fingerprint property
        self._publish_view()

    @property
    def sentence_dtype(self) -> str:
        """How the sentence vectors are held.

        The SSG's ``vector_dtype`` with an SSG (its rows are the sentence vectors), else the
        ``sentence_dtype`` the index was made with (``"float16"`` by default).
        """
        return self.ssg_config.vector_dtype if self.ssg_config else self._sentence_dtype

    @property
    def fingerprint(self) -> EmbedderFingerprint:
        """The fingerprint of the model that made the index's vectors.

        Saved with the index (and by :class:`~semrag.neo4j.Neo4jIndexStore`) and checked
        where an embedder meets the vectors again (see :mod:`semrag.fingerprint`). It is
        the embedder's own, unless the index was loaded with
        ``allow_embedder_mismatch=True``; :meth:`reembed` makes it the new model's.
        """
        if self._fingerprint is None:
            self._fingerprint = EmbedderFingerprint.of(self.embedder)
        return self._fingerprint

    def _adopt_fingerprint(
        self,
        saved: dict[str, Any] | None,
        *,
        dim: int,
        name: str,
        what: str,
        allow_mismatch: bool,
    ) -> None:
        """Take the fingerprint of saved vectors (:func:`~semrag.fingerprint.stored_fingerprint`).

        Raises:
            EmbedderMismatchError: if the embedder is another model.
        """
        self._fingerprint, note = stored_fingerprint(
            saved, self.embedder, dim=dim, name=name, what=what, allow_mismatch=allow_mismatch
        )
        if note is not None:
            self.notes.append(note)

    def reembed(
        self,
        embedder: Any,
        *,
        chunker: BoundaryChunker | None = None,
        show_progress: bool | None = None,
    ) -> None:
        """Move the index to another embedding model: every vector embedded again, one change.

        Every sentence, chunk, window, theme, SKETCH piece and passage-phrase vector is
        computed by ``embedder``; the documents, their sentences, chunks (offsets and
        texts) and themes stay as they are, BM25 and the graph follow. The result is the
        index a fresh build with the new model gives over the same chunks (to cut the
        documents again with a chunker that uses the new model, add them again instead:
        ``add_documents(docs, on_conflict="replace")``).

        It is one change of the living index: built beside the current version (readers
        keep answering from the old vectors with the old model meanwhile, and writes
        that land meanwhile are embedded too), then swapped in whole with the new
        embedder and :attr:`fingerprint`; followers such as a
        :class:`~semrag.neo4j.Neo4jIndexStore` write it as any change. A failure or a
        kill before the swap leaves the old index; a save is the old or the new one
        (saves are atomic). Chunk ids are new.

        Args:
            embedder: the new model (any embedder :class:`SemanticIndex` takes).
            chunker: the chunker for documents added later; default the index's own, or,
                when it embeds with the index's old model (the default
                ``SemanticChunker``), a copy of it with the new model.
            show_progress: a progress bar over the documents (default: the index's
                ``show_progress``).

        Raises:
            ConfigError: for an index whose dense channel is the user's vector store (it
                embeds the chunks itself: rebuild the store), or one followed by a
                knowledge graph (it embeds entity names with the old model: unfollow it,
                re-embed, then build it again over the index).
            EmbeddingError: if the new embedder misbehaves (the index is left as it was).

        Examples:
            >>> from semrag import SemanticIndex
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder(dim=32))
            >>> index.add_documents(["Bees dance.", "Rockets fly."])
            >>> index.reembed(FakeEmbedder(dim=64))
            >>> index.embedder.dim, index.fingerprint.dim
            (64, 64)
        """
        drive(reembedding(self, embedder, chunker, show_progress), functools.partial(call, None))

    async def areembed(
        self,
        embedder: Any,
        *,
        chunker: BoundaryChunker | None = None,
        show_progress: bool | None = None,
    ) -> None:
        """Async twin of :meth:`reembed` (the embedder's async path; CPU work off the loop)."""
        steps = reembedding(self, embedder, chunker, show_progress)
        await adrive(steps, functools.partial(acall, None))

    def read(self, *, followers: bool = False) -> contextlib.AbstractContextManager[None]:
        """Read one version of the index for the length of a ``with`` block.

        Retrievers that read several parts for one query (IAR, PPR) hold it, so every
        hit comes from one version. Many readers share it; a commit waits for the
        readers inside and keeps new ones out only while it swaps its staged parts in.

        Args:
            followers: also read the parts that follow the index (the knowledge graph of
                :meth:`KnowledgeGraph.build`) at the same version. SKETCH and community
                search hold it. Such readers also wait while a commit writes its change
                to the followers (the graph's ledger update and store write, not its
                extraction, which runs before); other readers do not. Take it as the
                outermost read of a thread (a ``followers`` read inside a plain one is a
                :class:`RuntimeError`: it could deadlock with a commit).

        Raises:
            ConfigError: ``followers=True`` inside a plain read of the same thread.

        Examples:
            >>> from semrag.testing import FakeEmbedder
            >>> index = SemanticIndex(embedder=FakeEmbedder())
            >>> index.add_documents(["Bees make honey."])
            >>> with index.read():
            ...     dense, sparse = index.search("bees", k=1), index.search_sparse("bees", k=1)
            >>> dense[0].chunk == sparse[0].chunk
            True
        """
        return self._corpus.read(followers=followers)

    def __repr__(self) -> str:
        return (
            f"SemanticIndex(documents={len(self)}, chunks={self._corpus.n_chunks}, "
            f"chunker={self.chunker!r}, ssg={self.ssg_config is not None})"
        )
