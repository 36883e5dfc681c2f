"""Saving and loading a :class:`~semrag.SemanticIndex`: a directory, written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag.chunking.base import BoundaryChunker
from semrag.errors import ConfigError, StoreError
from semrag.index.change import Floats, IndexedDocument
from semrag.index.dense import DenseIndex
from semrag.index.external import StoreBackedDense, VectorClient
from semrag.index.live_ssg import LiveSSG
from semrag.index.passages import PassagePhrases
from semrag.index.persist import atomic_directory, read_manifest
from semrag.index.pieces import PieceIndex
from semrag.index.sparse import BM25Index
from semrag.index.ssg import SSGConfig
from semrag.llm import LLM
from semrag.types import Chunk, Document, Span

if TYPE_CHECKING:
    from semrag.index.semantic_index import SemanticIndex

FORMAT_VERSION = 3  # 3: the embedder's fingerprint; 2: the graph's neighbour lists (1 is rebuilt)
KIND = "semrag.SemanticIndex"


class Saving:
    """``save`` and ``load`` of a :class:`~semrag.SemanticIndex`."""

    # -- persistence ------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the index to ``directory`` atomically (a versioned format, no pickle).

        A crash during the write leaves the previous save intact (or nothing), never a
        directory that loads with missing or corrupt parts.
        """
        from semrag._version import __version__

        manifest = {
            "kind": KIND,
            "format_version": FORMAT_VERSION,
            "library_version": __version__,
            "embedder": self.fingerprint.name,
            "fingerprint": self.fingerprint.to_dict(),
            "dim": self.embedder.dim,
            "chunker": repr(self.chunker),
            "ssg": self.ssg_config.to_dict() if self.ssg_config else None,
            "dense": self.dense.config(),
            "chunk_vectors": self.chunk_vectors,
            "sentence_dtype": self.sentence_dtype,
            "next_id": self._corpus.next_id,
            "pieces": (
                None
                if (kept := self._part_set.pieces) is None
                else {"split": list(kept.split), "dense": kept.dense.config()}
            ),
            "passages": None
            if (phrases := self._part_set.passages) is None
            else {"titles": phrases.titles},
        }
        with self._corpus.commit_lock, atomic_directory(directory, manifest) as tmp:
            entries = self._corpus.records()
            with open(tmp / "documents.jsonl", "w", encoding="utf-8") as f:
                for e in entries:
                    record = {
                        "id": e.doc.id,
                        "text": e.doc.text,
                        "metadata": dict(e.doc.metadata),
                        "sentences": [[s.start, s.end] for s in e.sentences],
                        "chunks": [
                            [c.start, c.end, c.token_count, c.sentence_start, c.sentence_end]
                            for c in e.chunks
                        ],
                        "chunk_ids": e.chunk_ids,
                        "node_ranges": [list(r) for r in e.node_ranges],
                        "themes": e.themes,
                    }
                    if any(c.metadata != e.doc.metadata for c in e.chunks):  # pre-split input
                        record["chunk_metadata"] = [dict(c.metadata) for c in e.chunks]
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
            dim = self.embedder.dim
            for name, parts, dtype in (
                (
                    "sentence_vectors.npy",
                    [e.sentence_vectors for e in entries],
                    self.sentence_dtype,
                ),
                ("node_vectors.npy", [e.node_vectors for e in entries], "float32"),
                ("theme_vectors.npy", [e.theme_vector[None, :] for e in entries], "float32"),
            ):
                arr = np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)
                np.save(tmp / name, arr.astype(dtype), allow_pickle=False)
            with self._corpus.lock.read():
                for part in self.parts.values():
                    part.save(tmp)
        return Path(directory)

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        embedder: Any = None,
        chunker: BoundaryChunker | None = None,
        theme_llm: LLM | None = None,
        dense: VectorClient | None = None,
        allow_embedder_mismatch: bool = False,
    ) -> SemanticIndex:
        """Load an index written by :meth:`save`.

        The save records the fingerprint of the model that made its vectors
        (:mod:`semrag.fingerprint`); the embedder must be that model (another model of the
        same dimension would answer every query wrongly), or the load raises.

        Args:
            directory: the saved index.
            embedder: the embedder for new documents and queries; default the packaged
                MiniLM. It must be the model the index was built with (checked by its
                vectors of a few probe texts); to move to another model, load with the
                old one and call :meth:`reembed`.
            chunker: the chunker for documents added later; default ``SemanticChunker``.
            theme_llm: optional theme LLM for documents added later.
            dense: the vector store of an index saved with one (required then; it must
                hold the entries it held at the save: the store persists them itself).
            allow_embedder_mismatch: load with another model anyway (for a model you know
                shares the saved one's vector space); :attr:`notes` records it, and the
                index keeps the saved fingerprint.

        Raises:
            EmbedderMismatchError: if the embedder is not the model the index was built
                with (a :class:`ConfigError`; it names both models).
            ConfigError: on a missing directory, a newer format or a dimension mismatch.
            StoreError: if the save is incomplete or a file is corrupt.
        """
        from semrag._version import __version__

        directory = Path(directory)
        m = read_manifest(
            directory, kind=KIND, format_version=FORMAT_VERSION, library_version=__version__
        )
        try:
            index = cls._from_saved(
                directory, m, embedder, chunker, theme_llm, dense, allow_embedder_mismatch
            )
        except (KeyError, IndexError, TypeError, ValueError, OSError, StoreError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise StoreError(
                f"{directory} does not hold a consistent index ({type(exc).__name__}: {exc}); "
                "it was edited or written by something else"
            ) from exc
        return index

    @classmethod
    def _from_saved(
        cls,
        directory: Path,
        m: dict[str, Any],
        embedder: Any,
        chunker: BoundaryChunker | None,
        theme_llm: LLM | None,
        client: VectorClient | None,
        allow_embedder_mismatch: bool,
    ) -> SemanticIndex:
        ssg_cfg = SSGConfig(**m["ssg"]) if m["ssg"] else False
        external = m["dense"]["kind"] == StoreBackedDense.kind
        if external != (client is not None):
            raise ConfigError(
                "this index keeps its vectors in a vector store: pass it as dense="
                if external
                else "dense= is for an index saved with a vector store; this one was not"
            )
        index = cls(
            chunker,
            embedder,
            ssg=ssg_cfg,
            dense=client if client is not None else m["dense"]["kind"],
            chunk_vectors=m["chunk_vectors"],
            # saves before the option held float32 sentence vectors
            sentence_dtype=None if ssg_cfg else m.get("sentence_dtype", "float32"),
            theme_llm=theme_llm,
            pieces=tuple(m["pieces"]["split"]) if m.get("pieces") else None,
        )
        index._adopt_fingerprint(
            m.get("fingerprint"),
            dim=int(m["dim"]),
            name=str(m["embedder"]),
            what=f"the index saved in {directory}",
            allow_mismatch=allow_embedder_mismatch,
        )
        svecs = np.load(directory / "sentence_vectors.npy", allow_pickle=False)
        svecs = svecs.astype(index.sentence_dtype, copy=False)  # as the index holds them
        nvecs = np.load(directory / "node_vectors.npy", allow_pickle=False)
        tvecs = np.load(directory / "theme_vectors.npy", allow_pickle=False)
        dense = (
            StoreBackedDense.load(directory, client, int(m["dim"]))
            if client is not None
            else DenseIndex.load(directory, m["dense"])
        )
        parts = index._part_set
        parts.use(dense=dense, sparse=BM25Index.load(directory))  # with its saved idf variant
        records = []
        with open(directory / "documents.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                doc = Document(r["id"], r["text"], r["metadata"])
                metas = r.get("chunk_metadata") or [doc.metadata] * len(r["chunks"])
                chunks = [
                    Chunk(doc.id, a, b, doc.text[a:b], tc, i, ss, se, meta)
                    for i, ((a, b, tc, ss, se), meta) in enumerate(
                        zip(r["chunks"], metas, strict=True)
                    )
                ]
                records.append((doc, r, chunks))
        n_sent = sum(len(r["sentences"]) for _, r, _ in records)
        n_node = sum(len(r["node_ranges"]) for _, r, _ in records)
        counts = (n_sent, n_node, len(records))
        if counts != (len(svecs), len(nvecs), len(tvecs)):
            raise StoreError(
                f"documents.jsonl describes {counts} sentences / nodes / documents, the "
                f"vector files hold {(len(svecs), len(nvecs), len(tvecs))}"
            )
        chunk_ids = {int(i) for _, r, _ in records for i in r["chunk_ids"]}
        if set(dense.ids.tolist()) != chunk_ids or set(parts.sparse.ids) != chunk_ids:
            raise StoreError("the dense / BM25 indexes and documents.jsonl hold different chunks")
        next_id = int(m["next_id"])
        if chunk_ids and max(chunk_ids) >= next_id:
            raise StoreError(f"next_id {next_id} is not above every chunk id")
        entries = []
        s_pos = n_pos = 0
        for t_pos, (doc, r, chunks) in enumerate(records):
            ids = [int(i) for i in r["chunk_ids"]]
            spans = [Span(a, b) for a, b in r["sentences"]]
            ranges = [(a, b) for a, b in r["node_ranges"]]
            entry = IndexedDocument(
                doc,
                spans,
                svecs[s_pos : s_pos + len(spans)],
                chunks,
                ids,
                dense.rows_view(ids),
                ranges,
                nvecs[n_pos : n_pos + len(ranges)],
                list(r["themes"]),
                tvecs[t_pos],
            )
            s_pos += len(spans)
            n_pos += len(ranges)
            entries.append(entry)
        index._corpus.restore(entries, next_id)
        held = index._corpus.records()
        if m.get("pieces"):
            pieces = PieceIndex.load(
                directory,
                held,
                tokenizer=index.chunker.tokenizer,
                embedder=index.embedder,
                config=m["pieces"]["dense"],
            )
            parts.keep("pieces", pieces, replace=True)
        if m.get("passages"):
            phrases = PassagePhrases.load(
                directory, held, embedder=index.embedder, version=index._corpus.version
            )
            parts.keep("passages", phrases, replace=True)
        if ssg_cfg:
            parts.keep("ssg", index._ssg_from_saved(directory, ssg_cfg, nvecs, svecs), replace=True)
            index._publish_view()
        index._share_vectors(())
        return index

    def _ssg_from_saved(
        self, directory: Path, cfg: SSGConfig, node_vectors: Floats, sentence_vectors: Floats
    ) -> LiveSSG:
        entries = self._corpus.records()
        saved = directory / "ssg.npz"
        current = False
        if saved.exists():
            with np.load(saved, allow_pickle=False) as z:
                current = "intra_cols" in z.files
        if not current:  # format 1 kept only the CSR graph: rebuild the lists once
            return LiveSSG.fresh(cfg, self.embedder.dim, entries)
        ssg = LiveSSG.load(
            directory, cfg, node_vectors=node_vectors, sentence_matrix=sentence_vectors
        )
        if ssg.doc_ids != [e.id for e in entries]:
            raise StoreError("the graph and documents.jsonl list different documents")
        return ssg
