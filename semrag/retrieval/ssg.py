"""The seven retrieval algorithms over the semantic similarity graph (Lester, 2025).

All algorithms start from an *anchor*: the window node most similar to the query, found
with the index's FAISS node index. They visit nodes, extract each visited node's
sentences (deduplicated), and stop by the paper's rules:

* ``max_sentences`` extracted (default 15);
* early stop, once ``early_stop_after`` sentences are in hand (8; 5 for
  ``basic_retrieval``), when the best extracted sentence is closer to the query than the
  best candidate node still available;
* ``ssg_traversal`` stops when the next hop's similarity is no better than the last one.

No node is visited twice. The results are the visited windows merged into distinct spans
(windows of one document that overlap or touch become one span), so a prompt never sees a
sentence twice; each span carries, per step that reached it, the hop, the edge that led
to it, the step score and the sentences it contributed (see :class:`SSGRetriever`).

Algorithms (names as in the paper):

``basic_retrieval``
    No traversal: nodes in order of query similarity (the control).
``query_traversal``
    Best-first search on query similarity over a *global frontier* of every unvisited
    node adjacent to a visited one (the paper's ``argmax over C_unvisited``; its code only
    looked at the current node's neighbours).
``ssg_traversal``
    Follow the strongest edge from the current node, skipping nodes that share an already
    extracted sentence.
``triangulation_average``
    Next node maximises ``(sim(q, c_t) + sim(q, n) + sim(c_t, n)) / 3``.
``triangulation_geometric_3d``
    In a 3-D PCA space fitted once when the graph is built, the next node is the one whose
    triangle centroid ``(q + c_t + n) / 3`` is closest to ``q``.
``triangulation_fulldim``
    The same in the full space; since ``||(q + c + n)/3 - q|| = ||n - (2q - c)|| / 3`` it is a
    vectorised nearest-neighbour query around ``2q - c``.
``llm_guided_traversal``
    The query traversal with an LLM choosing: it picks the next node among the five best
    candidates of the frontier, or stops, with the paper's JSON prompt; an invalid reply
    falls back to the best candidate; a budget caps the calls (after it is spent the
    traversal continues greedily on query similarity).
"""

from __future__ import annotations

import asyncio
import functools
import numbers
from collections.abc import Generator
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from semrag._rwlock import ProvidesReader, as_reader
from semrag._steps import adrive, drive
from semrag._validation import (
    HasMethods,
    Interval,
    Options,
    Params,
    RenamedAttribute,
    check_k,
    check_query,
    renamed,
)
from semrag.errors import ConfigError, LLMOutputError
from semrag.index.reader import (
    CorpusReader,
    SimilarityGraphReads,
    SimilarityGraphView,
    StepwiseGraphView,
    aquery_vector,
    need,
    query_vector,
)
from semrag.llm import LLM, LLMFailed, extract_json, llm_failed, validate_json
from semrag.retrieval._traversal import (
    NEXT_HOP,
    Context,
    Frontier,
    Step,
    Traversal,
    Traversing,
    edge_kind,
    same_document,
    sentence_entry,
)
from semrag.retrieval.strategies import register
from semrag.types import Floats, ScoredChunk

__all__ = ["ALGORITHMS", "SSGRetriever", "Step", "Traversal"]

_T = TypeVar("_T")
_Reading = Generator[Any, Any, _T]
"""Steps that may yield a view's reads (answered with their rows)."""

ALGORITHMS = (
    "basic_retrieval",
    "query_traversal",
    "ssg_traversal",
    "triangulation_average",
    "triangulation_geometric_3d",
    "triangulation_fulldim",
    "llm_guided_traversal",
)

_CHOICE_SCHEMA = {
    "type": "object",
    "required": ["choice"],
    "properties": {"choice": {"type": ["integer", "string"]}, "reasoning": {"type": "string"}},
}

# The paper's prompt, verbatim apart from the number of candidates.
_LLM_PROMPT = (
    (
        "You are a semantic similarity graph traversal agent. "
        "Your goal: find relevant content to answer the query.\n"
    )
    + """QUERY: {query}
ALREADY EXTRACTED ({n} sentences):
{extracted}
CANDIDATE CHUNKS (pick ONE or STOP):
{candidates}
INSTRUCTIONS:
- Choose the chunk number (1-{m}) that seems most relevant to answering the query
- If you believe we have enough information to answer the query, respond with "stop"
- Consider both what we've already extracted and what new information each candidate provides
- Respond ONLY with a JSON object in this exact format:
{{"choice": <number 1-{m} OR "stop">, "reasoning": "brief explanation"}}
Your response:"""
)


class SSGRetriever(Params):
    """Retrieve by traversing the semantic similarity graph of a :class:`SemanticIndex`.

    Args:
        index: a :class:`~semrag.index.reader.CorpusReader` with a similarity graph (a
            ``SemanticIndex`` built with ``ssg`` on, or a ``Neo4jIndex`` written from one).
        strategy: one of :data:`ALGORITHMS` (``algorithm=`` before 0.3, still accepted with
            a ``DeprecationWarning`` until 0.4).
        k: most results returned: distinct spans (the visited windows of one document
            that overlap or touch, merged), best query similarity first.
        max_sentences: stop after extracting this many sentences; default
            ``max(15, 3 * k)`` so that ``k`` three-sentence nodes can be collected.
        early_stop: apply the paper's early-stopping rule.
        early_stop_after: sentences needed before early stopping applies; default 8
            (5 for ``basic_retrieval``, as in the paper).
        llm: the LLM of ``llm_guided_traversal`` (required for it).
        max_llm_calls: budget of LLM calls per query.
        candidates_per_hop: candidates shown to the LLM (the paper: 5).

    Examples:
        >>> from semrag import Document, SemanticIndex
        >>> from semrag.testing import FakeEmbedder
        >>> index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
        >>> index.add_documents([Document("a", "Cats purr. Cats nap. Cats eat fish.")])
        >>> hits = SSGRetriever(index, strategy="query_traversal", k=2).retrieve("cats nap")
        >>> hits[0].chunk.doc_id, hits[0].provenance[0]["algorithm"]
        ('a', 'query_traversal')
    """

    algorithm = RenamedAttribute("strategy")

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "index": [object],
        "strategy": [Options(*ALGORITHMS)],
        "k": [Interval(numbers.Integral, 1, None)],
        "max_sentences": [Interval(numbers.Integral, 1, None), None],
        "early_stop": [bool],
        "early_stop_after": [Interval(numbers.Integral, 1, None), None],
        "llm": [HasMethods("complete", "acomplete"), None],
        "max_llm_calls": [Interval(numbers.Integral, 0, None)],
        "candidates_per_hop": [Interval(numbers.Integral, 1, None)],
        "on_llm_error": [Options("fallback", "raise")],
    }

    def __init__(
        self,
        index: CorpusReader | SimilarityGraphReads | ProvidesReader,
        *,
        strategy: str = "query_traversal",
        k: int = 10,
        max_sentences: int | None = None,
        early_stop: bool = True,
        early_stop_after: int | None = None,
        llm: LLM | None = None,
        max_llm_calls: int = 8,
        candidates_per_hop: int = 5,
        on_llm_error: str = "fallback",
        **old_names: object,
    ) -> None:
        given = renamed(
            "SSGRetriever",
            old_names,
            locals(),
            {"algorithm": "strategy"},
            {"strategy": "query_traversal"},
        )
        p = self._check_params(given)
        if p["strategy"] == "llm_guided_traversal" and llm is None:
            raise ConfigError("llm_guided_traversal needs an llm")
        reader = need(as_reader(index), SimilarityGraphReads, by="SSGRetriever")
        if reader.ssg_config is None:
            raise ConfigError(
                "SSG retrieval needs the semantic similarity graph, which this index does not "
                "keep: build it with SemanticIndex(ssg=True) or add it with index.enable('ssg')"
            )
        self.index, self.llm, self.on_llm_error = reader, llm, on_llm_error
        self.strategy, self.k, self.max_sentences = p["strategy"], p["k"], p["max_sentences"]
        self.early_stop, self.early_stop_after = p["early_stop"], p["early_stop_after"]
        self.max_llm_calls, self.candidates_per_hop = p["max_llm_calls"], p["candidates_per_hop"]

    # -- public -----------------------------------------------------------------------------
    def retrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Traverse from the query's anchor and return the best ``k`` distinct spans.

        The traversal visits overlapping sentence windows; what it returns never repeats a
        sentence: windows of one document that overlap or touch become one span, with one
        provenance entry per step that reached it (``hop``, ``node``, ``from``, ``edge``,
        the sentences that step added).
        """
        k = check_k("SSGRetriever", k, self.k)
        q = query_vector(self.index, check_query("SSGRetriever", query))
        view = self.index.ssg_view()
        return self._results(q, self._drive(self._run(query, q, k, view), view), k, view)

    def retrieve_vector(
        self, vector: Floats, *, k: int | None = None, query: str = ""
    ) -> list[ScoredChunk]:
        """Like :meth:`retrieve`, for a query vector you already have.

        ``query`` is only shown to the LLM of ``llm_guided_traversal``.

        Raises:
            ConfigError: if the vector has the wrong size or a NaN / infinite value.
        """
        k = check_k("SSGRetriever", k, self.k)
        q = np.asarray(vector, dtype=np.float32).ravel()
        dim = self.index.embedder.dim
        if q.shape != (dim,) or not np.isfinite(q).all():
            raise ConfigError(
                f"SSGRetriever: the query vector must be {dim} finite numbers, got shape "
                f"{q.shape} with {int((~np.isfinite(q)).sum())} non-finite"
            )
        view = self.index.ssg_view()
        return self._results(q, self._drive(self._run(query, q, k, view), view), k, view)

    async def aretrieve(self, query: str, *, k: int | None = None) -> list[ScoredChunk]:
        """Async twin of :meth:`retrieve`.

        LLM calls are awaited, and so are the reads of a view served from a database
        (:class:`~semrag.neo4j.Neo4jIndex`: on its async driver); the traversal's CPU work
        (and a graph build after a change) runs in worker threads, so the event loop is
        never blocked.
        """
        k = check_k("SSGRetriever", k, self.k)
        q = await aquery_vector(self.index, check_query("SSGRetriever", query))
        view = await asyncio.to_thread(self.index.ssg_view)
        traversal = await adrive(
            self._run(query, q, k, view), functools.partial(self._aanswer, view)
        )
        return await asyncio.to_thread(self._results, q, traversal, k, view)

    def traverse(self, query: str, *, k: int | None = None) -> Traversal:
        """The raw traversal (steps, stop reason, LLM calls) for ``query``."""
        q = query_vector(self.index, check_query("SSGRetriever", query))
        k = check_k("SSGRetriever", k, self.k)
        view = self.index.ssg_view()
        return self._drive(self._run(query, q, k, view), view)

    def _drive(self, gen: Traversing, view: SimilarityGraphView) -> Traversal:
        return drive(gen, functools.partial(self._answer, view))

    def _answer(self, view: SimilarityGraphView, ask: object) -> object:
        """A prompt's reply, or the rows of a read the view asked for."""
        if isinstance(ask, str):
            return self._complete(ask)
        return need(view, StepwiseGraphView, by="SSGRetriever").fetch(ask)

    async def _aanswer(self, view: SimilarityGraphView, ask: object) -> object:
        if isinstance(ask, str):
            return await self._acomplete(ask)
        return await need(view, StepwiseGraphView, by="SSGRetriever").afetch(ask)

    def _complete(self, prompt: str) -> str | LLMFailed:
        assert self.llm is not None
        try:
            return self.llm.complete(prompt)
        except Exception as exc:  # every LLM failure takes the documented path
            return llm_failed(exc, self.on_llm_error)

    async def _acomplete(self, prompt: str) -> str | LLMFailed:
        assert self.llm is not None
        try:
            return await self.llm.acomplete(prompt)
        except Exception as exc:  # every LLM failure takes the documented path
            return llm_failed(exc, self.on_llm_error)

    # -- engine -------------------------------------------------------------------------------
    def _limits(self, k: int) -> tuple[int, int]:
        max_s = self.max_sentences or max(15, 3 * k)
        after = self.early_stop_after
        if after is None:
            after = 5 if self.strategy == "basic_retrieval" else 8
        return max_s, after

    def _run(self, query: str, q: Floats, k: int, view: SimilarityGraphView) -> Traversing:
        # An empty index shows as an anchor search that finds nothing (a view served from a
        # database learns its size with that search, not before it).
        ctx = Context(view, q)
        max_s, after = self._limits(k)
        if self.strategy == "basic_retrieval":
            return (yield from self._basic(ctx, max_s, after))
        if self.strategy == "llm_guided_traversal":
            return (yield from self._llm_guided(ctx, query, max_s, after))
        return (yield from self._greedy(ctx, max_s, after))

    def _search(self, ctx: Context, k: int, *, pca: bool = False) -> _Reading[tuple[Floats, Any]]:
        """The node search, as a step on a view that reads as it goes (``StepwiseGraphView``).

        Such a view loads the best candidates with the search: the nodes visited first.
        """
        if not isinstance(ctx.view, StepwiseGraphView):
            return ctx.view.node_index.search(ctx.q, k)
        rank = NEXT_HOP.get(self.strategy, "query")
        return (yield from ctx.view.search_steps(ctx.q, k, pca=pca, load=k, rank=rank))

    def _load(self, ctx: Context, nodes: Any) -> _Reading[None]:
        """Bring the nodes' sentences and edges in, on a view that reads as it goes.

        The view also brings the out-neighbours the first node's next hop most likely goes
        to, ranked by this algorithm's rule.
        """
        if isinstance(ctx.view, StepwiseGraphView):
            rank = NEXT_HOP.get(self.strategy, "query")
            yield from ctx.view.load_steps([int(n) for n in nodes], rank=rank, visited=ctx.visited)

    def _start(self, ctx: Context) -> _Reading[tuple[Traversal, int]]:
        """The traversal with its anchor visited, and the anchor (``-1``: an empty index)."""
        pca = self.strategy == "triangulation_geometric_3d"
        _, ids = yield from self._search(ctx, 1, pca=pca)
        anchor = int(ids[0, 0])
        if anchor < 0:
            return Traversal(stop_reason="empty index"), anchor
        yield from self._load(ctx, [anchor])
        sim = ctx.node_sim(anchor)
        return Traversal(
            [Step(anchor, None, "anchor", float("nan"), sim, ctx.visit(anchor))]
        ), anchor

    def _should_stop_early(self, ctx: Context, after: int, best_available: float) -> bool:
        return (
            self.early_stop and len(ctx.extracted) >= after and ctx.best_sentence() > best_available
        )

    def _basic(self, ctx: Context, max_s: int, after: int) -> _Reading[Traversal]:
        _, ids = yield from self._search(ctx, 4 * max_s)  # fewer nodes: padded with -1
        order = [int(i) for i in ids[0] if i >= 0]
        if not order:
            return Traversal(stop_reason="empty index")
        t = Traversal()
        for pos, node in enumerate(order):
            if len(ctx.extracted) >= max_s:
                t.stop_reason = "max_sentences"
                break
            if pos and self._should_stop_early(ctx, after, ctx.node_sim(node)):
                t.stop_reason = "best sentence beats next chunk"
                break
            sim = ctx.node_sim(node)
            yield from self._load(ctx, [node])
            t.steps.append(Step(node, None, "rank", float("nan"), sim, ctx.visit(node)))
        else:
            t.stop_reason = "ranking exhausted"
        return t

    def _greedy(self, ctx: Context, max_s: int, after: int) -> _Reading[Traversal]:
        algo = self.strategy
        t, anchor = yield from self._start(ctx)
        if anchor < 0:
            return t
        current = anchor
        frontier = Frontier(ctx)
        last_edge = -np.inf
        q3 = None
        if algo == "triangulation_geometric_3d":
            q3 = ctx.graph.project_3d(ctx.q[None, :])[0]
        if algo == "query_traversal":
            frontier.expand(anchor)
        while True:
            if len(ctx.extracted) >= max_s:
                t.stop_reason = "max_sentences"
                break
            if algo == "query_traversal":
                best_entries = frontier.best(1)
                if not best_entries:
                    t.stop_reason = "frontier exhausted"
                    break
                neg, node, parent, kind, edge = best_entries[0]
                if self._should_stop_early(ctx, after, -neg):
                    t.stop_reason = "best sentence beats best available chunk"
                    break
                yield from self._load(ctx, [node])
                t.steps.append(Step(node, parent, edge_kind(kind), edge, -neg, ctx.visit(node)))
                frontier.expand(node)
                continue
            ids, edges, kinds = ctx.candidates(current)
            if algo == "ssg_traversal" and ids.size:
                keep = np.array(
                    [not any(s in ctx.extracted for s in ctx.sentences_of(int(i))) for i in ids],
                    dtype=bool,
                )
                ids, edges, kinds = ids[keep], edges[keep], kinds[keep]
            if not ids.size:
                t.stop_reason = "no unvisited neighbour"
                break
            qs = ctx.node_sims(ids)
            scores: npt.NDArray[np.floating[Any]]
            if algo == "ssg_traversal":
                scores = edges.astype(np.float32)
            elif algo == "triangulation_average":
                scores = (ctx.node_sim(current) + qs + edges) / 3
            elif algo == "triangulation_geometric_3d":
                n3 = ctx.graph.project_3d(ctx.nodes[ids])
                c3 = ctx.graph.project_3d(ctx.nodes[current][None, :])[0]
                scores = -np.linalg.norm((q3 + c3 + n3) / 3 - q3, axis=1)
            else:  # triangulation_fulldim: ||(q+c+n)/3 - q|| = ||n - (2q - c)|| / 3
                target = 2 * ctx.q - ctx.nodes[current]
                scores = -np.linalg.norm(ctx.nodes[ids] - target, axis=1) / 3
            best = int(np.argmax(scores))
            if algo == "ssg_traversal":
                if edges[best] <= last_edge:
                    t.stop_reason = "next hop no better than the last"
                    break
                last_edge = float(edges[best])
            elif algo == "triangulation_average":
                c_vec = ctx.nodes[current]
                ext = list(ctx.extracted)
                s_avg = (ctx.node_sim(current) + ctx.sent[ext] @ ctx.q + ctx.sent[ext] @ c_vec) / 3
                if (
                    self.early_stop
                    and len(ext) >= after
                    and float(s_avg.max()) > float(scores[best])
                ):
                    t.stop_reason = "best sentence average beats best chunk average"
                    break
            elif self._should_stop_early(ctx, after, float(qs.max())):
                t.stop_reason = "best sentence beats best available chunk"
                break
            node = int(ids[best])
            yield from self._load(ctx, [node])
            t.steps.append(
                Step(
                    node,
                    current,
                    edge_kind(int(kinds[best])),
                    float(edges[best]),
                    float(scores[best]),
                    ctx.visit(node),
                )
            )
            current = node
        return t

    def _llm_guided(self, ctx: Context, query: str, max_s: int, after: int) -> Traversing:
        t, anchor = yield from self._start(ctx)
        if anchor < 0:
            return t
        frontier = Frontier(ctx)
        frontier.expand(anchor)
        while len(ctx.extracted) < max_s:
            entries = frontier.best(self.candidates_per_hop)
            if not entries:
                t.stop_reason = "frontier exhausted"
                return t
            ids = np.array([e[1] for e in entries], dtype=np.int64)
            sims = np.array([-e[0] for e in entries], dtype=np.float32)
            note = "LLM budget spent: best candidate by query similarity"
            choice = 0
            yield from self._load(ctx, ids)  # the prompt shows them; one is visited next
            if t.llm_calls < self.max_llm_calls:
                t.llm_calls += 1
                reply = yield self._prompt(ctx, query, ids, sims)
                decision = self._parse_choice(reply, len(entries))
                if decision == "stop":
                    t.stop_reason = "llm chose to stop"
                    return t
                if decision is None:
                    why = (
                        reply.reason
                        if isinstance(reply, LLMFailed)
                        else "LLM reply invalid (no valid choice)"
                    )
                    if self.on_llm_error == "raise":
                        raise LLMOutputError(f"llm_guided_traversal: {why}", reply=str(reply))
                    note = f"{why}: fell back to the best candidate"
                else:
                    choice, note = int(decision), "llm choice"
            neg, node, parent, kind, edge = entries[choice]
            t.steps.append(Step(node, parent, edge_kind(kind), edge, -neg, ctx.visit(node), note))
            frontier.expand(node)
        t.stop_reason = "max_sentences"
        return t

    def _prompt(self, ctx: Context, query: str, ids: np.ndarray, sims: np.ndarray) -> str:
        first = sorted(ctx.extracted)[:5]
        extracted = "\n".join(ctx.view.sentence_text(s) for s in first) or "(nothing yet)"
        cands = []
        for rank, (node, sim) in enumerate(zip(ids.tolist(), sims.tolist(), strict=True), 1):
            chunk = ctx.view.node_chunk(node)
            head = f"{rank}. [{chunk.doc_id}#{node}] (similarity: {sim:.2f})"
            cands.append(f"{head}\nPreview: {chunk.text[:200]}...")
        return _LLM_PROMPT.format(
            query=query,
            n=len(ctx.extracted),
            extracted=extracted,
            candidates="\n".join(cands),
            m=len(ids),
        )

    @staticmethod
    def _parse_choice(reply: Any, n: int) -> int | str | None:
        """0-based choice, ``"stop"``, or ``None`` for an invalid reply."""
        if not isinstance(reply, str):
            return None
        try:
            value = extract_json(reply)
            validate_json(value, _CHOICE_SCHEMA)
        except ValueError:
            return None
        choice = value["choice"]
        if isinstance(choice, str):
            if choice.strip().lower() == "stop":
                return "stop"
            if not choice.strip().isdigit():
                return None
            choice = int(choice.strip())
        return choice - 1 if 1 <= choice <= n else None

    # -- results --------------------------------------------------------------------------------
    def _results(
        self, q: Floats, traversal: Traversal, k: int, view: SimilarityGraphView
    ) -> list[ScoredChunk]:
        """The visited nodes' sentences as distinct spans, best first.

        Overlapping or adjacent windows of one document are merged into one span, so no
        sentence is returned twice; each span carries one provenance entry per step that
        contributed to it (in traversal order) and scores as its best node.
        """
        ctx_sent = view.sentence_matrix
        path = [s.node for s in traversal.steps]
        step_of: dict[int, int] = {}  # global sentence -> the hop that extracted it
        for hop, step in enumerate(traversal.steps):
            for s in step.sentences:
                step_of.setdefault(s, hop)
        spans: list[list[int]] = []
        for s in sorted(step_of):
            same_doc = spans and spans[-1][-1] == s - 1 and same_document(view, s - 1, s)
            if same_doc:
                spans[-1].append(s)
            else:
                spans.append([s])
        hits: list[ScoredChunk] = []
        for run in spans:
            hops = sorted({step_of[s] for s in run})
            provenance = []
            for hop in hops:
                step = traversal.steps[hop]
                entry = {
                    "channel": "ssg",
                    "algorithm": self.strategy,
                    "hop": hop,
                    "node": step.node,
                    "from": step.parent,
                    "edge": step.edge,
                    "edge_score": None if np.isnan(step.edge_score) else step.edge_score,
                    "step_score": step.step_score,
                    "node_score": float(view.graph.node_vectors[step.node] @ q),
                    "sentences": [
                        sentence_entry(view, s, float(ctx_sent[s] @ q)) for s in step.sentences
                    ],
                    "path": path,
                    "stop_reason": traversal.stop_reason,
                    "index_version": view.version,
                }
                if step.note:
                    entry["note"] = step.note
                provenance.append(entry)
            best = max(provenance, key=lambda p: p["node_score"])
            chunk = view.sentences_chunk(run[0], run[-1] + 1, index=best["node"])
            scores = {"dense": best["node_score"], "step": max(p["step_score"] for p in provenance)}
            hits.append(ScoredChunk(chunk, best["node_score"], scores, tuple(provenance)))
        hits.sort(key=lambda h: -h.score)
        return hits[:k]


for _algorithm in ALGORITHMS:  # GraphRetriever(strategy="ssg:<algorithm>")
    register(f"ssg:{_algorithm}", strategy=_algorithm)(SSGRetriever)
