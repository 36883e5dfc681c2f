"""Ingestion on Ray Data: workers chunk and embed, one writer commits.

Chunking and embedding are the cost of building an index (minutes of MiniLM per megabyte of
text on two cores); committing what they made is cheap. :func:`ingest_with_ray` spreads the
costly part over a Ray cluster and keeps the index's one-writer rule:

1. the documents become a Ray Dataset of ``id`` / ``text`` / ``metadata`` rows (or you
   pass your own Dataset with those columns);
2. ``map_batches`` runs a pool of ``workers`` actors; each holds **one** worker index (made
   once by ``make_index``, so one embedding model per actor, on its GPU when
   ``gpus_per_worker`` gives it one) and turns each batch of documents into a
   :class:`~semrag.index.ingest.prepared.PreparedBatch` with
   :meth:`~semrag.SemanticIndex.prepare_documents`;
3. the calling process commits each prepared batch, in the documents' order, with
   :meth:`~semrag.SemanticIndex.add_prepared` (nothing is embedded again), so every part
   of the index and every follower (a :class:`~semrag.neo4j.Neo4jIndexStore`, a knowledge
   graph) sees ordinary changes.

The result equals ``index.add_documents(documents)`` in one process: the same chunks with
the same offsets and ids, the same vectors, the same answers. Each prepared batch is one
change: a failure stops the job with the batches before it committed; running it again
with ``on_conflict="skip"`` finishes it.

Ray is an optional extra: ``pip install "semrag[ray]"``.

Examples:
    >>> import functools, ray                                          # doctest: +SKIP
    >>> from semrag import SemanticIndex
    >>> from semrag.ingest import ingest_with_ray
    >>> ray.init(num_cpus=2)                                           # doctest: +SKIP
    >>> index = SemanticIndex()                                        # doctest: +SKIP
    >>> report = ingest_with_ray(index, docs, make_index=SemanticIndex, workers=2)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import json
import pickle
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from semrag.errors import ConfigError, DocumentConflictError, missing_dependency
from semrag.identity import OnConflict, as_documents, check_on_conflict
from semrag.index.ingest.prepared import PreparedBatch
from semrag.types import Document

__all__ = ["IngestReport", "PrepareWorker", "ingest_with_ray", "packaged_worker_index"]


@dataclass(frozen=True)
class IngestReport:
    """What :func:`ingest_with_ray` committed."""

    documents: int
    chunks: int
    batches: int
    seconds: float
    """Wall time of the whole job (workers' start included)."""

    @property
    def documents_per_second(self) -> float:
        """Documents committed per second of the job."""
        return self.documents / self.seconds if self.seconds > 0 else 0.0


class PrepareWorker:
    """A Ray Data actor: one worker index (one model), many batches of documents.

    Args:
        make_index: a picklable callable returning the worker's index (made once).
        split: as ``add_documents(split=)``.
        threads: the torch threads this worker may use (``None``: as torch decides).
    """

    def __init__(
        self, make_index: Callable[[], Any], split: bool = True, threads: int | None = None
    ) -> None:
        if threads is not None:
            import torch  # a core dependency; imported here, in the worker only

            torch.set_num_threads(int(threads))
        self.index = make_index()
        self.split = split

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """One batch of rows -> one pickled :class:`PreparedBatch` (a one-row batch)."""
        docs = [
            Document(str(i), str(text), json.loads(meta) if meta else {})
            for i, text, meta in zip(batch["id"], batch["text"], batch["metadata"], strict=True)
        ]
        prepared = self.index.prepare_documents(docs, split=self.split)
        return {"prepared": np.asarray([pickle.dumps(prepared)], dtype=object)}


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the Data library is what the job needs
    except ImportError as exc:
        raise missing_dependency("ray", "ray") from exc
    return ray


def _rows(documents: Iterable[Any]) -> list[dict[str, str]]:
    """The documents as Dataset rows (ids by :mod:`semrag.identity`; metadata as JSON)."""
    rows = []
    for d in as_documents(documents):
        try:
            meta = json.dumps(dict(d.metadata))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"metadata of document {d.id!r} is not JSON-serialisable") from exc
        rows.append({"id": d.id, "text": d.text, "metadata": meta})
    return rows


def ingest_with_ray(
    index: Any,
    documents: Iterable[Any] | Any,
    *,
    make_index: Callable[[], Any] | None = None,
    workers: int = 2,
    batch_size: int = 256,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float = 0.0,
    split: bool = True,
    on_conflict: OnConflict = "error",
) -> IngestReport:
    """Chunk and embed ``documents`` on Ray workers and commit them to ``index`` (see module).

    Args:
        index: the writing :class:`~semrag.SemanticIndex`.
        documents: anything ``add_documents`` takes, or a ``ray.data.Dataset`` with the
            columns ``id``, ``text`` and ``metadata`` (a JSON string; give it at least as
            many blocks as workers, so each has one to take).
        make_index: returns each worker's index (picklable: a class or a
            ``functools.partial``); it must chunk and embed as ``index`` does, which
            ``add_prepared`` checks. Default: :func:`packaged_worker_index` (the packaged
            MiniLM, on the worker's GPU with ``gpus_per_worker``, and ``index``'s
            ``chunk_vectors`` and ``ssg`` settings).
        workers: actors in the pool (each holds one model).
        batch_size: documents per prepared batch (one commit each). Larger batches embed
            faster (the model pads each batch of sentences to its longest): 64 documents
            a batch took 1.24 times as long as one call for 256 on 2Wiki paragraphs.
        cpus_per_worker: CPUs Ray reserves per actor; the actor's torch uses that many
            threads (at least one).
        gpus_per_worker: GPUs per actor (the packaged model then runs on it).
        split: as ``add_documents(split=)``.
        on_conflict: as ``add_documents``, per batch; an id given twice in the job raises
            :class:`~semrag.errors.DocumentConflictError` before its batch commits.

    Raises:
        MissingDependencyError: without Ray (``pip install "semrag[ray]"``).
        ConfigError: for bad sizes, or batches prepared with other settings than the index's.
    """
    ray = _ray()
    check_on_conflict(on_conflict)
    if workers < 1 or batch_size < 1 or cpus_per_worker <= 0 or gpus_per_worker < 0:
        raise ConfigError(
            "workers and batch_size must be >= 1, cpus_per_worker > 0, gpus_per_worker >= 0; "
            f"got {workers}, {batch_size}, {cpus_per_worker}, {gpus_per_worker}"
        )
    if make_index is None:
        make_index = functools.partial(
            packaged_worker_index,
            index.chunk_vectors,
            index.ssg_config or False,
            "cuda" if gpus_per_worker > 0 else "cpu",
        )
    t0 = time.perf_counter()
    with _in_order(ray):  # the dataset and its run: commits in the documents' order
        if isinstance(documents, ray.data.Dataset):
            dataset = documents
        else:
            rows = _rows(documents)  # a block per batch: idle workers take the next one
            blocks = max(1, -(-len(rows) // batch_size))
            dataset = ray.data.from_items(rows, override_num_blocks=blocks)
        threads = max(1, int(cpus_per_worker))
        prepared = dataset.map_batches(
            PrepareWorker,
            fn_constructor_kwargs={"make_index": make_index, "split": split, "threads": threads},
            batch_size=batch_size,
            batch_format="numpy",
            # a fixed pool, one batch at a time per actor: a busy actor is not handed the next
            compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),
            num_cpus=cpus_per_worker,
            num_gpus=gpus_per_worker,
        )
        seen: set[str] = set()
        n_docs = n_chunks = n_batches = 0
        for row in prepared.iter_rows():
            batch: PreparedBatch = pickle.loads(row["prepared"])  # made by our own workers
            again = sorted(seen.intersection(batch.doc_ids))
            if again:
                raise DocumentConflictError(
                    f"the job names {len(again)} document id(s) more than once: {again[:5]}",
                    ids=again,
                )
            seen.update(batch.doc_ids)
            index.add_prepared(batch, on_conflict=on_conflict)
            n_docs, n_chunks = n_docs + len(batch), n_chunks + batch.n_chunks
            n_batches += 1
    return IngestReport(n_docs, n_chunks, n_batches, time.perf_counter() - t0)


@contextlib.contextmanager
def _in_order(ray: Any) -> Iterator[None]:
    """Ray Data keeps the input's order for the block (the caller's setting after it)."""
    ctx = ray.data.DataContext.get_current()
    before = ctx.execution_options.preserve_order
    ctx.execution_options.preserve_order = True
    try:
        yield
    finally:
        ctx.execution_options.preserve_order = before


def packaged_worker_index(chunk_vectors: str, ssg: Any, device: str) -> Any:
    """A worker's index with the packaged MiniLM on ``device`` (the default ``make_index``)."""
    from semrag.embeddings import SentenceTransformerEmbedder
    from semrag.index.semantic_index import SemanticIndex

    embedder = SentenceTransformerEmbedder(device=device)
    return SemanticIndex(embedder=embedder, chunk_vectors=chunk_vectors, ssg=ssg)
