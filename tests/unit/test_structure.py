"""The document's own layout as break priors, and breaks sized to a target."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semrag import SemanticChunker
from semrag.chunking._split import sized_breaks
from semrag.errors import ConfigError
from semrag.testing import FakeEmbedder, check_chunks
from semrag.text import WhitespaceTokenizer, split_sentences
from semrag.text.structure import TITLE_LEVEL, layout
from semrag.types import HEADINGS_KEY
from tests.strategies import any_text


def lay(text):
    return layout(text, split_sentences(text))


def test_markdown_headings_paragraphs_and_tables():
    text = (
        "# Cats\n\nCats purr. They nap.\n\n## Food\nCats eat fish.\n\n"
        "| a | b |\n| c | d |\n\n```python\n# not a heading\nx = 1\n```\n\nThe end."
    )
    out = lay(text)
    sents = [s.of(text) for s in split_sentences(text)]
    heads = {sents[i]: int(level) for i, level in enumerate(out.heading) if level}
    assert heads == {"# Cats": 1, "## Food": 2}
    rows = [i for i in range(len(sents) - 1) if out.table[i]]
    assert [sents[i] for i in rows] == ["| a | b |"]
    assert out.paths()[sents.index("Cats eat fish.")] == ("Cats", "Food")
    assert out.path(sents.index("They nap.")) == ("Cats",)


def test_title_lines_and_wrapped_paragraphs():
    text = (
        "Background\nThe study looked at forty patients over two years in one clinic.\n\n"
        "Semantic chunking splits documents where the topic changes, as\n"
        "the papers describe, and keeps the offsets of every chunk exact.\n\n"
        "Results and discussion\n\nMost patients improved."
    )
    out = lay(text)
    sents = [s.of(text) for s in split_sentences(text)]
    titled = [sents[i] for i, level in enumerate(out.heading) if level]
    assert titled == ["Background", "Results and discussion"]
    assert set(out.heading[out.heading > 0].tolist()) == {TITLE_LEVEL}


def test_wiki_headings_and_a_level_that_closes_a_section():
    text = "= History =\n\nIt began.\n\n== Early years ==\n\nSmall.\n\n= Today =\n\nLarge."
    out = lay(text)
    sents = [s.of(text) for s in split_sentences(text)]
    assert out.paths()[sents.index("Small.")] == ("History", "Early years")
    assert out.paths()[sents.index("Large.")] == ("Today",)


def test_sized_breaks_follow_rewards_and_target():
    tokens = [10] * 8
    flat = np.zeros(7)
    # No reward anywhere: chunks of the target size (20 tokens = 2 sentences).
    assert sized_breaks(tokens, flat, target=20, max_tokens=100, weight=1.0).tolist() == [
        False,
        True,
        False,
        True,
        False,
        True,
        False,
    ]
    # A strong reward moves a break onto its gap.
    rewards = flat.copy()
    rewards[2] = 5.0
    assert sized_breaks(tokens, rewards, target=40, max_tokens=100, weight=1.0)[2]


def test_sized_breaks_respect_cap_forced_and_blocked():
    tokens = [30, 30, 30, 30, 30]
    gaps = np.zeros(4)
    mask = sized_breaks(tokens, gaps, target=1000, max_tokens=60, weight=1.0)
    prefix = np.concatenate([[0], np.cumsum(tokens)])
    cuts = [0, *(np.flatnonzero(mask) + 1).tolist(), len(tokens)]
    assert all(prefix[b] - prefix[a] <= 60 for a, b in zip(cuts, cuts[1:], strict=False))
    forced = np.array([False, False, True, False])
    assert sized_breaks(tokens, gaps, target=1000, max_tokens=1000, weight=1.0, forced=forced)[2]
    blocked = np.ones(4, dtype=bool)
    mask = sized_breaks(tokens, gaps + 9, target=30, max_tokens=1000, weight=1.0, blocked=blocked)
    assert not mask.any()


def _objective(mask, tokens, rewards, target, cap):
    """sized_breaks's objective for one mask (weight 1), -inf when a chunk passes the cap."""
    cuts = [0, *(np.flatnonzero(mask) + 1).tolist(), len(tokens)]
    total = float(rewards[mask].sum())
    for a, b in zip(cuts, cuts[1:], strict=False):
        size = sum(tokens[a:b])
        if size > cap and b - a > 1:
            return -np.inf
        total -= ((size - target) / target) ** 2
    return total


def test_sized_breaks_is_the_optimum_of_its_objective():
    # Targets well under the cap and negative rewards: the scan's early stop (past the
    # target, once no earlier start can win) must never skip the optimum.
    rng = np.random.default_rng(0)
    for _ in range(80):
        n = int(rng.integers(2, 10))
        tokens = rng.integers(0, 30, size=n).tolist()
        rewards = rng.uniform(-1.0, 2.0, n - 1)
        target = float(rng.choice([5.0, 12.0, 25.0]))
        args = (tokens, rewards, target, 60)
        best = max(
            _objective(np.array([(m >> g) & 1 for g in range(n - 1)], dtype=bool), *args)
            for m in range(2 ** (n - 1))
        )
        got = sized_breaks(tokens, rewards, target=target, max_tokens=60, weight=1.0)
        assert _objective(got, *args) == pytest.approx(best)


def test_chunks_start_at_headings_and_carry_their_path():
    text = (
        "# Bees\n\nBees make honey in hives. Bees dance to share where flowers are.\n\n"
        "## Stings\n\nA bee stings once and dies. Wasps can sting many times.\n\n"
        "# Moon\n\nApollo 11 landed on the Moon. Astronauts walked on its dust."
    )
    chunker = SemanticChunker(FakeEmbedder(), tokenizer=WhitespaceTokenizer(), max_tokens=64)
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=64)
    starts = {c.text.split("\n")[0]: c.metadata.get(HEADINGS_KEY) for c in chunks}
    assert starts["# Stings" if "# Stings" in starts else "## Stings"] == ["Bees", "Stings"]
    assert starts["# Moon"] == ["Moon"]
    # A heading never ends a chunk: it always opens the chunk of its section.
    assert not any(c.text.endswith(("# Bees", "## Stings", "# Moon")) for c in chunks)


def test_no_headings_no_headings_key_and_documents_keep_their_metadata():
    chunker = SemanticChunker(FakeEmbedder())
    chunks = chunker.chunk("Plain text. Nothing else here.", metadata={"source": "a.txt"})
    assert all(c.metadata == {"source": "a.txt"} for c in chunks)


def test_target_is_a_share_of_the_cap_or_given():
    assert SemanticChunker(FakeEmbedder()).target == pytest.approx(80)
    assert SemanticChunker(FakeEmbedder(), max_tokens=1000).target == pytest.approx(312.5)
    assert SemanticChunker(FakeEmbedder(), target_tokens=50).target == 50
    assert SemanticChunker(FakeEmbedder(), target_tokens=None).threshold == "std"
    with pytest.raises(ConfigError, match="target_tokens"):
        SemanticChunker(FakeEmbedder(), target_tokens=300, max_tokens=256)
    with pytest.raises(ConfigError, match="target_tokens"):
        SemanticChunker(FakeEmbedder(), target_tokens="big")


def test_sizing_makes_chunks_near_the_target():
    text = " ".join(f"Sentence number {i} talks about item {i % 7} today." for i in range(200))
    chunker = SemanticChunker(FakeEmbedder(), tokenizer=WhitespaceTokenizer(), max_tokens=160)
    sizes = [c.token_count for c in chunker.chunk(text)]
    assert 30 <= np.median(sizes) <= 70  # target 50 words, sentences of 9 words
    assert max(sizes) <= 160


# -- property tests: Markdown and plain text -------------------------------------------------
_word = st.text(alphabet="abcdefghij", min_size=1, max_size=8)
_sentence = st.lists(_word, min_size=1, max_size=12).map(lambda w: " ".join(w).capitalize() + ".")
_paragraph = st.lists(_sentence, min_size=1, max_size=6).map(" ".join)
_heading = st.tuples(st.integers(1, 3), st.lists(_word, min_size=1, max_size=4)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1]).capitalize()
)
_list = st.lists(_sentence, min_size=1, max_size=4).map(lambda s: "\n".join("- " + x for x in s))
_table = st.lists(st.lists(_word, min_size=2, max_size=3), min_size=1, max_size=4).map(
    lambda rows: "\n".join("| " + " | ".join(r) + " |" for r in rows)
)
_block = st.one_of(_paragraph, _heading, _list, _table, _sentence.map(lambda s: s[:-1]))
_document = st.lists(_block, min_size=1, max_size=12).flatmap(
    lambda blocks: st.sampled_from(["\n\n", "\n", "\n\n\n"]).map(lambda sep: sep.join(blocks))
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_document, cap=st.integers(8, 60))
def test_markdown_and_plain_text_chunks_tile_exactly_under_the_cap(text, cap):
    chunker = SemanticChunker(
        FakeEmbedder(), tokenizer=WhitespaceTokenizer(), max_tokens=cap, overlap_tokens=0
    )
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, max_tokens=cap, overlapping=False)
    lay_ = lay(text)
    sents = split_sentences(text)
    paths = lay_.paths()
    for c in chunks:
        first = next(i for i, s in enumerate(sents) if s.end > c.start)
        assert c.metadata.get(HEADINGS_KEY, []) == list(paths[first])


@given(text=any_text | st.text(alphabet="# =Ab.\n|", max_size=120))
def test_a_sentence_alone_on_its_line_is_read_from_the_gaps(text):
    """layout() finds headings from the whitespace gaps; the same as looking at each line."""
    from semrag.text.structure import _fenced, _heading, _line_bounds

    spans = split_sentences(text)
    fenced = _fenced(text, spans)
    want = [
        _heading(text, spans, i)[0] if all(_line_bounds(text, s)) and not fenced[i] else 0
        for i, s in enumerate(spans)
    ]
    assert layout(text, spans).heading.tolist() == want
