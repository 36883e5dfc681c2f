"""BM25 alone at 100k and 1M chunks: semrag's ``BM25Index`` against bm25s and rank-bm25.

The scale benchmark (``scale.py``) builds the whole index; this one builds the BM25 part
alone, against its peers on the same tokens, and measures what it holds.

Corpus: the documents ``scale.py`` makes (sections of ../shared/data/sectioned_text, then
recombinations of them), cut into chunks of five consecutive lines (one sentence a line;
the scale index's chunks hold 5.4 sentences on average). Every library gets the same
tokens (``semrag.index.bm25_tokenize``).

Compared, in one process on the same tokens:

- ``BM25Index(idf="okapi")`` against ``rank_bm25.BM25Okapi`` (the reference: the scores
  agree to float rounding), and ``BM25Index(idf="lucene")`` against ``bm25s.BM25`` with
  ``method="lucene"`` (the same ranking: bm25s leaves out the constant factor ``k1 + 1``).
  Scores are compared on the ids both top 10s hold (bm25s keeps float32 scores).
  rank-bm25 scores every text in Python for each query term, so it is timed on fewer
  queries (``--peer-queries``) and left out above ``--rank-bm25-max`` chunks.
- Build: seconds to index every chunk from its tokens (tokenizing is not timed), and the
  memory the built index holds (traced by tracemalloc in a second, untimed build).
- Query: p50 / p95 ms of a top-10 search, each on a query the index has not answered
  (``scale.QUERIES`` in four wordings), and the top 10's agreement with the reference.

Usage: python benchmarks/bm25_scale.py [--chunks 100000 1000000] [--quick] [--out F]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import sys
import time
import tracemalloc

import numpy as np
from _common import emit, fresh, header, table
from scale import QUERIES, recombined

from semrag.index import BM25Index, bm25_tokenize

LINES = 5  # sentences a chunk
K = 10


def chunk_tokens(n: int) -> list[list[str]]:
    """Token lists of the first ``n`` chunks (terms interned: one string per term)."""
    out: list[list[str]] = []
    terms: dict[str, str] = {}
    for source in recombined():
        step = 1 if source.given else LINES  # a given source's lines are its chunks
        for start in range(0, len(source.lines), step):
            tokens = bm25_tokenize(" ".join(source.lines[start : start + step]))
            out.append([terms.setdefault(t, t) for t in tokens])
            if len(out) == n:
                return out
    raise AssertionError("recombined() does not end")


def timed(fn, queries: list[str]) -> tuple[list[float], list]:
    """Per-query ms and answers of ``fn``."""
    times, answers = [], []
    for q in queries:
        t0 = time.perf_counter()
        answers.append(fn(q))
        times.append(1000 * (time.perf_counter() - t0))
    return times, answers


def built(build):
    """``build()``'s result, its seconds, and the megabytes the result holds.

    The memory is traced (tracemalloc, which sees numpy's arrays too) in a first build
    that is not timed; the second build is timed without tracing.
    """
    gc.collect()
    tracemalloc.start()
    kept = build()
    mb = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    del kept
    gc.collect()
    t0 = time.perf_counter()
    result = build()
    return result, time.perf_counter() - t0, mb


def run_size(n: int, args: argparse.Namespace) -> list[dict]:
    import bm25s
    from rank_bm25 import BM25Okapi

    tokens = chunk_tokens(n)
    ids = list(range(n))
    queries = fresh(QUERIES, 4)
    rows = []

    def ours(idf: str) -> BM25Index:
        index = BM25Index(idf=idf)
        for lo in range(0, n, 100_000):
            index.add_tokens(ids[lo : lo + 100_000], tokens[lo : lo + 100_000])
        return index

    lucene, lucene_s, lucene_mb = built(lambda: ours("lucene"))
    lucene.search("a warm up query", K)
    t_lucene, a_lucene = timed(lambda q: lucene.search(q, K), queries)

    vocab = {t: j for j, t in enumerate(dict.fromkeys(itertools.chain.from_iterable(tokens)))}

    term_ids = [[vocab[t] for t in doc] for doc in tokens]

    def peer_bm25s():
        retriever = bm25s.BM25(method="lucene", k1=lucene.k1, b=lucene.b)
        retriever.index((term_ids, vocab), show_progress=False)
        return retriever

    peer, peer_s, peer_mb = built(peer_bm25s)
    term_ids.clear()

    def ask_bm25s(q: str) -> list[tuple[int, float]]:
        words = [t for t in bm25_tokenize(q) if t in vocab]
        if not words:
            return []
        found, scores = peer.retrieve([words], k=K, show_progress=False, n_threads=1)
        return [(int(i), float(s)) for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    t_peer, a_peer = timed(ask_bm25s, queries)
    rows.append(
        row(n, "semrag BM25Index(idf='lucene')", lucene_s, lucene_mb, t_lucene)
        | {
            "top-10 shared with the reference": overlap(a_lucene, a_peer),
            "max score difference": score_gap(a_lucene, a_peer, 1 + lucene.k1),
        }
    )
    rows.append(
        row(n, "bm25s BM25(method='lucene') (reference)", peer_s, peer_mb, t_peer)
        | {"p50 ratio peer / semrag": statistics.median(t_peer) / statistics.median(t_lucene)}
    )
    okapi, okapi_s, okapi_mb = built(lambda: ours("okapi"))
    okapi.search("a warm up query", K)
    t_okapi, a_okapi = timed(lambda q: okapi.search(q, K), queries)
    rows.append(row(n, "semrag BM25Index(idf='okapi')", okapi_s, okapi_mb, t_okapi))
    if n <= args.rank_bm25_max:
        ref, ref_s, ref_mb = built(lambda: BM25Okapi(tokens))
        asked = queries[: args.peer_queries]

        def ask_rank_bm25(q: str) -> list[tuple[int, float]]:
            words = bm25_tokenize(q)
            scores = ref.get_scores(words)
            top = np.argsort(-scores, kind="stable")[:K]  # texts sharing a word, as ours
            return [(int(i), float(scores[i])) for i in top if set(words) & set(tokens[i])]

        t_ref, a_ref = timed(ask_rank_bm25, asked)
        rows[-1] |= {
            "top-10 shared with the reference": overlap(a_okapi[: len(asked)], a_ref),
            "max score difference": score_gap(a_okapi, a_ref, 1.0),
        }
        rows.append(
            row(n, "rank_bm25 BM25Okapi (reference)", ref_s, ref_mb, t_ref)
            | {"p50 ratio peer / semrag": statistics.median(t_ref) / statistics.median(t_okapi)}
        )
    return rows


def row(n: int, name: str, seconds: float, mb: float, times: list[float]) -> dict:
    return {
        "chunks": f"{n:,}",
        "index": name,
        "build s": seconds,
        "held MB": mb,
        "p50 ms": statistics.median(times),
        "p95 ms": float(np.percentile(times, 95)),
    }


def overlap(mine: list, theirs: list) -> float:
    """Mean share of the reference's top 10 (ids) in ours."""
    shares = [
        len({i for i, _ in a} & {i for i, _ in b}) / len(b)
        for a, b in zip(mine, theirs, strict=True)
        if b
    ]
    return float(np.mean(shares)) if shares else float("nan")


def score_gap(mine: list, theirs: list, factor: float) -> float:
    """Largest difference of a score (ours divided by ``factor``) from the reference's, over
    the ids both top 10s hold."""
    gaps = [
        abs(s / factor - dict(b)[i])
        for a, b in zip(mine, theirs, strict=False)
        for i, s in a
        if i in dict(b)
    ]
    return max(gaps, default=float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2,000 chunks")
    ap.add_argument("--peer-queries", type=int, default=12)
    ap.add_argument("--rank-bm25-max", type=int, default=100_000)
    ap.add_argument("--out")
    args = ap.parse_args()
    sizes = [2_000] if args.quick else args.chunks
    rows = []
    for n in sizes:
        rows += run_size(n, args)
        print(table(rows[-4:], list(rows[-1])), file=sys.stderr, flush=True)
    columns = [
        "chunks",
        "index",
        "build s",
        "held MB",
        "p50 ms",
        "p95 ms",
        "top-10 shared with the reference",
        "max score difference",
        "p50 ratio peer / semrag",
    ]
    report = (
        header(
            "BM25 alone at " + " and ".join(f"{n:,}" for n in sizes) + " chunks",
            "../shared/data/sectioned_text sections, recombined as benchmarks/scale.py does, "
            f"in chunks of {LINES} lines; {len(QUERIES)} queries (scale.QUERIES) in four "
            "wordings, top 10",
        )
        + "\n"
        + table(rows, columns)
        + "\n"
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
