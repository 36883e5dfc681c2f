"""Saving and loading a :class:`~semrag.SemanticIndex`: functions over its corpus and parts.

:func:`save_index` writes a versioned directory atomically (no pickle); :func:`restore`
fills an empty index's :class:`~semrag.index.corpus.Corpus` and
:class:`~semrag.index.parts.part_set.PartSet` from one, checking that its files agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError, StoreError
from semrag.fingerprint import EmbedderFingerprint
from semrag.index.change import IndexedDocument
from semrag.index.corpus import Corpus
from semrag.index.index_reader import IndexReader
from semrag.index.parts.dense import DenseIndex
from semrag.index.parts.external import StoreBackedDense, VectorClient
from semrag.index.parts.live_ssg import LiveSSG
from semrag.index.parts.part_set import PartSet
from semrag.index.parts.passages import PassagePhrases
from semrag.index.parts.pieces import PieceIndex
from semrag.index.parts.sparse import BM25Index
from semrag.index.parts.ssg import SSGConfig
from semrag.index.storage.persist import atomic_directory
from semrag.text.tokens import Tokenizer
from semrag.types import Chunk, Document, Floats, Span

FORMAT_VERSION = 3  # 3: the embedder's fingerprint; 2: the graph's neighbour lists (1 is rebuilt)
KIND = "semrag.SemanticIndex"


def manifest(index: IndexReader) -> dict[str, Any]:
    """What ``manifest.json`` records of ``index``: its settings, fingerprint and next id."""
    from semrag._version import __version__

    parts = index.part_set
    return {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "embedder": index.fingerprint.name,
        "fingerprint": index.fingerprint.to_dict(),
        "dim": index.embedder.dim,
        "chunker": repr(index.chunker),
        # which encoder placed the chunk boundaries (the static one, MiniLM, ...)
        "boundaries": EmbedderFingerprint.of(index.chunker.embedder).to_dict(),
        "ssg": index.ssg_config.to_dict() if index.ssg_config else None,
        "dense": index.dense.config(),
        "chunk_vectors": index.chunk_vectors,
        "sentence_dtype": index.sentence_dtype,
        "next_id": index.corpus.next_id,
        "version": index.corpus.version,
        "pieces": (
            None
            if (kept := parts.pieces) is None
            else {"split": list(kept.split), "dense": kept.dense.config()}
        ),
        "passages": None if (phrases := parts.passages) is None else {"titles": phrases.titles},
    }


def save_index(index: IndexReader, directory: str | Path, base: int | None) -> int:
    """Publish ``index`` as ``directory``'s next version (see :meth:`SemanticIndex.save`).

    Returns:
        The number of the published version.
    """
    corpus = index.corpus
    with corpus.writer(), atomic_directory(directory, manifest(index), base=base) as draft:
        tmp = draft.folder
        entries = corpus.records()
        with open(tmp / "documents.jsonl", "w", encoding="utf-8") as f:
            for e in entries:
                f.write(json.dumps(_record(e), ensure_ascii=False) + "\n")
        dim = index.embedder.dim
        for name, arrays, dtype in (
            ("sentence_vectors.npy", [e.sentence_vectors for e in entries], index.sentence_dtype),
            ("node_vectors.npy", [e.node_vectors for e in entries], "float32"),
            ("theme_vectors.npy", [e.theme_vector[None, :] for e in entries], "float32"),
        ):
            arr = np.concatenate(arrays) if arrays else np.zeros((0, dim), np.float32)
            np.save(tmp / name, arr.astype(dtype), allow_pickle=False)
        with corpus.read():
            for part in index.parts.values():
                part.save(tmp)
    assert draft.generation is not None  # published
    return draft.generation


def _record(e: IndexedDocument) -> dict[str, Any]:
    """One line of ``documents.jsonl``."""
    record = {
        "id": e.doc.id,
        "text": e.doc.text,
        "metadata": dict(e.doc.metadata),
        "sentences": [[s.start, s.end] for s in e.sentences],
        "chunks": [
            [c.start, c.end, c.token_count, c.sentence_start, c.sentence_end] for c in e.chunks
        ],
        "chunk_ids": e.chunk_ids,
        "node_ranges": [list(r) for r in e.node_ranges],
        "themes": e.themes,
    }
    if any(c.metadata != e.doc.metadata for c in e.chunks):  # pre-split input
        record["chunk_metadata"] = [dict(c.metadata) for c in e.chunks]
    return record


def saved_options(m: dict[str, Any], client: VectorClient | None) -> dict[str, Any]:
    """The ``SemanticIndex`` keyword arguments of the empty index a save fills.

    Raises:
        ConfigError: if ``client`` is given for an index saved without a vector store, or
            missing for one saved with it.
        StoreError: if the manifest lacks the settings.
    """
    try:
        ssg_cfg = SSGConfig(**m["ssg"]) if m["ssg"] else None
        external = m["dense"]["kind"] == StoreBackedDense.kind
    except (KeyError, TypeError) as exc:
        raise StoreError(f"the manifest lacks or mangles {exc}: the save is corrupt") from exc
    if external != (client is not None):
        raise ConfigError(
            "this index keeps its vectors in a vector store: pass it as dense="
            if external
            else "dense= is for an index saved with a vector store; this one was not"
        )
    return {
        "ssg": ssg_cfg or False,
        "dense": client if client is not None else m["dense"]["kind"],
        "chunk_vectors": m["chunk_vectors"],
        # saves before the option held float32 sentence vectors
        "sentence_dtype": None if ssg_cfg else m.get("sentence_dtype", "float32"),
        "pieces": tuple(m["pieces"]["split"]) if m.get("pieces") else None,
    }


def restore(
    directory: Path,
    m: dict[str, Any],
    corpus: Corpus,
    parts: PartSet,
    *,
    embedder: BaseEmbedder,
    tokenizer: Tokenizer,
    sentence_dtype: str,
    client: VectorClient | None,
) -> None:
    """Fill an empty index's ``corpus`` and ``parts`` from the save in ``directory``.

    Raises:
        StoreError: if the files disagree (counts, chunk ids, the next id, the graph).
    """
    svecs = np.load(directory / "sentence_vectors.npy", allow_pickle=False)
    svecs = svecs.astype(sentence_dtype, copy=False)  # as the index holds them
    nvecs = np.load(directory / "node_vectors.npy", allow_pickle=False)
    tvecs = np.load(directory / "theme_vectors.npy", allow_pickle=False)
    dense = (
        StoreBackedDense.load(directory, client, int(m["dim"]))
        if client is not None
        else DenseIndex.load(directory, m["dense"])
    )
    parts.use(dense=dense, sparse=BM25Index.load(directory))  # with its saved idf variant
    records = []
    with open(directory / "documents.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            doc = Document(r["id"], r["text"], r["metadata"])
            metas = r.get("chunk_metadata") or [doc.metadata] * len(r["chunks"])
            chunks = [
                Chunk(doc.id, a, b, doc.text[a:b], tc, i, ss, se, meta)
                for i, ((a, b, tc, ss, se), meta) in enumerate(zip(r["chunks"], metas, strict=True))
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
    corpus.restore(entries, next_id, m.get("version"))
    held = corpus.records()
    if m.get("pieces"):
        pieces = PieceIndex.load(
            directory,
            held,
            tokenizer=tokenizer,
            embedder=embedder,
            config=m["pieces"]["dense"],
            version=corpus.version,
        )
        parts.keep("pieces", pieces, replace=True)
    if m.get("passages"):
        phrases = PassagePhrases.load(directory, held, version=corpus.version)
        parts.keep("passages", phrases, replace=True)
    if m["ssg"]:
        graph = _ssg_from_saved(directory, SSGConfig(**m["ssg"]), held, embedder.dim, nvecs, svecs)
        parts.keep("ssg", graph, replace=True)


def _ssg_from_saved(
    directory: Path,
    cfg: SSGConfig,
    entries: list[IndexedDocument],
    dim: int,
    node_vectors: Floats,
    sentence_vectors: Floats,
) -> LiveSSG:
    saved = directory / "ssg.npz"
    current = False
    if saved.exists():
        with np.load(saved, allow_pickle=False) as z:
            current = "intra_cols" in z.files
    if not current:  # format 1 kept only the CSR graph: rebuild the lists once
        return LiveSSG.fresh(cfg, dim, entries)
    ssg = LiveSSG.load(directory, cfg, node_vectors=node_vectors, sentence_matrix=sentence_vectors)
    if ssg.doc_ids != [e.id for e in entries]:
        raise StoreError("the graph and documents.jsonl list different documents")
    return ssg
