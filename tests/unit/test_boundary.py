from __future__ import annotations

import json

import numpy as np
import pytest

from semrag import MFCChunker, PSCChunker
from semrag.chunking.boundary import PairModelChunker, shipped_weights
from semrag.chunking.boundary.data import sample_pairs
from semrag.chunking.boundary.models import MFCModel, PSCModel, load_boundary_model
from semrag.chunking.boundary.train import TrainConfig, embed_cached, fit_boundary_model
from semrag.errors import ConfigError
from semrag.eval.datasets import SectionedDocument
from semrag.testing import FakeEmbedder, check_chunker
from semrag.text import WhitespaceTokenizer

TOPICS = {
    "bees": ["bee", "hive", "honey", "queen", "pollen", "wax", "swarm"],
    "rockets": ["rocket", "orbit", "launch", "fuel", "moon", "booster", "crew"],
    "bread": ["dough", "flour", "yeast", "oven", "crust", "knead", "loaf"],
    "stocks": ["market", "shares", "price", "investor", "trade", "bond", "fund"],
}


def corpus(n_docs: int, seed: int) -> list[SectionedDocument]:
    rng = np.random.default_rng(seed)
    names = list(TOPICS)
    docs = []
    for d in range(n_docs):
        sections = []
        for topic in rng.choice(names, size=3, replace=False):
            words = TOPICS[topic]
            sections.append(
                tuple(
                    " ".join(rng.choice(words, size=4)).capitalize() + f" number {d}{i}."
                    for i in range(int(rng.integers(2, 5)))
                )
            )
        docs.append(SectionedDocument(f"doc{d}", tuple(sections)))
    return docs


@pytest.mark.parametrize("cls", [PSCModel, MFCModel])
def test_save_load_round_trip(cls, tmp_path):
    model = cls(8, proj_dim=4, encoder="fake")
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    before = model.predict_proba(a, b)
    model.save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["kind"] == cls.kind and config["dim"] == 8 and config["encoder"] == "fake"
    assert "library_version" in config
    loaded = load_boundary_model(tmp_path / "m", expected_dim=8)
    assert type(loaded) is cls
    np.testing.assert_allclose(loaded.predict_proba(a, b), before, rtol=1e-6)
    assert np.all((before > 0) & (before < 1))


def test_load_errors(tmp_path):
    with pytest.raises(ConfigError, match="no boundary model"):
        load_boundary_model(tmp_path / "missing")
    PSCModel(8, proj_dim=4).save(tmp_path / "m")
    with pytest.raises(ConfigError, match="8-dimensional"):
        load_boundary_model(tmp_path / "m", expected_dim=384)
    with pytest.raises(ConfigError, match=r"expects two \(n, 8\)"):
        PSCModel(8, proj_dim=4).predict_proba(np.ones((2, 5)), np.ones((2, 5)))


def test_pair_sampling_invariants():
    docs = corpus(12, seed=1)
    pairs = sample_pairs(docs, seed=3)
    pos, neg = pairs.label == 1, pairs.label == 0
    assert pos.sum() == neg.sum() > 0
    assert np.all(pairs.doc_of[pairs.left] == pairs.doc_of[pairs.right]), "a pair crosses documents"
    assert np.all(pairs.right[pos] == pairs.left[pos] + 1)
    assert np.all(pairs.section_of[pairs.left[pos]] == pairs.section_of[pairs.right[pos]])
    assert np.all(pairs.section_of[pairs.left[neg]] != pairs.section_of[pairs.right[neg]])
    same_text = [
        pairs.sentences[a] == pairs.sentences[b]
        for a, b in zip(pairs.left, pairs.right, strict=True)
    ]
    assert not any(same_text)
    again = sample_pairs(docs, seed=3)
    assert np.array_equal(again.left, pairs.left) and np.array_equal(again.right, pairs.right)


def test_hard_negatives_straddle_boundaries():
    pairs = sample_pairs(corpus(12, seed=1), seed=0, hard_negatives=1.0)
    neg = pairs.label == 0
    straddle = pairs.right[neg] == pairs.left[neg] + 1
    assert straddle.sum() >= 12 * 2  # every document has 2 real boundaries
    with pytest.raises(ConfigError):
        sample_pairs(corpus(2, 0), hard_negatives=1.5)


def test_single_section_documents_give_no_pairs():
    doc = SectionedDocument("x", (("A b.", "C d.", "E f."),))
    assert len(sample_pairs([doc])) == 0


@pytest.mark.parametrize("kind", ["psc", "mfc"])
def test_tiny_training_lowers_loss_and_beats_chance(kind, tmp_path):
    emb = FakeEmbedder(dim=64)
    train, dev = sample_pairs(corpus(40, 1), seed=0), sample_pairs(corpus(15, 2), seed=1)
    held_out = sample_pairs(corpus(15, 3), seed=2)
    model, history = fit_boundary_model(
        kind,
        train,
        dev,
        emb,
        config=TrainConfig(epochs=6, proj_dim=16, lr=1e-2, batch_size=32),
        cache_dir=tmp_path,
    )
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    vectors = emb.embed(held_out.sentences)
    p = model.predict_proba(vectors[held_out.left], vectors[held_out.right])
    accuracy = float(((p >= 0.5) == (held_out.label == 1)).mean())
    assert accuracy > 0.75, accuracy
    assert list(tmp_path.glob("embeddings-*.npy")), "sentence embeddings were not cached"


def test_embedding_cache_is_reused(tmp_path):
    emb = FakeEmbedder(dim=16)
    first = embed_cached(emb, ["a b", "c d"], cache_dir=tmp_path)
    calls = emb.calls
    second = embed_cached(FakeEmbedder(dim=16), ["a b", "c d"], cache_dir=tmp_path)
    np.testing.assert_array_equal(first, second)
    assert emb.calls == calls


def trained_chunker(tmp_path, **kw):
    emb = FakeEmbedder(dim=64)
    model, _ = fit_boundary_model(
        "psc",
        sample_pairs(corpus(40, 1)),
        sample_pairs(corpus(10, 2)),
        emb,
        config=TrainConfig(epochs=6, proj_dim=16, lr=1e-2, batch_size=32),
    )
    model.save(tmp_path / "psc")
    return PairModelChunker(emb, model=tmp_path / "psc", **kw)


def test_user_trained_model_directory_chunks_sections(tmp_path):
    chunker = trained_chunker(tmp_path, tokenizer=WhitespaceTokenizer())
    doc = corpus(1, seed=9)[0]
    result = chunker.chunk_with_stats([doc.text])[0]
    starts = {c.start for c in result.chunks}
    assert set(doc.section_starts) <= starts
    assert result.stats.score_name == "p(same section)"
    assert all(b.reason.startswith("p(same section)") for b in result.stats.breaks)
    assert result.stats.threshold == 0.5


def test_trained_chunker_contract(tmp_path):
    chunker = trained_chunker(
        tmp_path, tokenizer=WhitespaceTokenizer(), max_tokens=12, overlap_tokens=3
    )
    texts = ["", "  ", "One sentence only", corpus(1, 5)[0].text, "word " * 100, "\x00 junk \x01"]
    check_chunker(chunker, texts)


def test_errors(tmp_path):
    with pytest.raises(ConfigError, match="no boundary model directory"):
        PSCChunker(FakeEmbedder(), model=tmp_path / "nope")
    with pytest.raises(ConfigError, match="threshold"):
        PSCChunker(FakeEmbedder(), threshold=1.5)
    with pytest.raises(ConfigError, match="needs model="):
        PairModelChunker(FakeEmbedder())
    chunker = PSCChunker(FakeEmbedder(dim=32))  # shipped weights are for 384 dimensions
    with pytest.raises(ConfigError, match="384-dimensional"):
        chunker.chunk("First sentence here. Second one there.")


@pytest.mark.parametrize("cls", [PSCChunker, MFCChunker])
def test_shipped_weights_exist_and_load(cls):
    directory = shipped_weights(cls.preset)
    assert (directory / "model.safetensors").exists() and (directory / "config.json").exists()
    model = load_boundary_model(directory, expected_dim=384)
    assert model.encoder == "all-MiniLM-L6-v2"
    assert (directory / "model.safetensors").stat().st_size < 2_000_000


@pytest.mark.model
@pytest.mark.parametrize("cls", [PSCChunker, MFCChunker])
def test_shipped_chunkers_score_every_gap(cls, minilm):
    text = (
        "Honeybees live in colonies with a single queen. Workers build wax comb and store "
        "honey. Foragers collect pollen from flowers. The rocket lifted off from the launch "
        "pad. Its boosters separated two minutes later. The crew reached orbit safely."
    )
    chunker = cls(minilm)
    (result,) = chunker.chunk_with_stats([text])
    probs = result.stats.scores
    assert probs.shape == (5,) and np.all((probs > 0) & (probs < 1))
    breaks = sorted(b.gap for b in result.stats.breaks)
    assert breaks == np.flatnonzero(probs < 0.5).tolist()
    starts = [c.start for c in result.chunks][1:]
    assert starts == [result.stats.sentences[g + 1].start for g in breaks]
    check_chunker(chunker, ["", text, "One sentence."])
