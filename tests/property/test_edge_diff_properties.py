"""The Neo4j writer rewrites exactly the edge lists that changed (no server needed).

``changed_sources`` compares per-source summaries (length and a multiset hash); a brute
force over the edge lists, as sets, must find the same sources.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.neo4j._index_rows import changed_sources

DOCS = ["a", "b", "c"]

edge = st.tuples(
    st.integers(0, 2),  # source document
    st.integers(0, 3),  # source window
    st.integers(0, 2),  # target document
    st.integers(0, 3),  # target window
    st.integers(0, 1),  # kind
    st.sampled_from([0, 1, -7, 1 << 30, -(1 << 31)]),  # score bits (int32)
)


def grouped(edges: list[tuple[int, ...]]) -> np.ndarray:
    """Rows grouped by source, as a similarity graph's CSR order gives them."""
    unique = sorted(set(edges), key=lambda e: (e[0], e[1]))
    return np.array(unique, np.int64).reshape(-1, 6)


def brute(old: np.ndarray, new: np.ndarray, added: set[str]) -> set[tuple[int, int]]:
    lists: dict[tuple[int, int], list[set]] = {}
    for side, rows in enumerate((old, new)):
        for row in rows.tolist():
            if DOCS[row[0]] in added:
                continue
            lists.setdefault((row[0], row[1]), [set(), set()])[side].add(tuple(row[2:]))
    return {s for s, (a, b) in lists.items() if a != b}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(edge, max_size=30),
    st.lists(edge, max_size=30),
    st.sets(st.sampled_from(DOCS), max_size=1),
    st.randoms(use_true_random=False),
)
def test_changed_sources_are_the_sources_whose_edge_sets_differ(old, new, added, rnd):
    old_rows = grouped(old)
    # the new graph: a mix of old edges and new ones, each list in any order
    new_rows = grouped(old[: len(old) // 2] + new)
    shuffled = new_rows.copy()
    for key in {tuple(r[:2]) for r in shuffled.tolist()}:
        at = np.flatnonzero((shuffled[:, 0] == key[0]) & (shuffled[:, 1] == key[1]))
        order = at.copy()
        rnd.shuffle(order)
        shuffled[at] = new_rows[order]
    want = brute(old_rows, new_rows, added)
    assert changed_sources(old_rows, shuffled, DOCS, added) == want
    assert changed_sources(old_rows, old_rows, DOCS, added) == set()
