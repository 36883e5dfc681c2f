"""The retrieve-and-check loop of InSemRAG (appendix A.2).

Round 1 retrieves for the query and runs :class:`~semrag.postprocess.SPC` on the hits
(refine, repair, coverage audit). While key elements are missing and rounds remain, each
missing element's follow-up query is retrieved and repaired, its best chunks join the
evidence, and the original query's coverage is audited again. The loop stops when nothing
is missing (``"covered"``), when a round adds no new evidence (``"no new evidence"``), or
after ``max_rounds`` (the paper: 3).
"""

from __future__ import annotations

import asyncio
import numbers
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from semrag._validation import HasMethods, Interval, Params, check_k, check_query
from semrag.postprocess.spc import SPC, SPCResult
from semrag.types import Retriever, ScoredChunk

__all__ = ["CheckResult", "RetrieveAndCheck", "Round"]


@dataclass(frozen=True, slots=True)
class Round:
    """One round of the loop."""

    number: int
    """1 for the first round."""
    queries: tuple[str, ...]
    """The query (round 1) or the follow-up queries of the round."""
    added: int
    """Evidence chunks the round added."""
    missing: tuple[str, ...]
    """Key elements still missing after the round."""


@dataclass(slots=True)
class CheckResult:
    """The merged evidence and the loop's history."""

    chunks: list[ScoredChunk]
    """Evidence in order: round 1's chunks, then each round's additions."""
    rounds: list[Round]
    """What each round did."""
    missing: list[str]
    """Elements still missing at the end."""
    stop_reason: str
    """``"covered"``, ``"no new evidence"`` or ``"max_rounds"``."""
    report: SPCResult | None = None
    """The last coverage audit."""
    actions: list[Any] = field(default_factory=list)
    """SPC's repair actions of every round."""

    def to_metadata(self) -> dict[str, Any]:
        """The loop's history as plain values."""
        return {
            "rounds": [
                {
                    "round": r.number,
                    "queries": list(r.queries),
                    "added": r.added,
                    "missing": list(r.missing),
                }
                for r in self.rounds
            ],
            "missing": list(self.missing),
            "stop_reason": self.stop_reason,
        }


class RetrieveAndCheck(Params):
    """Retrieve, repair, audit, and re-query what is missing (at most ``max_rounds``).

    Args:
        retriever: any semrag retriever (``retrieve``/``aretrieve`` returning
            :class:`~semrag.types.ScoredChunk`), e.g. :class:`IntentAwareRetriever`.
        spc: the :class:`~semrag.postprocess.SPC` that repairs and audits.
        max_rounds: rounds including the first.
        follow_up_k: chunks a follow-up query may add.

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.postprocess import SPC
        >>> from semrag.retrieval import IntentAwareRetriever
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder())
        >>> index.add_documents([Document("a", "Ada Lovelace wrote the first program."),
        ...                      Document("b", "Charles Babbage designed the Analytical Engine.")])
        >>> loop = RetrieveAndCheck(IntentAwareRetriever(index, k=1), SPC(index, k=1))
        >>> result = loop.run("Did Ada Lovelace work with Charles Babbage?")
        >>> sorted({h.chunk.doc_id for h in result.chunks}), result.rounds[1].queries[0]
        (['a', 'b'], 'Charles Babbage')
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "retriever": [HasMethods("retrieve", "aretrieve")],
        "spc": [HasMethods("process", "aprocess", "audit_coverage", "aaudit_coverage")],
        "max_rounds": [Interval(numbers.Integral, 1, None)],
        "follow_up_k": [Interval(numbers.Integral, 1, None)],
    }

    def __init__(
        self, retriever: Retriever, spc: SPC, max_rounds: int = 3, *, follow_up_k: int = 3
    ) -> None:
        p = self._check_params(locals())
        self.retriever = retriever
        self.spc = spc
        self.max_rounds = p["max_rounds"]
        self.follow_up_k = p["follow_up_k"]

    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """The evidence of :meth:`run` (the first ``k`` chunks when ``k`` is given)."""
        chunks = self.run(query).chunks
        return chunks if k is None else chunks[: check_k("RetrieveAndCheck", k, 1)]

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve`."""
        chunks = (await self.arun(query)).chunks
        return chunks if k is None else chunks[: check_k("RetrieveAndCheck", k, 1)]

    def run(self, query: str) -> CheckResult:
        """Run the loop for ``query``."""
        check_query("RetrieveAndCheck", query)
        first = self.spc.process(query, self.retriever.retrieve(query), audit=True)
        state = self._start(query, first)
        while self._continue(state):
            follow = state.report.follow_up_queries if state.report else []
            found = []
            for fq in follow:
                hits = self.retriever.retrieve(fq)
                found.append((fq, self.spc.process(fq, hits, audit=False)))
            added = self._merge(state, found)
            audit = self.spc.audit_coverage(query, state.chunks) if added else None
            self._next(state, follow, added, audit)
        return self._finish(state)

    async def arun(self, query: str) -> CheckResult:
        """Async twin of :meth:`run`; a round's follow-up queries run concurrently."""
        check_query("RetrieveAndCheck", query)
        first = await self.spc.aprocess(query, await self.retriever.aretrieve(query), audit=True)
        state = self._start(query, first)
        while self._continue(state):
            follow = state.report.follow_up_queries if state.report else []

            async def one(fq: str) -> tuple[str, SPCResult]:
                hits = await self.retriever.aretrieve(fq)
                return fq, await self.spc.aprocess(fq, hits, audit=False)

            found = list(await asyncio.gather(*(one(fq) for fq in follow)))
            added = self._merge(state, found)
            audit = await self.spc.aaudit_coverage(query, state.chunks) if added else None
            self._next(state, follow, added, audit)
        return self._finish(state)

    # -- shared steps ----------------------------------------------------------------------------
    def _start(self, query: str, first: SPCResult) -> CheckResult:
        state = CheckResult(list(first.chunks), [], list(first.missing), "", first)
        state.actions.extend(first.actions)
        state.rounds.append(Round(1, (query,), len(first.chunks), tuple(first.missing)))
        return state

    def _continue(self, state: CheckResult) -> bool:
        if not state.missing:
            state.stop_reason = "covered"
            return False
        if state.stop_reason:
            return False
        if len(state.rounds) >= self.max_rounds:
            state.stop_reason = "max_rounds"
            return False
        return True

    def _merge(self, state: CheckResult, found: list[tuple[str, SPCResult]]) -> int:
        added = 0
        n = len(state.rounds) + 1
        for fq, result in found:
            state.actions.extend(result.actions)
            for hit in result.chunks[: self.follow_up_k]:
                if any(_covers(old, hit) for old in state.chunks):
                    continue
                step = {"step": "retrieve_and_check", "round": n, "follow_up": fq}
                state.chunks.append(replace(hit, provenance=(*hit.provenance, step)))
                added += 1
        return added

    def _next(
        self, state: CheckResult, follow: list[str], added: int, audit: SPCResult | None
    ) -> None:
        if audit is not None:
            state.report = audit
            state.missing = list(audit.missing)
        state.rounds.append(
            Round(len(state.rounds) + 1, tuple(follow), added, tuple(state.missing))
        )
        if not added:
            state.stop_reason = "no new evidence"

    def _finish(self, state: CheckResult) -> CheckResult:
        if not state.stop_reason:
            state.stop_reason = "covered" if not state.missing else "max_rounds"
        return state


def _covers(old: ScoredChunk, new: ScoredChunk) -> bool:
    a, b = old.chunk, new.chunk
    return a.doc_id == b.doc_id and a.start <= b.start and b.end <= a.end
