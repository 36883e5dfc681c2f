"""What SPC returns: :class:`Repair` per chunk and :class:`SPCResult` per call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semrag.types import ScoredChunk, Span


@dataclass(frozen=True, slots=True)
class Repair:
    """What SPC did to one chunk."""

    doc_id: str
    """The chunk's document."""
    before: tuple[int, int]
    """The chunk's ``(start, end)`` as retrieved."""
    after: tuple[int, int]
    """The repaired chunk's source span (equal to ``before`` when not repaired)."""
    completeness: Mapping[str, Any]
    """The damage assessment (score, source, signals)."""
    action: str
    """``"intact"``, ``"repaired"``, ``"source_unavailable"``, ``"offsets_unknown"``,
    ``"source_mismatch"`` or ``"unchanged"`` (damaged, but no better window fit)."""
    method: str = ""
    """``"extractive"`` or ``"llm"`` for repaired chunks."""
    completeness_after: float | None = None
    """The repaired chunk's completeness score."""
    note: str = ""
    """Fallbacks and truncations."""

    def to_metadata(self) -> dict[str, Any]:
        """Plain values for metadata."""
        return {
            "doc_id": self.doc_id,
            "before": list(self.before),
            "after": list(self.after),
            "completeness": dict(self.completeness),
            "action": self.action,
            "method": self.method,
            "completeness_after": self.completeness_after,
            **({"note": self.note} if self.note else {}),
        }


@dataclass(slots=True)
class SPCResult:
    """The repaired evidence and the report."""

    chunks: list[ScoredChunk]
    """The refined, repaired chunks, best first."""
    actions: list[Repair]
    """One entry per kept hit. Without a context budget, aligned with :attr:`chunks`; with
    one (``SPC(context=...)``), in the context's order: each region's hits (``"merged"``
    after the first), then the hits left out (``"over_budget"``)."""
    missing: list[str]
    """Key elements whose support is below ``epsilon``."""
    coverage: dict[str, float] = field(default_factory=dict)
    """Support score of every key element."""
    follow_up_queries: list[str] = field(default_factory=list)
    """A query per missing element, less those asking for the same words as an earlier one."""
    llm_calls: int = 0
    """LLM calls made."""
    notes: list[str] = field(default_factory=list)
    """LLM fallbacks and other remarks."""
    by_chunk: list[Repair] | None = None
    """With a context budget: the action of each of :attr:`chunks` (a region's first hit's);
    ``None``: :attr:`actions` is aligned with :attr:`chunks`."""

    @property
    def chunk_actions(self) -> list[Repair]:
        """What was done to each chunk of :attr:`chunks`, aligned with it."""
        return self.actions if self.by_chunk is None else self.by_chunk

    @property
    def repaired(self) -> list[Repair]:
        """The actions that changed a chunk."""
        return [a for a in self.actions if a.action == "repaired"]

    def to_metadata(self) -> dict[str, Any]:
        """The query-level report as plain values."""
        return {
            "missing": list(self.missing),
            "coverage": dict(self.coverage),
            "follow_up_queries": list(self.follow_up_queries),
            "repaired": len(self.repaired),
            "llm_calls": self.llm_calls,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class Ask:
    prompt: str
    schema: Mapping[str, Any]


@dataclass(slots=True)
class Source:
    text: str
    sentences: list[Span]
    vectors: np.ndarray | None  # sentence vectors when the index has them
