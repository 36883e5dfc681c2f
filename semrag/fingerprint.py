"""Which model made an index's vectors: a fingerprint of an embedder, saved and checked.

Several popular encoders give vectors of the same size (all-MiniLM-L6-v2, bge-small and
e5-small are all 384-dimensional), so a dimension check lets an index built with one be
queried with another: no error, every answer wrong. An :class:`EmbedderFingerprint`
identifies the model by what it *does*: its vectors for a few fixed probe texts, with its
name and dimension for the message. Two fingerprints match when every probe vector of
one is within cosine :data:`MIN_PROBE_COSINE` of the other's: the same model on another
machine, on a GPU or in float16 gives cosines above 0.9999; another model, even one of
the same family, gives far lower ones (unrelated spaces: near 0).

The index keeps the fingerprint of the model whose vectors it holds
(:attr:`SemanticIndex.fingerprint <semrag.SemanticIndex.fingerprint>`), saves it with
every save and every Neo4j write, and :func:`check_embedder` compares it wherever an
embedder meets stored vectors: ``SemanticIndex.load``, ``Neo4jIndex``, the vector stores
of both frameworks and ``add_prepared``.

Examples:
    >>> from semrag.testing import FakeEmbedder
    >>> a = EmbedderFingerprint.of(FakeEmbedder(dim=32))
    >>> a.matches(EmbedderFingerprint.of(FakeEmbedder(dim=32)))
    True
    >>> EmbedderFingerprint.from_dict(a.to_dict()) == a
    True
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError, EmbedderMismatchError, StoreError

__all__ = [
    "MIN_PROBE_COSINE",
    "PROBE_TEXTS",
    "EmbedderFingerprint",
    "check_embedder",
    "stored_fingerprint",
]

PROBE_TEXTS = (
    "The committee approved the budget after a long debate.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "She scored twice in the second half of the final.",
    "Wie spät ist es?",
)
"""Texts whose vectors identify an encoder (varied topics, one not in English)."""

MIN_PROBE_COSINE = 0.99
"""The least cosine, per probe text, between two fingerprints of one model."""

_DIGITS = 6  # probe values are saved rounded: float16 keeps ~3 digits, so 6 loses nothing


@dataclass(frozen=True, eq=False)
class EmbedderFingerprint:
    """What identifies the model that made a set of vectors.

    Attributes:
        name: the model's name, for messages only (never compared: two names of one
            model, a path and a hub id, are the same model).
        dim: the vectors' dimension.
        probe: the model's unit vectors of :data:`PROBE_TEXTS`, ``(len(PROBE_TEXTS), dim)``.
    """

    name: str
    dim: int
    probe: npt.NDArray[np.float32]

    @classmethod
    def of(cls, embedder: BaseEmbedder) -> EmbedderFingerprint:
        """The fingerprint of ``embedder`` (it embeds the probe texts once)."""
        probe = np.asarray(embedder.embed(list(PROBE_TEXTS)), np.float32)
        return cls(embedder.model_name, int(probe.shape[1]), _unit(probe))

    def similarity(self, other: EmbedderFingerprint) -> float:
        """The least cosine over the probe texts (``-1.0`` for another dimension)."""
        if self.dim != other.dim or self.probe.shape != other.probe.shape:
            return -1.0
        a, b = self.probe.astype(np.float64), other.probe.astype(np.float64)
        cos = (a * b).sum(axis=1)
        both_zero = ~a.any(axis=1) & ~b.any(axis=1)  # a model that gives a probe no vector
        return float(np.where(both_zero, 1.0, cos).min())

    def matches(self, other: EmbedderFingerprint) -> bool:
        """Whether ``other`` is a fingerprint of the same model."""
        return self.similarity(other) >= MIN_PROBE_COSINE

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, dim and the probe vectors (rounded to 6 decimals)."""
        return {
            "name": self.name,
            "dim": self.dim,
            "probe": np.round(self.probe.astype(np.float64), _DIGITS).tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbedderFingerprint:
        """The fingerprint :meth:`to_dict` wrote.

        Raises:
            StoreError: if the probe vectors do not have the recorded shape.
        """
        probe = np.asarray(data["probe"], np.float32)
        dim = int(data["dim"])
        if probe.shape != (len(PROBE_TEXTS), dim):
            raise StoreError(
                f"a fingerprint's probe has shape {probe.shape}, not {(len(PROBE_TEXTS), dim)}"
            )
        return cls(str(data["name"]), dim, _unit(probe))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EmbedderFingerprint):
            return NotImplemented
        return self.name == other.name and self.matches(other)

    __hash__ = None  # type: ignore[assignment]  # equality is within a tolerance

    def __repr__(self) -> str:
        return f"EmbedderFingerprint(name={self.name!r}, dim={self.dim})"


def check_embedder(
    stored: EmbedderFingerprint,
    embedder: BaseEmbedder,
    *,
    what: str,
    allow_mismatch: bool = False,
) -> EmbedderFingerprint:
    """Raise unless ``embedder`` is the model that made the ``stored`` vectors.

    Args:
        stored: the fingerprint saved with the vectors.
        embedder: the embedder about to embed queries or documents for them.
        what: what holds the vectors, for the message (``"the index saved in idx/"``).
        allow_mismatch: accept another model anyway (the rare case of a model known to
            share the space, e.g. a quantised copy that misses the tolerance); the
            caller notes it.

    Returns:
        The embedder's fingerprint.

    Raises:
        EmbedderMismatchError: naming both models and the ways out.
    """
    given = EmbedderFingerprint.of(embedder)
    if allow_mismatch or stored.matches(given):
        return given
    if stored.dim != given.dim:
        how = f"{stored.dim}-dimensional vectors; the embedder gives {given.dim}"
    else:
        how = (
            f"vectors of the same size, but {given.name} embeds the probe texts differently "
            f"(cosine {stored.similarity(given):.3f} < {MIN_PROBE_COSINE}): its queries "
            "would be compared with another model's vectors and every answer would be wrong"
        )
    raise EmbedderMismatchError(
        f"{what} was embedded with {stored.name} ({how}). Either pass the model it was "
        f"built with (embedder=...), or, to move it to {given.name}, open it with its own "
        "model and call index.reembed(new_embedder), which embeds every vector again as "
        "one change. allow_embedder_mismatch=True skips this check if you know that the "
        "two models share one vector space.",
        stored=stored.name,
        given=given.name,
    )


def stored_fingerprint(
    saved: dict[str, Any] | None,
    embedder: BaseEmbedder,
    *,
    dim: int,
    name: str,
    what: str,
    allow_mismatch: bool = False,
) -> tuple[EmbedderFingerprint, str | None]:
    """The fingerprint of stored vectors, once ``embedder`` is checked against it.

    Args:
        saved: the stored :meth:`EmbedderFingerprint.to_dict`; ``None`` for vectors stored
            before fingerprints were (then only ``dim`` can be checked, and a warning says
            so).
        embedder: the embedder that will embed queries and documents for them.
        dim: the stored vectors' dimension.
        name: the stored model's name.
        what: what holds the vectors, for messages.
        allow_mismatch: as in :func:`check_embedder`.

    Returns:
        The stored vectors' fingerprint (the embedder's own for an old store), and a note
        when another model was let through by ``allow_mismatch``.

    Raises:
        EmbedderMismatchError: if ``embedder`` is another model.
        ConfigError: if an old store's dimension is not the embedder's.
    """
    if saved is None:
        if dim != embedder.dim:
            raise ConfigError(
                f"{what} holds {dim}-dimensional vectors ({name}); the embedder gives "
                f"{embedder.dim}"
            )
        warnings.warn(
            f"{what} was stored before semrag recorded the embedder's fingerprint, so only "
            f"its dimension could be checked (it was built with {name}). If "
            f"{embedder.model_name} is not that model, every answer will be wrong; store it "
            "again (save the index, or attach a Neo4jIndexStore) to record the fingerprint.",
            UserWarning,
            stacklevel=4,
        )
        return EmbedderFingerprint.of(embedder), None
    stored = EmbedderFingerprint.from_dict(saved)
    given = check_embedder(stored, embedder, what=what, allow_mismatch=allow_mismatch)
    note = None
    if not stored.matches(given):
        note = (
            f"{what}: queried with {given.name}, though its vectors were embedded with "
            f"{stored.name} (allow_embedder_mismatch=True)"
        )
    return stored, note


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    out.setflags(write=False)
    return out
