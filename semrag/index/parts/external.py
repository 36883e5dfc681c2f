"""The dense channel on a vector store the user already runs.

``SemanticIndex(dense=client)`` keeps every other part in process (BM25, the graph,
the knowledge graph) and sends chunk vectors to an external vector store, which answers
the nearest-neighbour searches. ``client`` is any :class:`VectorClient`; the adapters wrap
a LangChain ``VectorStore`` (``langchain_semrag.VectorStoreClient``) or a LlamaIndex
vector store (``llama_index_semrag.VectorStoreClient``).

The index keeps each chunk's vector too (they are what ``vectors_of`` returns and what
scores are computed from), so every store scores the same way: cosine similarity,
ties to the lower chunk id, whatever distance the store itself reports. Which chunks
come back is the store's answer (exact for exact stores; an approximate store's recall
is its own).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError, StoreError
from semrag.index.change import Change
from semrag.index.parts.dense import DenseIndex, query_matrix
from semrag.types import Floats, Ints

__all__ = ["StoreBackedDense", "VectorClient"]


@runtime_checkable
class VectorClient(Protocol):
    """What the dense channel needs from a vector store; ids are chunk ids as strings."""

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Floats,
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Store (or replace) these entries."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these entries (absent ids are ignored)."""
        ...

    def search(self, vector: Floats, k: int) -> list[str]:
        """The ids of the ``k`` entries nearest ``vector``, best first.

        An approximate store may return more candidates than ``k``: every one is scored
        exactly, and the best ``k`` are kept.
        """
        ...


_PENDING = "dense_pending_deletes.npy"


class StoreBackedDense:
    """A dense part whose searches are answered by a :class:`VectorClient`.

    It keeps the same versions as :class:`~semrag.index.parts.dense.DenseIndex` (which holds the
    vectors): a change is written to the store while it is staged (the new entries stay
    invisible: results are filtered to the published version) and the removed entries are
    deleted from the store when the change is published. A store that fails while a
    change is staged leaves the index as it was; entries it already took are invisible and
    replaced by the next change that adds them. A store that fails to delete while a
    change is published does not stop the publish (the other parts are mid-swap): the
    entries stay invisible, a ``RuntimeWarning`` says so, and the next change deletes them
    first (:attr:`pending_deletes` counts them).

    Args:
        client: the vector store.
        dim: the vector dimension.
    """

    kind = "external"

    def __init__(self, client: VectorClient, dim: int) -> None:
        for method in ("upsert", "delete", "search"):
            if not callable(getattr(client, method, None)):
                raise ConfigError(
                    f"{type(client).__name__} is not a VectorClient (no {method} method); "
                    "wrap a LangChain or LlamaIndex vector store in the adapters' VectorClient"
                )
        self.client = client
        self.dim = dim
        self._vectors = DenseIndex(dim)  # the published vectors, versioned
        self._unpublished = 0  # entries the store holds outside the published version
        self._stale: list[int] = []  # removed entries a failed delete left in the store
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    @property
    def pending_deletes(self) -> int:
        """Removed entries the store still holds after a failed delete (never returned)."""
        with self._lock:
            return len(self._stale)

    @property
    def ids(self) -> Ints:
        """Ids of the published chunks, in increasing order."""
        return self._vectors.ids

    def vectors_of(self, ids: Sequence[int] | Ints) -> Floats:
        """The vectors of ``ids`` (kept by the index, not read back from the store)."""
        return self._vectors.vectors_of(ids)

    def rows_view(self, ids: Sequence[int] | Ints) -> Floats:
        """The vectors of ``ids``: a view when their rows are consecutive.

        See :meth:`DenseIndex.rows_view`.
        """
        return self._vectors.rows_view(ids)

    @property
    def buffer(self) -> Floats:
        """The array holding the published vectors now (:attr:`DenseIndex.buffer`)."""
        return self._vectors.buffer

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Floats, Ints]:
        """``(scores, ids)`` of shape ``(n_queries, k)``, as :meth:`DenseIndex.search`.

        The store picks the candidates; they are kept if the published version holds
        them, scored by cosine similarity and ordered by score, ties to the lower id.
        """
        q = query_matrix(queries, self.dim, k)
        scores = np.full((q.shape[0], k), -np.inf, np.float32)
        ids = np.full((q.shape[0], k), -1, np.int64)
        live = self._vectors.ids
        for row, vector in enumerate(q):
            found = self._candidates(vector, min(k, live.size), live)
            if not found.size:
                continue
            sims = self._vectors.vectors_of(found) @ vector
            order = np.lexsort((found, -sims))[:k]
            scores[row, : order.size] = sims[order]
            ids[row, : order.size] = found[order]
        return scores, ids

    def _candidates(self, vector: Floats, k: int, live: Ints) -> Ints:
        if k == 0:
            return np.zeros(0, np.int64)
        fetch = k + self._unpublished
        while True:
            answer = self.client.search(vector, fetch)
            found = np.array([int(i) for i in answer], dtype=np.int64)
            pos = np.searchsorted(live, found)
            inside = (pos < live.size) & (live[np.minimum(pos, live.size - 1)] == found)
            kept = np.unique(found[inside])
            if kept.size >= k or len(answer) < fetch or fetch >= 4 * (live.size + 1):
                return kept
            fetch *= 2  # the store returned entries outside this version: ask deeper

    def stage(self, change: Change) -> Callable[[], None]:
        """Write the change's new entries to the store; the function publishes the change.

        Raises:
            StoreError: if the store fails (the index is unchanged).
        """
        publish_vectors = self._vectors.stage(change)
        ids, chunks = change.added_chunks()
        vectors = change.added_vectors()
        removed = list(change.removed_chunk_ids())
        with self._lock:
            stale, self._stale = self._stale, []
        if stale:  # what an earlier publish failed to delete goes first
            try:
                self._delete(stale)
            except Exception as exc:
                with self._lock:
                    self._stale = stale + self._stale
                raise StoreError(
                    f"the vector store failed to delete {len(stale)} removed entries: {exc}"
                ) from exc
        if ids:
            with self._lock:
                self._unpublished += len(ids)
            try:
                self.client.upsert(
                    [str(i) for i in ids],
                    [c.text for c in chunks],
                    np.asarray(vectors, dtype=np.float32),
                    [
                        {"semrag_doc_id": c.doc_id, "semrag_chunk_id": i}
                        for i, c in zip(ids, chunks, strict=True)
                    ],
                )
            except Exception as exc:
                raise StoreError(
                    f"the vector store failed to take {len(ids)} entries: {exc}"
                ) from exc

        def publish() -> None:  # (chunk ids are never reused: added and removed differ)
            publish_vectors()
            with self._lock:
                self._unpublished += len(removed) - len(ids)
            if not removed:
                return
            try:  # never raise here: the index is swapping every part in
                self._delete(removed)
            except Exception as exc:  # noqa: BLE001 - reported, kept and retried
                with self._lock:
                    self._stale += removed
                warnings.warn(
                    f"the vector store failed to delete {len(removed)} removed entries "
                    f"({exc}); they are never returned and are deleted with the next change",
                    RuntimeWarning,
                    stacklevel=2,
                )

        return publish

    def _delete(self, ids: list[int]) -> None:
        self.client.delete([str(i) for i in ids])
        with self._lock:
            self._unpublished -= len(ids)

    def apply(self, change: Change) -> None:
        """Stage and publish ``change``."""
        self.stage(change)()

    def save(self, directory: Path) -> list[str]:
        """Write the vectors (the store keeps its own entries) and the pending deletes."""
        files = self._vectors.save(directory)
        with self._lock:
            stale = np.asarray(self._stale, dtype=np.int64)
        if stale.size:  # a loaded index deletes them with its first change
            np.save(directory / _PENDING, stale, allow_pickle=False)
            files.append(_PENDING)
        return files

    @classmethod
    def load(cls, directory: Path, client: VectorClient, dim: int) -> StoreBackedDense:
        """Read what :meth:`save` wrote; ``client`` must hold the same entries."""
        part = cls(client, dim)
        part._vectors = DenseIndex.load(directory, {"dim": dim, "kind": "flat"})
        if (directory / _PENDING).exists():
            part._stale = np.load(directory / _PENDING, allow_pickle=False).tolist()
            part._unpublished = len(part._stale)
        return part

    def config(self) -> dict[str, Any]:
        """What a save records: the kind and the store's type."""
        return {"dim": self.dim, "kind": self.kind, "client": type(self.client).__name__}

    def __repr__(self) -> str:
        return f"StoreBackedDense({type(self.client).__name__}, size={len(self)})"
