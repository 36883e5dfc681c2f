"""Training pairs for the boundary models, from human-sectioned documents.

A pair is a *gap* between two sides: the left side ends at one sentence, the right side
starts at another, and each side is the mean of up to ``window`` sentence embeddings
(window 1 is the paper's sentence pair). The chunker asks the same question of every gap
between consecutive sentences, so training asks it of gaps too:

* **positive**: a gap between consecutive sentences of one section;
* **boundary** negative: the gap at a section boundary (the last sentence of a section and
  the first of the next): the topic shifts the chunker must find;
* **section** negative (the paper's, Allamraju et al. §4.1): two sentences of different
  sections of one document that never co-occur in a section;
* **document** negative: two sentences of different documents.

A share of the pairs (``edge_share``) is read as if the gap sat near a document's edge:
each side keeps only a random 1 to ``edge_reach`` sentences (:attr:`PairSet.reach`). At
inference a gap near an edge, or any gap of a short text, has sides of one or two
sentences; a model trained only on full windows reads those as a topic shift.

Every boundary gap is used (they are the scarce kind). The negatives of the other kinds
and the positives are sampled around them so that the negatives follow ``negative_mix``
and there are ``negative_ratio`` negatives per positive; with no boundary share, the
positives set the count (the paper's 1:1 sampling is ``negative_mix={"section": 1}``).

Splits are by document (:func:`split_documents`), so no document's sentences fall in two
splits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.eval.datasets import SectionedDocument

__all__ = [
    "DEFAULT_NEGATIVE_MIX",
    "check_windows",
    "gap_sides",
    "PAIR_KINDS",
    "PairSet",
    "sample_pairs",
    "split_documents",
]

PAIR_KINDS = ("positive", "boundary", "section", "document")
"""Names of :attr:`PairSet.kind` values, by index."""

DEFAULT_NEGATIVE_MIX: Mapping[str, float] = {"boundary": 0.5, "section": 0.25, "document": 0.25}
"""Shares of the negative kinds used by ``semrag train-boundary`` unless told otherwise."""


@dataclass(frozen=True, slots=True)
class PairSet:
    """Labelled gaps over one flat sentence list."""

    sentences: list[str]
    """Every sentence of the corpus, documents and sections in order."""
    doc_of: npt.NDArray[np.int64]
    """Document index of each sentence."""
    section_of: npt.NDArray[np.int64]
    """Global section index of each sentence."""
    left: npt.NDArray[np.int64]
    """Last sentence of each pair's left side."""
    right: npt.NDArray[np.int64]
    """First sentence of each pair's right side."""
    label: npt.NDArray[np.float32]
    """1 = same section, 0 = different sections."""
    kind: npt.NDArray[np.int64]
    """Index into :data:`PAIR_KINDS` of each pair."""
    reach: npt.NDArray[np.int64] | None = None
    """Most sentences per side of each pair (0: as many as the window and the document
    allow); ``None``: no pair is cut."""

    def __len__(self) -> int:
        return int(self.label.size)

    def counts(self) -> dict[str, int]:
        """Number of pairs of each kind."""
        found = np.bincount(self.kind, minlength=len(PAIR_KINDS))
        return {name: int(n) for name, n in zip(PAIR_KINDS, found, strict=True)}


def _check_mix(mix: Mapping[str, float]) -> dict[str, float]:
    unknown = set(mix) - set(PAIR_KINDS[1:])
    if unknown:
        raise ConfigError(
            f"negative_mix keys must be among {list(PAIR_KINDS[1:])}, got {sorted(unknown)}"
        )
    values = {k: float(mix.get(k, 0.0)) for k in PAIR_KINDS[1:]}
    if any(not np.isfinite(v) or v < 0 for v in values.values()) or sum(values.values()) <= 0:
        raise ConfigError(f"negative_mix shares must be >= 0 with a positive sum, got {dict(mix)}")
    total = sum(values.values())
    return {k: v / total for k, v in values.items()}


def sample_pairs(
    documents: Sequence[SectionedDocument],
    *,
    seed: int = 0,
    negative_ratio: float = 1.0,
    negative_mix: Mapping[str, float] | None = None,
    edge_share: float = 0.0,
    edge_reach: int = 3,
) -> PairSet:
    """Sample labelled gaps from sectioned documents (see the module docstring).

    Args:
        documents: documents made of human-authored sections.
        seed: random seed of the sampling.
        negative_ratio: negatives per positive (the paper: 1).
        negative_mix: shares of ``boundary``, ``section`` and ``document`` negatives
            (normalised to sum 1); default :data:`DEFAULT_NEGATIVE_MIX`.
        edge_share: share of the pairs (of every kind alike) whose sides are cut to a
            random 1 to ``edge_reach`` sentences, as near a document's edge.
        edge_reach: most sentences per side of a cut pair.

    Raises:
        ConfigError: on a ratio that is not positive, an unknown or negative share, an
            ``edge_share`` outside [0, 1] or an ``edge_reach`` < 1.
    """
    if not np.isfinite(negative_ratio) or negative_ratio <= 0:
        raise ConfigError(f"negative_ratio must be > 0, got {negative_ratio}")
    if not 0.0 <= edge_share <= 1.0:
        raise ConfigError(f"edge_share must be within [0, 1], got {edge_share}")
    if edge_reach < 1:
        raise ConfigError(f"edge_reach must be >= 1, got {edge_reach}")
    mix = _check_mix(DEFAULT_NEGATIVE_MIX if negative_mix is None else negative_mix)
    rng = np.random.default_rng(seed)
    sentences: list[str] = []
    doc_of: list[int] = []
    section_of: list[int] = []
    doc_spans: list[tuple[int, int]] = []
    positives: list[tuple[int, int]] = []
    boundaries: list[tuple[int, int]] = []
    section_pool: list[tuple[int, list[tuple[int, int]]]] = []
    n_sections = 0
    for d, doc in enumerate(documents):
        base = len(sentences)
        spans: list[tuple[int, int]] = []
        for section in doc.sections:
            start = len(sentences)
            sentences.extend(section)
            doc_of.extend([d] * len(section))
            section_of.extend([n_sections] * len(section))
            spans.append((start, len(sentences)))
            n_sections += 1
        doc_spans.append((base, len(sentences)))
        positives += [(i, i + 1) for a, b in spans for i in range(a, b - 1)]
        boundaries += [(b - 1, b) for (_, b) in spans[:-1]]
        if len(spans) > 1:
            section_pool.append((base, spans))
    n_neg = _negative_count(len(positives), len(boundaries), negative_ratio, mix)
    n_pos = min(len(positives), round(n_neg / negative_ratio))
    wanted = {k: round(n_neg * share) for k, share in mix.items()}
    boundary = [boundaries[i] for i in rng.permutation(len(boundaries))[: wanted["boundary"]]]
    in_section = _section_negatives(sentences, section_pool, wanted["section"], rng)
    document = _document_negatives(doc_spans, wanted["document"], rng)
    chosen = [positives[i] for i in rng.permutation(len(positives))[:n_pos]]
    groups = [chosen, boundary, in_section, document]
    left = [a for group in groups for a, _ in group]
    right = [b for group in groups for _, b in group]
    kind = [k for k, group in enumerate(groups) for _ in group]
    reach = None
    if edge_share > 0:
        # Drawn after the pairs, so the pairs themselves do not depend on edge_share.
        cut = rng.random(len(kind)) < edge_share
        reach = np.where(cut, rng.integers(1, edge_reach + 1, size=len(kind)), 0)
    return PairSet(
        sentences=sentences,
        doc_of=np.asarray(doc_of, dtype=np.int64),
        section_of=np.asarray(section_of, dtype=np.int64),
        left=np.asarray(left, dtype=np.int64),
        right=np.asarray(right, dtype=np.int64),
        label=(np.asarray(kind, dtype=np.int64) == 0).astype(np.float32),
        kind=np.asarray(kind, dtype=np.int64),
        reach=reach,
    )


def _negative_count(
    n_positive: int, n_boundary: int, ratio: float, mix: Mapping[str, float]
) -> int:
    """All boundary gaps are used; the negative total follows from the boundary share."""
    by_positives = int(round(n_positive * ratio))
    if mix["boundary"] <= 0:
        return by_positives
    return min(by_positives, int(n_boundary / mix["boundary"]))


def _section_negatives(
    sentences: list[str],
    pool: list[tuple[int, list[tuple[int, int]]]],
    n: int,
    rng: np.random.Generator,
) -> list[tuple[int, int]]:
    """The paper's negatives: sentences of two sections of one document that never co-occur."""
    if not pool or n <= 0:
        return []
    found: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    sections_of_text: dict[str, set[int]] = {}
    for _, spans in pool:
        for a, b in spans:
            for i in range(a, b):
                sections_of_text.setdefault(sentences[i], set()).add(a)
    attempts = 0
    while len(found) < n and attempts < 50 * n:
        attempts += 1
        base, spans = pool[int(rng.integers(len(pool)))]
        s, t = rng.choice(len(spans), size=2, replace=False)
        i = int(rng.integers(*spans[s]))
        j = int(rng.integers(*spans[t]))
        a, b = min(i, j), max(i, j)
        if (a, b) in seen or sections_of_text[sentences[a]] & sections_of_text[sentences[b]]:
            continue  # the same sentence text in both sections does co-occur
        seen.add((a, b))
        found.append((a, b))
    return found


def _document_negatives(
    doc_spans: list[tuple[int, int]], n: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """A sentence of one document next to a sentence of another."""
    usable = [span for span in doc_spans if span[1] > span[0]]
    if len(usable) < 2 or n <= 0:
        return []
    found = []
    for _ in range(n):
        s, t = rng.choice(len(usable), size=2, replace=False)
        found.append((int(rng.integers(*usable[s])), int(rng.integers(*usable[t]))))
    return found


def gap_sides(
    vectors: npt.NDArray[np.float32],
    doc_of: npt.NDArray[np.int64],
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    window: int | Sequence[int],
    reach: npt.ArrayLike | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Side vectors of gaps for a model that reads ``window`` sentences per side.

    Gap ``g`` has a left side ending at sentence ``left[g]`` and a right side starting at
    ``right[g]``. Both sides take the same number of sentences, ``k = min(window, sentences
    up to left[g] in its document, sentences from right[g] in its document)``, so a gap
    near a document's edge compares one sentence with one sentence, not one with a mix of
    the next topics. Each side is the L2-normalised mean of its sentence vectors (window 1:
    the sentence vectors themselves).

    With several windows (e.g. ``(1, 3, 8)``) each side is the concatenation of its means
    at every window, in the given order: the sentence next to the gap and the wider context
    side by side.

    ``reach`` (training only) caps the sentences per side of each gap further (0: no cap).

    Raises:
        ConfigError: if a window is < 1 or the arrays disagree in length.
    """
    windows = check_windows(window)
    vectors = np.asarray(vectors, dtype=np.float32)
    doc_of = np.asarray(doc_of, dtype=np.int64)
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    if vectors.shape[0] != doc_of.size:
        raise ConfigError(f"{vectors.shape[0]} vectors for {doc_of.size} sentences")
    if windows == (1,):
        return vectors[left], vectors[right]
    n = vectors.shape[0]
    change = np.flatnonzero(np.diff(doc_of)) + 1
    bounds = np.concatenate([[0], change, [n]])
    which = np.searchsorted(bounds, np.arange(n), side="right") - 1
    doc_start, doc_end = bounds[which], bounds[which + 1]
    room = np.minimum(left - doc_start[left] + 1, doc_end[right] - right)
    if reach is not None:
        reach = np.asarray(reach, dtype=np.int64)
        room = np.where(reach > 0, np.minimum(room, reach), room)
    csum = np.zeros((n + 1, vectors.shape[1]), dtype=np.float64)
    np.cumsum(vectors, axis=0, out=csum[1:])
    lefts, rights = [], []
    for w in windows:
        if w == 1:
            lefts.append(vectors[left])
            rights.append(vectors[right])
            continue
        k = np.minimum(room, w)
        lefts.append(_unit((csum[left + 1] - csum[left + 1 - k]) / k[:, None]))
        rights.append(_unit((csum[right + k] - csum[right]) / k[:, None]))
    if len(windows) == 1:
        return lefts[0], rights[0]
    return np.concatenate(lefts, axis=1), np.concatenate(rights, axis=1)


def check_windows(window: int | Sequence[int]) -> tuple[int, ...]:
    """``window`` as a tuple of distinct positive ints (one int is a 1-tuple).

    Raises:
        ConfigError: on an empty sequence, a repeated window or one < 1.
    """
    raw = (window,) if isinstance(window, (int, np.integer)) else tuple(window)
    try:
        windows = tuple(int(w) for w in raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"window must be an int or a sequence of ints, got {window!r}") from exc
    if (
        not windows
        or any(w < 1 or w != r for w, r in zip(windows, raw, strict=True))
        or len(set(windows)) != len(windows)
    ):
        raise ConfigError(
            f"window must be an int >= 1 or distinct ints >= 1 (e.g. (1, 3, 8)), got {window!r}"
        )
    return windows


def _unit(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def split_documents(
    documents: Sequence[SectionedDocument],
    source: str,
    *,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
) -> tuple[list[SectionedDocument], list[SectionedDocument], list[SectionedDocument]]:
    """Train / dev / test split by document, stable across runs and machines.

    Each document goes to a split by a hash of ``source`` and its id, so adding or removing
    other documents never moves it, and a benchmark can find the same test split.

    Raises:
        ConfigError: if the fractions are negative or do not sum to 1.
    """
    if any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise ConfigError(f"fractions must be >= 0 and sum to 1, got {fractions}")
    cut_train, cut_dev = fractions[0], fractions[0] + fractions[1]
    out: tuple[list[SectionedDocument], ...] = ([], [], [])
    for doc in documents:
        digest = hashlib.sha256(f"{source}\0{doc.id}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        out[0 if u < cut_train else 1 if u < cut_dev else 2].append(doc)
    return out[0], out[1], out[2]
