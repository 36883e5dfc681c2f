"""Training pairs for the boundary models, from human-sectioned documents (paper §4.1).

* **Positive** pairs: consecutive sentences inside one section.
* **Negative** pairs: two sentences from different sections of the same document that
  never co-occur in a section, drawn 1:1 with the positives of that document.
* Optional **hard negatives**: the two sentences that straddle a real section boundary
  (``hard_negatives`` is the share of each document's negatives drawn from those).

Documents with a single section have no negatives and give no pairs (keeping 1:1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semrag.errors import ConfigError
from semrag.eval.datasets import SectionedDocument

__all__ = ["PairSet", "sample_pairs"]


@dataclass(frozen=True, slots=True)
class PairSet:
    """Sentence pairs with labels, indexing into one flat sentence list."""

    sentences: list[str]
    """Every sentence of the corpus, documents and sections in order."""
    doc_of: npt.NDArray[np.int64]
    """Document index of each sentence."""
    section_of: npt.NDArray[np.int64]
    """Global section index of each sentence."""
    left: npt.NDArray[np.int64]
    """First sentence of each pair."""
    right: npt.NDArray[np.int64]
    """Second sentence of each pair."""
    label: npt.NDArray[np.float32]
    """1 = same section, 0 = different sections."""

    def __len__(self) -> int:
        return int(self.label.size)


def sample_pairs(
    documents: Sequence[SectionedDocument], *, seed: int = 0, hard_negatives: float = 0.0
) -> PairSet:
    """Build balanced positive/negative pairs from sectioned documents.

    Args:
        documents: documents made of human-authored sections.
        seed: random seed of the negative sampling.
        hard_negatives: share (0-1) of negatives taken from boundary-straddling pairs.

    Raises:
        ConfigError: if ``hard_negatives`` is outside [0, 1].
    """
    if not 0.0 <= hard_negatives <= 1.0:
        raise ConfigError(f"hard_negatives must be within [0, 1], got {hard_negatives}")
    rng = np.random.default_rng(seed)
    sentences: list[str] = []
    doc_of: list[int] = []
    section_of: list[int] = []
    left: list[int] = []
    right: list[int] = []
    label: list[float] = []
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
        if len(spans) < 2:
            continue
        positives = [(i, i + 1) for a, b in spans for i in range(a, b - 1)]
        if not positives:
            continue
        text_sections: dict[str, set[int]] = {}
        for s, (a, b) in enumerate(spans):
            for i in range(a, b):
                text_sections.setdefault(sentences[i], set()).add(s)
        straddling = [(b - 1, b) for (_, b) in spans[:-1]]
        n_hard = min(len(straddling), round(hard_negatives * len(positives)))
        hard = [straddling[i] for i in rng.permutation(len(straddling))[:n_hard]]
        sec_local = np.array([s for s, (a, b) in enumerate(spans) for _ in range(a, b)])
        n_local = len(sec_local)
        negatives: list[tuple[int, int]] = list(hard)
        seen = set(negatives)
        attempts = 0
        while len(negatives) < len(positives) and attempts < 50 * len(positives):
            attempts += 1
            i, j = rng.integers(0, n_local, size=2)
            if sec_local[i] == sec_local[j]:
                continue
            a, b = base + int(min(i, j)), base + int(max(i, j))
            shared = text_sections[sentences[a]] & text_sections[sentences[b]]
            if shared or (a, b) in seen:
                continue  # identical sentences in both sections do co-occur
            seen.add((a, b))
            negatives.append((a, b))
        keep = min(len(positives), len(negatives))
        order = rng.permutation(len(positives))[:keep]
        for idx in order:
            left.append(positives[idx][0])
            right.append(positives[idx][1])
            label.append(1.0)
        for a, b in negatives[:keep]:
            left.append(a)
            right.append(b)
            label.append(0.0)
    return PairSet(
        sentences=sentences,
        doc_of=np.asarray(doc_of, dtype=np.int64),
        section_of=np.asarray(section_of, dtype=np.int64),
        left=np.asarray(left, dtype=np.int64),
        right=np.asarray(right, dtype=np.int64),
        label=np.asarray(label, dtype=np.float32),
    )
