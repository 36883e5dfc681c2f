from __future__ import annotations

import numpy as np
import pytest

from semrag import Document, SemanticChunker
from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError, EmbeddingError
from semrag.testing import FakeEmbedder, check_chunker, check_chunks
from semrag.text import WhitespaceTokenizer, split_sentences
from semrag.types import Span

CATS = "The cat sat on the mat. The cat sat on the rug. The cat sat on the bed."
STOCKS = (
    "Stock prices fell sharply today. Stock prices rose sharply later. Stock prices moved sharply."
)
TWO_TOPICS = f"{CATS} {STOCKS}"


def chunker(**kw):
    """The paper's rule alone (no size target): breaks where the distance passes 0.6."""
    kw.setdefault("threshold", 0.6)
    kw.setdefault("target_tokens", None)
    return SemanticChunker(FakeEmbedder(), **kw)


@pytest.mark.parametrize("pooling", ["mean", "concat"])
@pytest.mark.parametrize("window", ["centered", "split"])
def test_breaks_at_the_topic_change(pooling, window):
    chunks = chunker(
        pooling=pooling, window=window, buffer_size=1, threshold="target_chunks", threshold_amount=2
    ).chunk(TWO_TOPICS)
    assert [c.text for c in chunks] == [CATS, STOCKS]
    assert [(c.start, c.end) for c in chunks] == [(0, len(CATS)), (len(CATS) + 1, len(TWO_TOPICS))]
    assert [(c.sentence_start, c.sentence_end) for c in chunks] == [(0, 3), (3, 6)]


def test_split_window_sees_a_break_at_the_start():
    # One odd sentence first: centered windows share sentences across gap 0 and blur it.
    text = "Stock prices fell sharply today. " + CATS + " The cat sat on the sofa."
    split = chunker(window="split", buffer_size=2).chunk_with_stats([text])[0].stats
    centered = chunker(window="centered", buffer_size=2).chunk_with_stats([text])[0].stats
    assert split.scores[0] == pytest.approx(1.0)
    assert centered.scores[0] < 0.5


def test_mean_pooling_embeds_each_sentence_once_whatever_the_buffer():
    for b in (1, 5):
        emb = FakeEmbedder()
        SemanticChunker(emb, buffer_size=b).chunk(TWO_TOPICS)
        assert emb.cache_info().misses == 6


def test_concat_pooling_embeds_window_texts():
    emb = FakeEmbedder()
    SemanticChunker(emb, buffer_size=1, pooling="concat", window="centered").chunk(TWO_TOPICS)
    assert emb.cache_info().misses == 6  # six distinct centered windows of <= 3 sentences
    emb = FakeEmbedder()
    SemanticChunker(emb, buffer_size=1, pooling="concat", window="split").chunk(TWO_TOPICS)
    assert emb.cache_info().misses == 7  # left/right windows of 1-2 sentences


def test_statistics_explain_each_break():
    result = chunker(buffer_size=0).chunk_with_stats([Document("d", TWO_TOPICS)])[0]
    stats = result.stats
    assert stats.doc_id == "d" and stats.n_chunks == len(result.chunks) == 2
    assert stats.scores.shape == (5,)
    assert stats.threshold == 0.6 and stats.threshold_rule == "absolute 0.6"
    (br,) = stats.breaks
    assert br.gap == 2 and br.offset == len(CATS) + 1
    assert br.reason.startswith("distance 1.0000 above 0.6000")
    assert stats.score_name == "cosine distance"


def test_batches_all_documents_in_one_embedding_call():
    emb = FakeEmbedder()
    docs = [Document(str(i), TWO_TOPICS.replace("Cats", f"Cats{i}")) for i in range(20)]
    chunks = SemanticChunker(emb, threshold=0.6).chunk_documents(docs)
    assert emb.calls == 1
    assert {c.doc_id for c in chunks} == {str(i) for i in range(20)}


def test_metadata_is_copied_to_chunks():
    chunks = chunker().chunk(TWO_TOPICS, doc_id="x", metadata={"source": "s.txt"})
    assert all(c.metadata == {"source": "s.txt"} and c.doc_id == "x" for c in chunks)


def test_token_cap_splits_long_chunks_with_overlap():
    text = " ".join(f"Cats purr number {i}." for i in range(60))  # one topic, 240 words
    c = SemanticChunker(
        FakeEmbedder(),
        threshold=0.99,
        target_tokens=None,
        max_tokens=40,
        overlap_tokens=8,
        tokenizer=WhitespaceTokenizer(),
    )
    result = c.chunk_with_stats([text])[0]
    check_chunks(
        text, result.chunks, max_tokens=40, overlapping=True, count=lambda t: len(t.split())
    )
    assert result.stats.cap_splits == len(result.chunks) - 1 > 3
    # Sub-chunks end at sentence boundaries when one lies in the second half of the window.
    assert all(ch.text.endswith(".") for ch in result.chunks)


def test_single_over_long_sentence_is_split():
    text = "word " * 500
    chunks = SemanticChunker(
        FakeEmbedder(), max_tokens=64, overlap_tokens=0, tokenizer=WhitespaceTokenizer()
    ).chunk(text)
    assert len(chunks) == 8
    check_chunks(text, chunks, max_tokens=64, overlapping=False, count=lambda t: len(t.split()))


def test_min_tokens_merges_tiny_chunks():
    text = f"{CATS} Gold. {STOCKS}"
    loose = chunker(buffer_size=0, tokenizer=WhitespaceTokenizer()).chunk_with_stats([text])[0]
    merged = chunker(buffer_size=0, min_tokens=3, tokenizer=WhitespaceTokenizer()).chunk_with_stats(
        [text]
    )[0]
    assert [c.text for c in loose.chunks] == [CATS, "Gold.", STOCKS]
    assert [c.text for c in merged.chunks] == [f"{CATS} Gold.", STOCKS]
    assert merged.stats.merged_gaps == (2,)
    assert [b.gap for b in merged.stats.breaks] == [3]


def test_default_overlap_follows_small_caps():
    assert SemanticChunker(FakeEmbedder(), max_tokens=100).overlap_tokens == 25
    assert SemanticChunker(FakeEmbedder()).overlap_tokens == 64  # default cap 256
    assert SemanticChunker(FakeEmbedder(), max_tokens=1024).overlap_tokens == 128


@pytest.mark.parametrize(
    "kwargs",
    [
        {"buffer_size": -1},
        {"buffer_size": 1.5},
        {"window": "diagonal"},
        {"pooling": "max"},
        {"max_tokens": 4},
        {"max_tokens": 100, "overlap_tokens": 100},
        {"min_tokens": 5000},
        {"threshold": "median"},
    ],
)
def test_bad_configuration_raises_config_error(kwargs):
    with pytest.raises(ConfigError, match="SemanticChunker:"):
        SemanticChunker(FakeEmbedder(), **kwargs)


def test_unknown_keyword_raises_type_error():
    with pytest.raises(TypeError, match="SemanticChunker.__init__"):
        SemanticChunker(FakeEmbedder(), chunk_sise=512)  # type: ignore[call-arg]


@pytest.mark.parametrize("bad", [b"bytes", None, 42])
def test_non_str_text_raises_type_error(bad):
    with pytest.raises(TypeError, match="text must be str, got"):
        chunker().chunk(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="documents must be semrag Documents, str, or"):
        chunker().chunk_documents([bad])  # type: ignore[list-item]


class Broken(BaseEmbedder):
    def __init__(self, fn):
        super().__init__(cache_size=0, dim=8)
        self.fn = fn

    def _embed_batch(self, texts):
        return self.fn(texts)


def test_wrong_dimension_raises_embedding_error():
    c = SemanticChunker(Broken(lambda t: np.ones((len(t), 5))))
    with pytest.raises(EmbeddingError, match="dimension 5; expected 8"):
        c.chunk(TWO_TOPICS)


def test_nan_embedding_raises_embedding_error():
    c = SemanticChunker(Broken(lambda t: np.full((len(t), 8), np.nan)))
    with pytest.raises(EmbeddingError, match="NaN or inf"):
        c.chunk(TWO_TOPICS)


def test_custom_sentence_splitter():
    def by_semicolon(text):
        spans, start = [], 0
        for i, ch in enumerate(text):
            if ch == ";":
                spans.append(Span(start, i + 1))
                start = i + 1
        spans.append(Span(start, len(text)))
        return spans

    text = "cats purr; cats nap; stocks fell; stocks rose"
    c = SemanticChunker(
        FakeEmbedder(), buffer_size=0, threshold=0.6, sentence_splitter=by_semicolon
    )
    assert [ch.text for ch in c.chunk(text)] == ["cats purr; cats nap;", "stocks fell; stocks rose"]


async def test_async_equals_sync():
    docs = [Document(str(i), TWO_TOPICS * (i + 1)) for i in range(3)]
    c = chunker()
    sync = c.chunk_with_stats(docs)
    asyn = await c.achunk_with_stats(docs)
    assert [r.chunks for r in sync] == [r.chunks for r in asyn]
    assert await c.achunk(TWO_TOPICS) == c.chunk(TWO_TOPICS)
    assert await c.achunk_documents(docs) == c.chunk_documents(docs)


def test_progress_bar_gives_the_same_chunks(capsys):
    docs = [TWO_TOPICS] * 3
    plain = chunker().chunk_documents(docs)
    shown = chunker(show_progress=True).chunk_documents(docs)
    assert plain == shown
    assert "Embedding" in capsys.readouterr().err


def test_contract_on_edge_cases():
    texts = [
        "",
        "   \n ",
        "One sentence only",
        TWO_TOPICS,
        "no punctuation " * 50,
        "\x00\x01 binary \x00 junk",
        "你好。我很好！" * 30,
        f"{CATS}\n\n{CATS}",
    ]
    check_chunker(
        SemanticChunker(
            FakeEmbedder(), max_tokens=20, overlap_tokens=4, tokenizer=WhitespaceTokenizer()
        ),
        texts,
    )


def test_repr_shows_config():
    r = repr(SemanticChunker(FakeEmbedder(), buffer_size=3, pooling="concat"))
    assert "buffer_size=3" in r and "pooling='concat'" in r and "max_tokens=256" in r
    assert "target_tokens='auto'" in r and "structure=True" in r


@pytest.mark.model
def test_minilm_token_cap_on_a_million_characters(minilm_tokenizer):
    rng = np.random.default_rng(1)
    words = np.array(["alpha", "beta", "gamma", "delta", "tokenization", "x" * 30, "é", "你"])
    text = " ".join(rng.choice(words, size=150_000)) + "." + "z" * 50_000
    assert len(text) > 1_000_000
    c = SemanticChunker(FakeEmbedder(), tokenizer=minilm_tokenizer)
    chunks = c.chunk(text)
    check_chunks(
        text,
        chunks,
        max_tokens=1024,
        overlapping=True,
        count=lambda t: minilm_tokenizer.count([t])[0],
    )


@pytest.mark.model
def test_minilm_end_to_end(minilm):
    text = (
        "The mitochondria is the powerhouse of the cell. It produces ATP through respiration. "
        "Cells need energy to live. The stock market crashed in 1929. Investors lost fortunes. "
        "Banks failed across the country."
    )
    c = SemanticChunker(minilm, buffer_size=1, threshold="target_chunks", threshold_amount=2)
    assert [ch.sentence_start for ch in c.chunk(text)] == [0, 3]


def test_a_transcript_without_punctuation_gets_semantic_breaks():
    # One utterance per line and no terminal punctuation: the sentence splitter uses the
    # lines, so the chunker can break where the topic changes (not only at the cap).
    text = (
        "cats purr on warm mats\n"
        "cats nap on warm mats all day\n"
        "stocks fell sharply in trading\n"
        "stocks rose again in trading"
    )
    chunker = SemanticChunker(FakeEmbedder(dim=256), buffer_size=0, threshold=0.6)
    never = SemanticChunker(
        FakeEmbedder(dim=256),
        buffer_size=0,
        threshold=0.6,
        sentence_splitter=lambda t: split_sentences(t, lines="never"),
    )
    assert len(never.chunk(text)) == 1  # what the splitter gave before the line rule
    assert [c.text for c in chunker.chunk(text)] == [
        "cats purr on warm mats\ncats nap on warm mats all day",
        "stocks fell sharply in trading\nstocks rose again in trading",
    ]


def test_a_long_cjk_text_without_spaces_is_capped_without_a_model_tokenizer():
    # FakeEmbedder has no tokenizer: whitespace counting, where each ideograph is a token.
    text = "东京是日本的首都也是最大的城市" * 2000  # 30,000 characters, no space, no stop
    chunker = SemanticChunker(FakeEmbedder(dim=32), max_tokens=256)
    chunks = chunker.chunk(text)
    assert len(chunks) >= 30_000 // 256
    check_chunks(text, chunks, max_tokens=256, count=lambda t: chunker.tokenizer.count([t])[0])


@pytest.mark.parametrize("b", [1, 2, 3])
def test_edge_corrected_distances_match_brute_force(b):
    from semrag.chunking._split import cosine_distances, edge_corrected_distances

    rng = np.random.default_rng(b)
    vectors = rng.normal(size=(12, 8)).astype(np.float32)
    got = edge_corrected_distances(vectors, b)

    def dist(lo, hi):
        return cosine_distances(vectors[lo].mean(0)[None], vectors[hi].mean(0)[None])[0]

    full = b + 1
    interior = [g for g in range(11) if g + 1 >= full and 11 - g >= full]
    for g in interior:  # both sides full: the plain split-window distance
        np.testing.assert_allclose(got[g], dist(range(g - b, g + 1), range(g + 1, g + b + 2)), 1e-5)
    for g in set(range(11)) - set(interior):
        k = min(g + 1, 11 - g)
        d_full = np.median([dist(range(i - b, i + 1), range(i + 1, i + b + 2)) for i in interior])
        d_k = np.median([dist(range(i + 1 - k, i + 1), range(i + 1, i + 1 + k)) for i in interior])
        want = dist(range(g + 1 - k, g + 1), range(g + 1, g + 1 + k)) * d_full / d_k
        np.testing.assert_allclose(got[g], want, rtol=1e-4)


@pytest.mark.parametrize("b", [0, 1, 2])
def test_edge_corrected_distances_of_a_batch_read_each_document_alone(b):
    # The batch reads every document's rows from one array: no window may reach into
    # the next document's rows, whatever the sizes (none, one, two, many sentences).
    from semrag.chunking._split import edge_corrected_distances, edge_corrected_distances_many

    rng = np.random.default_rng(7)
    sizes = [5, 0, 1, 2, 12, 3, 7, 1, 9]
    vectors = rng.normal(size=(sum(sizes), 6)).astype(np.float32)
    bounds = np.cumsum([0, *sizes]).tolist()
    rows = list(zip(bounds, bounds[1:], strict=False))
    got = edge_corrected_distances_many(vectors, rows, b)
    for (lo, hi), d in zip(rows, got, strict=True):
        alone = vectors[lo:hi].copy()  # nothing before or after it to read
        want = edge_corrected_distances(alone, b) if hi - lo else np.zeros(0, np.float32)
        np.testing.assert_array_equal(d, want)


def test_edge_correction_removes_the_edge_bias():
    # Single-topic documents: every break is false; without the correction the first and
    # last gaps (one sentence against two) take more than their share of them.
    rng = np.random.default_rng(1)
    words = ["honey", "bee", "hive", "queen", "wax", "pollen", "swarm", "comb", "nectar"]
    texts = [
        " ".join(" ".join(rng.choice(words, size=5)).capitalize() + "." for _ in range(12)).replace(
            ". ", ". "
        )
        for _ in range(60)
    ]

    def edge_share(correct):
        c = SemanticChunker(
            FakeEmbedder(), edge_correction=correct, short_text_distance=None, target_tokens=None
        )
        gaps = [b.gap for r in c.chunk_with_stats(texts) for b in r.stats.breaks]
        edge = sum(g in (0, 10) for g in gaps)
        return edge / max(len(gaps), 1)

    before, after = edge_share(False), edge_share(True)
    assert before > 2 / 11 * 1.5, before  # the bias exists
    assert after < before * 0.6, (before, after)


def test_short_texts_can_break():
    text = "The cat sat on the mat. Stock prices fell sharply today."
    paper = {"target_tokens": None}  # the threshold rule alone
    short = SemanticChunker(FakeEmbedder(), short_text_distance=0.5, **paper).chunk_with_stats(
        [text]
    )[0]
    assert len(short.chunks) == 2
    assert "(absolute 0.5)" in short.stats.breaks[0].reason
    assert "under 4 gaps: absolute 0.5" in short.stats.threshold_rule
    std_only = SemanticChunker(FakeEmbedder(), short_text_distance=None, **paper).chunk(text)
    assert len(std_only) == 1, "mean + std cannot break two sentences"
    same = "The cat sat on the mat. The cat sat on the rug. The cat sat on the bed."
    assert len(SemanticChunker(FakeEmbedder(), short_text_distance=0.5, **paper).chunk(same)) == 1
    long_text = " ".join([CATS, STOCKS, CATS])  # 9 sentences: the statistic decides
    stats = (
        SemanticChunker(FakeEmbedder(), short_text_distance=0.01, **paper)
        .chunk_with_stats([long_text])[0]
        .stats
    )
    assert stats.breaks and all("(std 1)" in b.reason for b in stats.breaks)


def test_edge_correction_needs_the_split_mean_window():
    with pytest.raises(ConfigError, match="edge_correction"):
        SemanticChunker(FakeEmbedder(), window="centered", edge_correction=True)
    assert SemanticChunker(FakeEmbedder(), window="centered").edge_correction is False
    assert SemanticChunker(FakeEmbedder()).edge_correction is True


def test_the_chunker_tokenizes_each_text_once_with_an_additive_tokenizer():
    # The sentences are counted once; a run of them counts their sum (not counted again).
    from semrag.text import WhitespaceTokenizer

    class Recording(WhitespaceTokenizer):
        def __init__(self):
            self.chars = 0

        def count(self, texts):
            self.chars += sum(len(t) for t in texts)
            return super().count(texts)

    text = " ".join(
        f"Sentence {i} is about {'bees and honey' if i < 6 else 'rockets and orbits'}."
        for i in range(12)
    )
    tok = Recording()
    chunks = SemanticChunker(FakeEmbedder(dim=16), tokenizer=tok, max_tokens=200).chunk(text)
    assert tok.chars == len(text) - 11  # the 12 sentences once (not the 11 spaces between)
    assert [c.token_count for c in chunks] == WhitespaceTokenizer().count([c.text for c in chunks])


def test_sentences_given_by_the_caller_chunk_as_the_chunker_splits_them():
    # The index splits each document once (for its embedding blocks) and hands the spans on.
    chunker = SemanticChunker(embedder=FakeEmbedder(), max_tokens=12, overlap_tokens=2)
    docs = [
        Document("a", "Bees dance. They tell the hive where flowers are. The queen lays eggs."),
        Document("b", "Rockets burn fuel. Exhaust leaves the nozzle. The push lifts them up."),
    ]
    spans = [chunker.sentences(d.text) for d in docs]
    given = chunker.chunk_with_stats(docs, sentences=spans)
    assert [r.chunks for r in given] == [r.chunks for r in chunker.chunk_with_stats(docs)]
    with pytest.raises(ConfigError, match="sentence lists"):
        chunker.chunk_with_stats(docs, sentences=spans[:1])
