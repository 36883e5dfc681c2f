"""Post-processing of retrieved chunks: SPC repair and coverage audit (InSemRAG)."""

from __future__ import annotations

from semrag.postprocess.coverage import follow_up_query, key_elements, support_scores
from semrag.postprocess.detect import Completeness, Signal, assess
from semrag.postprocess.spc import SPC, Repair, SPCResult
from semrag.postprocess.stitch import best_window, covering_sentences

__all__ = [
    "SPC",
    "Completeness",
    "Repair",
    "SPCResult",
    "Signal",
    "assess",
    "best_window",
    "covering_sentences",
    "follow_up_query",
    "key_elements",
    "support_scores",
]
