from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semrag.chunking._split import (
    Threshold,
    cosine_distances,
    mean_windows,
    merge_small_segments,
    resolve_threshold,
    segments_from_breaks,
    split_with_overlap,
    window_bounds,
)
from semrag.errors import ConfigError, SemragError
from semrag.text import WhitespaceTokenizer
from semrag.types import Span


def test_window_bounds_centered_matches_langchain_shape():
    left, right = window_bounds(5, 1, "centered")
    assert left.tolist() == [[0, 2], [0, 3], [1, 4], [2, 5]]
    assert right.tolist() == [[0, 3], [1, 4], [2, 5], [3, 5]]


def test_window_bounds_split_never_shares_a_sentence():
    left, right = window_bounds(5, 2, "split")
    assert left.tolist() == [[0, 1], [0, 2], [0, 3], [1, 4]]
    assert right.tolist() == [[1, 4], [2, 5], [3, 5], [4, 5]]
    assert all(lb <= ra for (_, lb), (ra, _) in zip(left, right, strict=True))


def test_window_bounds_degenerate():
    left, right = window_bounds(1, 3, "split")
    assert left.shape == (0, 2) and right.shape == (0, 2)
    with pytest.raises(ConfigError, match="window must be 'centered' or 'split', got"):
        window_bounds(3, 1, "diagonal")


def test_mean_windows_equals_naive_mean():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(7, 5)).astype(np.float32)
    ranges = np.array([[0, 3], [2, 7], [4, 5]])
    got = mean_windows(v, ranges)
    want = np.stack([v[a:b].mean(axis=0) for a, b in ranges])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cosine_distances():
    a = np.array([[1, 0], [1, 0], [0, 0]], dtype=np.float32)
    b = np.array([[1, 0], [0, 1], [1, 0]], dtype=np.float32)
    np.testing.assert_allclose(cosine_distances(a, b), [0, 1, 1])


D = np.array([0.1, 0.9, 0.2, 0.3, 0.8, 0.1], dtype=np.float32)


@pytest.mark.parametrize(
    ("threshold", "amount", "expected"),
    [
        (0.5, None, [1, 4]),
        ("percentile", 60, [1, 4]),
        ("percentile", 80, [1]),
        ("percentile", 95, [1]),
        ("std", 0.5, [1, 4]),
        ("interquartile", 0.5, [1, 4]),
        ("interquartile", 1.0, []),
        ("target_chunks", 2, [1]),
        ("target_chunks", 3, [1, 4]),
        ("target_chunks", 50, [0, 1, 2, 3, 4, 5]),
        ("target_chunks", 1, []),
    ],
)
def test_resolve_threshold(threshold, amount, expected):
    value, mask = resolve_threshold(D, Threshold.of(threshold, amount))
    assert np.flatnonzero(mask).tolist() == expected
    assert np.isfinite(value) or threshold == "target_chunks"


def test_gradient_threshold_breaks_on_the_steepest_rise():
    d = np.array([0.1, 0.1, 0.1, 0.9, 0.1, 0.1], dtype=np.float32)
    value, mask = resolve_threshold(d, Threshold.of("gradient", 80))
    assert np.flatnonzero(mask).tolist() == [2]


def test_empty_curve():
    value, mask = resolve_threshold(np.zeros(0, np.float32), Threshold.of("percentile"))
    assert mask.size == 0 and np.isnan(value)


@pytest.mark.parametrize(
    ("threshold", "amount", "message"),
    [
        ("median", None, "threshold must be a number or one of"),
        ("percentile", 120, r"percentile must be within \[0, 100\], got 120"),
        ("target_chunks", 0, "target_chunks must be a positive integer, got 0"),
        ("target_chunks", 2.5, "target_chunks must be a positive integer, got 2.5"),
        ("absolute", None, "threshold='absolute' needs threshold_amount"),
        (0.3, 5, "either a numeric threshold or threshold_amount, not both"),
        (True, None, "a number or a name, not a bool"),
        (float("nan"), None, "threshold amount must be finite, got nan"),
    ],
)
def test_threshold_validation(threshold, amount, message):
    with pytest.raises(ConfigError, match=message):
        Threshold.of(threshold, amount)


def test_segments_from_breaks():
    assert segments_from_breaks(4, np.array([False, True, False])) == [(0, 2), (2, 4)]
    assert segments_from_breaks(0, np.zeros(0, bool)) == []


def test_merge_small_segments_joins_the_closer_neighbour():
    segs = [(0, 2), (2, 3), (3, 5)]
    tokens = [10, 10, 2, 10, 10]
    distances = np.array([0.1, 0.9, 0.3, 0.1], dtype=np.float32)
    merged, removed = merge_small_segments(segs, tokens, distances, min_tokens=5, max_tokens=100)
    # Segment (2, 3) is closer to its right neighbour (distance 0.3 < 0.9).
    assert merged == [(0, 2), (2, 5)]
    assert removed == [2]


def test_merge_small_segments_respects_max_tokens():
    segs = [(0, 1), (1, 2), (2, 3)]
    tokens = [50, 2, 50]
    distances = np.array([0.1, 0.2], dtype=np.float32)
    merged, removed = merge_small_segments(segs, tokens, distances, min_tokens=5, max_tokens=51)
    assert merged == segs and removed == []


def _merge_by_rescanning(segments, tokens, distances, min_tokens, max_tokens):
    """The first implementation (rescans from the start after every merge): the reference."""
    segs = [list(x) for x in segments]
    prefix = np.concatenate([[0], np.cumsum(tokens)])
    size = lambda seg: int(prefix[seg[1]] - prefix[seg[0]])  # noqa: E731
    removed, changed = [], True
    while changed and len(segs) > 1 and min_tokens > 0:
        changed = False
        for i in range(len(segs)):
            if size(segs[i]) >= min_tokens:
                continue
            options = []
            if i > 0:
                options.append((float(distances[segs[i][0] - 1]), i - 1))
            if i + 1 < len(segs):
                options.append((float(distances[segs[i][1] - 1]), i + 1))
            for _, j in sorted(options):
                a, b = sorted((i, j))
                if size([segs[a][0], segs[b][1]]) <= max_tokens:
                    removed.append(segs[a][1] - 1)
                    segs[a] = [segs[a][0], segs[b][1]]
                    del segs[b]
                    changed = True
                    break
            if changed:
                break
    return [tuple(x) for x in segs], sorted(removed)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=40),
    st.data(),
    st.integers(0, 40),
    st.integers(1, 120),
)
def test_merge_small_segments_in_one_pass_equals_rescanning(tokens, data, min_tokens, max_tokens):
    n = len(tokens)
    breaks = data.draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))
    segs = segments_from_breaks(n, np.array(breaks, dtype=bool))
    distances = np.array(
        data.draw(st.lists(st.sampled_from([0.1, 0.2, 0.5, 0.9]), min_size=n - 1, max_size=n - 1)),
        dtype=np.float32,
    )
    got = merge_small_segments(
        segs, tokens, distances, min_tokens=min_tokens, max_tokens=max_tokens
    )
    assert got == _merge_by_rescanning(segs, tokens, distances, min_tokens, max_tokens)


def _split(text, max_tokens, overlap, prefer=()):
    tok = WhitespaceTokenizer()
    return split_with_overlap(
        text,
        Span(0, len(text)),
        tok.offsets(text),
        max_tokens=max_tokens,
        overlap_tokens=overlap,
        count=lambda t: tok.count([t])[0],
        preferred_starts=prefer,
    )


def test_split_with_overlap_caps_and_overlaps_exactly():
    text = " ".join(f"w{i}" for i in range(25))
    pieces = [s.of(text).split() for s in _split(text, 10, 3)]
    assert all(len(p) <= 10 for p in pieces)
    for a, b in zip(pieces, pieces[1:], strict=False):
        assert a[-3:] == b[:3]
    assert pieces[0][0] == "w0" and pieces[-1][-1] == "w24"


def test_split_with_overlap_prefers_sentence_starts():
    text = "a b c d e f. g h i j k l m n"
    prefer = [text.index("g")]
    pieces = [s.of(text) for s in _split(text, 8, 0, prefer)]
    assert pieces[0] == "a b c d e f."


def test_split_without_overlap_tiles():
    text = "  ".join(f"w{i}" for i in range(23))
    spans = _split(text, 5, 0)
    assert "".join(s.of(text) for s in spans).replace(" ", "") == text.replace(" ", "")
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False))


def test_split_overlap_must_be_below_cap():
    with pytest.raises(ConfigError, match="overlap_tokens must be smaller than"):
        _split("a b c", 2, 2)


def test_split_raises_when_one_token_cannot_fit():
    def count(t):
        return 999 if t else 0

    with pytest.raises(SemragError, match="cannot cut"):
        split_with_overlap(
            "ab cd", Span(0, 5), [(0, 2), (3, 5)], max_tokens=8, overlap_tokens=0, count=count
        )
