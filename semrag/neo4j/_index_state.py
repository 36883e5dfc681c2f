"""The index's state in Neo4j: its record, documents' fingerprints, the PCA digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError, StoreError
from semrag.fingerprint import EmbedderFingerprint, stored_fingerprint
from semrag.index.change import IndexedDocument
from semrag.neo4j._index_cypher import READ_STATE

if TYPE_CHECKING:
    from semrag.neo4j.graph_store import Neo4jGraphStore


def digest_of_pca(mean: Any, components: Any) -> str:
    """A digest of a graph's PCA (its float32 values), stored beside it.

    A reader keeps the PCA it last read with its digest; the anchor search sends it back
    and gets the PCA again only when the stored one differs.
    """
    h = hashlib.sha256(np.asarray(mean, np.float32).tobytes())
    h.update(np.asarray(components, np.float32).tobytes())
    return h.hexdigest()


def read_state(store: Neo4jGraphStore, name: str) -> dict[str, Any]:
    """The state node's properties (empty if the database holds no index of this name)."""
    return dict(store.session.read_rows(READ_STATE, name=name)[0]["state"] or {})


def served_model(
    state: Mapping[str, Any], embedder: BaseEmbedder, what: str, allow_mismatch: bool
) -> tuple[EmbedderFingerprint, str | None]:
    """The stored index's model, once the state is found whole and ``embedder`` its model.

    See :func:`semrag.fingerprint.stored_fingerprint` (a state written before fingerprints
    were stored is checked by its dimension only, with a warning).

    Raises:
        StoreError: if a change written in several transactions was interrupted (the
            database holds parts of two versions until its writer is attached again).
        EmbedderMismatchError: if ``embedder`` is not the stored index's model.
    """
    if state.get("writing") is not None:
        raise StoreError(
            f"{what} holds a change (version {state['writing']}) that was written in steps "
            "and interrupted, so it mixes two versions: attach its writer again "
            "(Neo4jIndexStore.for_index(index, store)), which finishes it, then serve it"
        )
    saved = state.get("fingerprint")
    return stored_fingerprint(
        json.loads(saved) if saved else None,
        embedder,
        dim=int(state["dim"]),
        name=str(state["embedder"]),
        what=what,
        allow_mismatch=allow_mismatch,
    )


def to_json(value: Mapping[str, Any], what: str) -> str:
    try:
        return json.dumps(dict(value), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{what} must be JSON (str, numbers, bools, None, lists, dicts) to be stored in "
            f"Neo4j: {exc}"
        ) from exc


def entry_fingerprint(entry: IndexedDocument) -> str:
    """What identifies one version of a document in the store (text, metadata, chunk ids)."""
    h = hashlib.sha256(entry.doc.text.encode("utf-8", "surrogatepass"))
    h.update(to_json(entry.doc.metadata, "document metadata").encode())
    h.update(np.asarray(entry.chunk_ids, np.int64).tobytes())
    return h.hexdigest()
