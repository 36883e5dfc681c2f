from __future__ import annotations

import json

import numpy as np
import pytest

from semrag import MFCChunker, PSCChunker
from semrag.chunking.boundary import PairModelChunker, shipped_weights
from semrag.chunking.boundary.data import (
    PAIR_KINDS,
    check_windows,
    gap_sides,
    sample_pairs,
    split_documents,
)
from semrag.chunking.boundary.models import (
    MFCModel,
    PSCModel,
    fit_boundary_model,
    load_boundary_model,
)
from semrag.chunking.boundary.rules import gap_breaks
from semrag.chunking.boundary.train import (
    TrainConfig,
    accuracy_by_kind,
    embed_cached,
)
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
    model = cls(8, proj_dim=4, window=2, encoder="fake", threshold=0.3)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    before = model.predict_proba(a, b)
    model.save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["kind"] == cls.kind and config["dim"] == 8
    assert config["encoder"] == {"name": "fake"} and config["window"] == 2
    assert config["threshold"] == 0.3 and "library_version" in config
    loaded = cls.load(tmp_path / "m")
    assert type(loaded) is cls and loaded.window == 2 and loaded.threshold == 0.3
    np.testing.assert_allclose(loaded.predict_proba(a, b), before, rtol=1e-6)
    assert np.all((before > 0) & (before < 1))
    other = MFCModel if cls is PSCModel else PSCModel
    with pytest.raises(ConfigError, match=f"holds a {cls.kind} model"):
        other.load(tmp_path / "m")


def test_load_errors(tmp_path):
    with pytest.raises(ConfigError, match="no boundary model"):
        load_boundary_model(tmp_path / "missing")
    PSCModel(8, proj_dim=4).save(tmp_path / "m")
    with pytest.raises(ConfigError, match="8-dimensional"):
        load_boundary_model(tmp_path / "m", expected_dim=384)
    with pytest.raises(ConfigError, match=r"expects two \(n, 8\)"):
        PSCModel(8, proj_dim=4).predict_proba(np.ones((2, 5)), np.ones((2, 5)))
    (tmp_path / "m" / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a boundary model config"):
        load_boundary_model(tmp_path / "m")
    PSCModel(8, proj_dim=4).save(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"truncated")
    with pytest.raises(ConfigError, match="does not hold psc weights"):
        load_boundary_model(tmp_path / "m")
    with pytest.raises(ConfigError, match="window"):
        PSCModel(8, window=0)


def test_pair_kinds_are_what_they_say():
    docs = corpus(12, seed=1)
    pairs = sample_pairs(docs, seed=3)
    counts = pairs.counts()
    assert all(counts[k] > 0 for k in PAIR_KINDS)
    kind = np.asarray(PAIR_KINDS)[pairs.kind]
    same_doc = pairs.doc_of[pairs.left] == pairs.doc_of[pairs.right]
    same_section = pairs.section_of[pairs.left] == pairs.section_of[pairs.right]
    adjacent = pairs.right == pairs.left + 1
    assert np.array_equal(pairs.label == 1, kind == "positive")
    pos = kind == "positive"
    assert np.all(adjacent[pos] & same_section[pos])
    boundary = kind == "boundary"
    assert np.all(adjacent[boundary] & same_doc[boundary] & ~same_section[boundary])
    section = kind == "section"
    assert np.all(same_doc[section] & ~same_section[section])
    assert not np.any(same_doc[kind == "document"])
    # every boundary gap is used: 12 documents with 3 sections each
    assert counts["boundary"] == 24
    assert counts["positive"] == counts["boundary"] + counts["section"] + counts["document"]
    again = sample_pairs(docs, seed=3)
    assert np.array_equal(again.left, pairs.left) and np.array_equal(again.right, pairs.right)


def test_negative_mix_and_ratio():
    docs = corpus(30, seed=2)
    paper = sample_pairs(docs, negative_mix={"section": 1})
    assert paper.counts()["boundary"] == paper.counts()["document"] == 0
    assert paper.counts()["positive"] == paper.counts()["section"]
    doubled = sample_pairs(docs, negative_ratio=2.0, negative_mix={"document": 1})
    c = doubled.counts()
    assert c["document"] == 2 * c["positive"]
    half = sample_pairs(docs, negative_mix={"boundary": 1, "document": 1})
    c = half.counts()
    assert c["boundary"] == 60 and abs(c["document"] - 60) <= 1 and c["section"] == 0
    with pytest.raises(ConfigError, match="negative_mix keys"):
        sample_pairs(docs, negative_mix={"hard": 1})
    with pytest.raises(ConfigError, match="positive sum"):
        sample_pairs(docs, negative_mix={"boundary": 0})
    with pytest.raises(ConfigError, match="negative_ratio"):
        sample_pairs(docs, negative_ratio=0)


def test_single_section_documents_give_positives_only():
    doc = SectionedDocument("x", (("A b.", "C d.", "E f."),))
    pairs = sample_pairs([doc], negative_mix={"section": 1})
    assert pairs.counts()["section"] == 0


def test_document_split_is_disjoint_and_stable():
    docs = corpus(200, seed=4)
    train, dev, test = split_documents(docs, "src")
    ids = [{d.id for d in part} for part in (train, dev, test)]
    assert sum(map(len, ids)) == 200 and not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert 130 <= len(train) <= 190 and dev and test
    fewer = split_documents(docs[::2], "src")
    for part, old in zip(fewer, ids, strict=True):
        assert {d.id for d in part} <= old, "a document moved split when others were removed"
    assert [d.id for d in split_documents(docs, "other")[2]] != [d.id for d in test]
    with pytest.raises(ConfigError, match="sum to 1"):
        split_documents(docs, "src", fractions=(0.5, 0.1, 0.1))


def test_gap_sides_are_equal_windows_inside_documents():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(9, 4)).astype(np.float32)
    doc_of = np.array([0, 0, 0, 0, 1, 1, 2, 2, 2])
    left = np.array([0, 1, 2, 4, 6, 3, 2])
    right = np.array([1, 2, 3, 5, 7, 6, 8])  # the last two cross documents
    got_left, got_right = gap_sides(vectors, doc_of, left, right, 3)
    for g, (a, b) in enumerate(zip(left, right, strict=True)):
        before = [j for j in range(a - 2, a + 1) if j >= 0 and doc_of[j] == doc_of[a]]
        after = [j for j in range(b, b + 3) if j < 9 and doc_of[j] == doc_of[b]]
        k = min(len(before), len(after))
        for got, rows in ((got_left[g], before[-k:]), (got_right[g], after[:k])):
            want = vectors[rows].mean(0)
            np.testing.assert_allclose(got, want / np.linalg.norm(want), rtol=1e-5)
    one_left, one_right = gap_sides(vectors, doc_of, left, right, 1)
    np.testing.assert_array_equal(one_left, vectors[left])
    np.testing.assert_array_equal(one_right, vectors[right])
    with pytest.raises(ConfigError, match="window"):
        gap_sides(vectors, doc_of, left, right, 0)


def test_gap_breaks_rules():
    probs = np.array([0.1, 0.3, 0.05, 0.04, 0.2, 0.5, 0.2, 0.2, 0.9, 0.1])
    assert np.flatnonzero(gap_breaks(probs, 0.25)).tolist() == [0, 2, 3, 4, 6, 7, 9]
    # valleys: 0 (lower than 0.3), 3 (the lowest of 0.05, 0.04, 0.2), 6 (the first of two
    # equal), 9 (the last gap)
    assert np.flatnonzero(gap_breaks(probs, 0.25, "valley")).tolist() == [0, 3, 6, 9]
    assert np.flatnonzero(gap_breaks(probs, 0.15, "valley")).tolist() == [0, 3, 9]
    assert gap_breaks([0.1], 0.5, "valley").tolist() == [True]
    assert gap_breaks([], 0.5, "valley").size == 0
    with pytest.raises(ConfigError, match="rule"):
        gap_breaks(probs, 0.5, "peaks")


def test_the_rule_is_the_models_unless_given(tmp_path):
    emb = FakeEmbedder(dim=32)
    model = PSCModel(32, proj_dim=8, threshold=0.99, rule="valley")
    directory = model.save(tmp_path / "m")
    assert load_boundary_model(directory).rule == "valley"
    text = " ".join(f"Sentence number {i} is about topic {i % 3}." for i in range(12))
    chunker = PairModelChunker(emb, model=directory)
    assert chunker.rule == "valley"
    stats = chunker.chunk_with_stats([text])[0].stats
    breaks = np.zeros(len(stats.scores), bool)
    breaks[[b.gap for b in stats.breaks]] = True
    assert np.array_equal(breaks, gap_breaks(stats.scores, 0.99, "valley"))
    assert not np.any(breaks[1:] & breaks[:-1]) and "local minimum" in stats.threshold_rule
    every = PairModelChunker(emb, model=directory, rule="threshold")
    assert len(every.chunk(text)) == 12  # every gap is below 0.99
    assert len(chunker.chunk(text)) < 12
    with pytest.raises(ConfigError, match="rule"):
        PairModelChunker(emb, model=directory, rule="peaks")
    with pytest.raises(ConfigError, match="rule"):
        PSCModel(32, rule="peaks")


def test_edge_share_cuts_sides_without_changing_the_pairs():
    docs = corpus(20, seed=5)
    plain = sample_pairs(docs, seed=1)
    cut = sample_pairs(docs, seed=1, edge_share=0.4, edge_reach=2)
    assert plain.reach is None
    assert np.array_equal(plain.left, cut.left) and np.array_equal(plain.kind, cut.kind)
    assert cut.reach is not None and cut.reach.shape == cut.label.shape
    share = float((cut.reach > 0).mean())
    assert 0.3 < share < 0.5 and set(np.unique(cut.reach)) == {0, 1, 2}
    for kind in range(len(PAIR_KINDS)):  # every kind is cut alike
        assert (cut.reach[cut.kind == kind] > 0).any()
    again = sample_pairs(docs, seed=1, edge_share=0.4, edge_reach=2)
    assert np.array_equal(again.reach, cut.reach)
    with pytest.raises(ConfigError, match="edge_share"):
        sample_pairs(docs, edge_share=1.5)
    with pytest.raises(ConfigError, match="edge_reach"):
        sample_pairs(docs, edge_share=0.1, edge_reach=0)


def test_gap_sides_reach_caps_each_side():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(10, 4)).astype(np.float32)
    doc_of = np.zeros(10, np.int64)
    left, right = np.array([4, 4, 4]), np.array([5, 5, 5])
    got_left, got_right = gap_sides(vectors, doc_of, left, right, (1, 3), reach=[0, 1, 2])
    full_left, full_right = gap_sides(vectors, doc_of, left, right, (1, 3))
    np.testing.assert_array_equal(got_left[0], full_left[0])
    np.testing.assert_array_equal(got_right[0], full_right[0])
    # reach 1: the three-sentence mean is the sentence itself
    np.testing.assert_allclose(got_left[1, 4:], vectors[4] / np.linalg.norm(vectors[4]), rtol=1e-5)
    np.testing.assert_allclose(got_right[1, 4:], vectors[5] / np.linalg.norm(vectors[5]), rtol=1e-5)
    two = vectors[3:5].mean(0)
    np.testing.assert_allclose(got_left[2, 4:], two / np.linalg.norm(two), rtol=1e-5)
    np.testing.assert_array_equal(got_left[:, :4], vectors[left])


@pytest.mark.parametrize("kind", ["psc", "mfc"])
@pytest.mark.parametrize("window", [1, 2])
def test_tiny_training_lowers_loss_and_beats_chance(kind, window, tmp_path):
    emb = FakeEmbedder(dim=64)
    train, dev = sample_pairs(corpus(40, 1), seed=0), sample_pairs(corpus(15, 2), seed=1)
    held_out = sample_pairs(corpus(15, 3), seed=2)
    model, history = fit_boundary_model(
        kind,
        train,
        dev,
        emb,
        window=window,
        config=TrainConfig(epochs=6, proj_dim=16, lr=1e-2, batch_size=32),
        cache_dir=tmp_path,
    )
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    by_kind = accuracy_by_kind(model, held_out, emb)
    assert by_kind["all"] > 0.75, by_kind
    assert set(by_kind) == {"all", *PAIR_KINDS}
    assert list(tmp_path.glob("embeddings-*/vectors.npy")), "sentence embeddings were not cached"


@pytest.mark.parametrize("kind", ["psc", "mfc"])
def test_weight_averaging_keeps_the_average_and_trains_on(kind):
    emb = FakeEmbedder(dim=32)
    train, dev = sample_pairs(corpus(30, 1), seed=0), sample_pairs(corpus(10, 2), seed=1)
    config = {"epochs": 5, "proj_dim": 8, "lr": 2e-2, "batch_size": 32}
    plain = fit_boundary_model(kind, train, dev, emb, config=TrainConfig(**config))[1]
    # A decay near 0: the average is the last step's weights, so nothing changes.
    near_last = fit_boundary_model(
        kind, train, dev, emb, config=TrainConfig(**config, average=1e-9)
    )[1]
    for a, b in zip(plain, near_last, strict=True):
        assert a["dev_loss"] == pytest.approx(b["dev_loss"], rel=1e-4)
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)
    # A decay near 1: the average stays at the initial weights, while training goes on
    # from the trained ones (its loss falls as without averaging).
    model, frozen = fit_boundary_model(
        kind, train, dev, emb, config=TrainConfig(**config, average=1 - 1e-9)
    )
    assert [h["train_loss"] for h in frozen] == pytest.approx([h["train_loss"] for h in plain])
    assert max(h["dev_loss"] for h in frozen) - min(h["dev_loss"] for h in frozen) < 1e-3
    assert min(h["dev_loss"] for h in plain) < frozen[0]["dev_loss"] - 0.05
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    untrained = type(model)(32, proj_dim=8)
    assert torch.allclose(model.proj.weight, untrained.proj.weight, atol=1e-6)
    with pytest.raises(ConfigError, match="average"):
        TrainConfig(average=1.0)


def test_estimator_api_on_text_pairs(tmp_path):
    emb = FakeEmbedder(dim=32)
    rng = np.random.default_rng(0)
    pairs, labels = [], []
    for _ in range(300):
        a, b = rng.choice(list(TOPICS), size=2, replace=False)
        same = bool(rng.integers(2))
        right = a if same else b
        pairs.append((" ".join(rng.choice(TOPICS[a], 4)), " ".join(rng.choice(TOPICS[right], 4))))
        labels.append(float(same))
    model = PSCModel(32, proj_dim=8).fit(
        pairs[:250], labels[:250], embedder=emb, config=TrainConfig(epochs=30, lr=2e-2)
    )
    assert model.history_ and model.encoder["name"] == "FakeEmbedder(dim=32)"
    p = model.predict_proba(pairs[250:], embedder=emb)
    assert p.shape == (50,)
    assert float(((p >= 0.5) == (np.asarray(labels[250:]) == 1)).mean()) > 0.8
    model.save(tmp_path / "m")
    again = PSCModel.load(tmp_path / "m")
    np.testing.assert_allclose(again.predict_proba(pairs[250:], embedder=emb), p, rtol=1e-5)
    with pytest.raises(ConfigError, match="needs embedder="):
        model.predict_proba(pairs[:2])
    with pytest.raises(ConfigError, match="one label each"):
        PSCModel(32).fit(pairs, labels[:3], embedder=emb)
    with pytest.raises(ConfigError, match="0 .* or 1"):
        PSCModel(32).fit(pairs, [0.5] * len(pairs), embedder=emb)
    with pytest.raises(ConfigError, match="32-dimensional"):
        PSCModel(16).fit(pairs, labels, embedder=emb)


class OtherEncoder(FakeEmbedder):
    """Same dimension as FakeEmbedder, different vectors."""

    name = "OtherEncoder"

    def _embed_batch(self, texts):
        return super()._embed_batch([t[::-1] for t in texts])


def test_encoder_identity_is_checked(tmp_path):
    emb = FakeEmbedder(dim=64)
    trained = fit_boundary_model(
        "psc",
        sample_pairs(corpus(20, 1)),
        sample_pairs(corpus(8, 2)),
        emb,
        config=TrainConfig(epochs=2, proj_dim=8),
    )[0]
    trained.save(tmp_path / "m")
    trained.check_encoder(FakeEmbedder(dim=64))  # the same encoder, another instance
    with pytest.raises(ConfigError, match="embeds the probe sentences differently"):
        trained.check_encoder(OtherEncoder(dim=64))
    text = corpus(1, 3)[0].text
    with pytest.raises(ConfigError, match="trained on FakeEmbedder"):
        PairModelChunker(OtherEncoder(dim=64), model=tmp_path / "m").chunk(text)
    assert PairModelChunker(FakeEmbedder(dim=64), model=tmp_path / "m").chunk(text)
    PSCModel(64).check_encoder(OtherEncoder(dim=64))  # records no encoder: dimension only


def test_embedding_cache_is_reused(tmp_path):
    emb = FakeEmbedder(dim=16)
    first = embed_cached(emb, ["a b", "c d"], cache_dir=tmp_path)
    other = FakeEmbedder(dim=16)
    second = embed_cached(other, ["c d", "a b", "e f"], cache_dir=tmp_path)
    np.testing.assert_array_equal(first, second[[1, 0]])
    np.testing.assert_array_equal(second[2], emb.embed(["e f"])[0])
    assert other.calls == 1, "only the new text should have been embedded"
    (keys,) = tmp_path.glob("embeddings-*/keys.npy")
    np.save(keys, np.load(keys)[:2])  # a crash after the vectors' write, before the keys'
    fresh = FakeEmbedder(dim=16)
    third = embed_cached(fresh, ["a b", "e f"], cache_dir=tmp_path)
    np.testing.assert_array_equal(third, second[[1, 2]])
    assert fresh.calls == 1, "the row whose key was lost is embedded again"
    keys.write_bytes(keys.read_bytes()[:-5])
    with pytest.raises(ConfigError, match="cache .* is damaged"):
        embed_cached(fresh, ["a b"], cache_dir=tmp_path)


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
def test_shipped_weights_exist_load_and_record_no_machine_path(cls):
    directory = shipped_weights(cls.preset)
    assert (directory / "model.safetensors").exists() and (directory / "config.json").exists()
    model = load_boundary_model(directory, expected_dim=384)
    assert model.encoder["name"] == "all-MiniLM-L6-v2"
    assert model.encoder["fingerprint"] and len(model.encoder["probe"]) == 4
    assert 0 < model.threshold < 1 and min(model.windows) >= 1
    assert (directory / "model.safetensors").stat().st_size < 2_000_000
    record = json.loads((directory / "training.json").read_text())
    assert record["command"].startswith("semrag train-boundary")
    assert record["dev_accuracy_at_threshold"]["boundary"] > 0
    chosen = record.get("selection", record["threshold"])  # the rule and threshold shipped
    assert (model.rule, model.threshold) == (chosen.get("rule", "threshold"), chosen["threshold"])
    for name in ("config.json", "training.json"):
        text = (directory / name).read_text()
        for root in ("/work/", "/root/", "/home/", "/tmp/", "C:\\"):
            assert root not in text, f"{name} records a machine path ({root})"


@pytest.mark.model
def test_shipped_weights_accept_minilm_and_reject_a_lookalike(minilm):
    for kind in ("psc", "mfc"):
        model = load_boundary_model(shipped_weights(kind))
        model.check_encoder(minilm)
        with pytest.raises(ConfigError, match="embeds the probe sentences differently"):
            model.check_encoder(FakeEmbedder(dim=384))
    with pytest.raises(ConfigError, match="trained on all-MiniLM-L6-v2"):
        PSCChunker(FakeEmbedder(dim=384)).chunk("One sentence here. Another one there.")


README_TEXT = (
    "Honeybees live in colonies with a single queen. Workers build wax comb and store "
    "honey. Foragers collect pollen from flowers. The rocket lifted off from the launch "
    "pad. Its boosters separated two minutes later. The crew reached orbit safely."
)


@pytest.mark.model
@pytest.mark.parametrize("cls", [PSCChunker, MFCChunker])
def test_shipped_chunkers_score_every_gap(cls, minilm):
    chunker = cls(minilm)
    (result,) = chunker.chunk_with_stats([README_TEXT])
    probs = result.stats.scores
    assert probs.shape == (5,) and np.all((probs > 0) & (probs < 1))
    breaks = sorted(b.gap for b in result.stats.breaks)
    assert breaks == np.flatnonzero(gap_breaks(probs, chunker.threshold, chunker.rule)).tolist()
    starts = [c.start for c in result.chunks][1:]
    assert starts == [result.stats.sentences[g + 1].start for g in breaks]
    if cls is PSCChunker:  # the README's example (MFC misses it: benchmarks/RESULTS.md)
        assert breaks == [2], (breaks, probs)  # bees | rocket
    check_chunker(chunker, ["", README_TEXT, "One sentence."])


def test_several_windows_concatenate_the_means_of_each():
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(12, 4)).astype(np.float32)
    doc_of = np.array([0] * 7 + [1] * 5)
    left, right = np.array([0, 2, 3, 5, 7, 9]), np.array([1, 3, 4, 6, 8, 10])
    got_left, got_right = gap_sides(vectors, doc_of, left, right, (1, 3, 2))
    assert got_left.shape == got_right.shape == (6, 12)
    for i, w in enumerate((1, 3, 2)):
        want_left, want_right = gap_sides(vectors, doc_of, left, right, w)
        np.testing.assert_allclose(got_left[:, 4 * i : 4 * i + 4], want_left, rtol=1e-6)
        np.testing.assert_allclose(got_right[:, 4 * i : 4 * i + 4], want_right, rtol=1e-6)
    assert check_windows(3) == (3,) and check_windows([1, 3, 8]) == (1, 3, 8)
    for bad in ((), (0,), (3, 3), ("a",), (1.5,), 0):
        with pytest.raises(ConfigError, match="window"):
            check_windows(bad)


@pytest.mark.parametrize("cls", [PSCModel, MFCModel])
def test_a_several_window_model_saves_loads_and_takes_whole_sides(cls, tmp_path):
    model = cls(8, proj_dim=4, window=(1, 3), encoder="fake")
    assert model.window == (1, 3) and model.side_dim == 16
    assert model.proj.in_features == 16
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 16)), rng.normal(size=(5, 16))
    before = model.predict_proba(a, b)
    model.save(tmp_path / "m")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["window"] == [1, 3]
    loaded = cls.load(tmp_path / "m")
    assert loaded.window == (1, 3)
    np.testing.assert_allclose(loaded.predict_proba(a, b), before, rtol=1e-6)
    # A side given whole (one vector) stands for the side at every window.
    whole_a, whole_b = a[:, :8], b[:, :8]
    np.testing.assert_allclose(
        model.predict_proba(whole_a, whole_b),
        model.predict_proba(np.tile(whole_a, 2), np.tile(whole_b, 2)),
        rtol=1e-6,
    )
    with pytest.raises(ConfigError, match=r"\(n, 8\) or \(n, 16\)"):
        model.predict_proba(a[:, :12], b[:, :12])


@pytest.mark.parametrize("kind", ["psc", "mfc"])
def test_several_window_training_and_chunking(kind, tmp_path):
    emb = FakeEmbedder(dim=64)
    train, dev = sample_pairs(corpus(40, 1), seed=0), sample_pairs(corpus(15, 2), seed=1)
    model, _ = fit_boundary_model(
        kind,
        train,
        dev,
        emb,
        window=(1, 2),
        config=TrainConfig(epochs=6, proj_dim=16, lr=1e-2, batch_size=32),
    )
    by_kind = accuracy_by_kind(model, sample_pairs(corpus(15, 3), seed=2), emb)
    assert by_kind["all"] > 0.75, by_kind
    doc = corpus(1, 7)[0]
    chunker = PairModelChunker(emb, model=model, tokenizer=WhitespaceTokenizer())
    (result,) = chunker.chunk_with_stats([doc.text])
    vectors = np.asarray(emb.embed([s.of(doc.text) for s in result.stats.sentences]))
    gaps = np.arange(len(vectors) - 1)
    sides = gap_sides(vectors, np.zeros(len(vectors), np.int64), gaps, gaps + 1, (1, 2))
    np.testing.assert_allclose(result.stats.scores, model.predict_proba(*sides), rtol=1e-5)
    check_chunker(chunker, ["", "One sentence only", doc.text])


@pytest.mark.model
def test_cli_trains_several_windows_with_a_fixed_dev_mix(tmp_path, capsys):
    from semrag.cli import main

    folder = tmp_path / "sections"
    folder.mkdir()
    for doc in corpus(30, 4):
        body = "\n".join("==========\n" + "\n".join(section) for section in doc.sections)
        (folder / f"{doc.id}.ref").write_text(body + "\n", encoding="utf-8")
    out = tmp_path / "mfc-test"
    argv = ["train-boundary", "--data", f"sectioned:{folder}", "--model", "mfc"]
    argv += ["--window", "1,2", "--epochs", "2", "--split", "0.6/0.4/0", "--out", str(out)]
    argv += ["--negative-mix", "boundary=0.2,section=0.4,document=0.4", "--edge-share", "0.25"]
    missing = ["train-boundary", "--data", f"sectioned:{tmp_path / 'missing'}", "--model", "mfc"]
    assert main([*missing, "--out", str(out), "--average", "1.5"]) == 2
    assert "average must be within (0, 1)" in capsys.readouterr().err  # before reading data
    assert main([*argv, "--cache", str(tmp_path / "cache"), "--average", "0.9"]) == 0
    record = json.loads((out / "training.json").read_text())
    assert record["config"]["average"] == 0.9 and "--average 0.9" in record["command"]
    assert record["window"] == [1, 2]
    assert record["sampling"]["negative_mix"] == {"boundary": 0.2, "section": 0.4, "document": 0.4}
    assert record["sampling"]["edge_share"] == 0.25 and record["sampling"]["edge_reach"] == 1
    assert "--edge-share 0.25" in record["command"]
    assert record["dev_negative_mix"] == {"boundary": 0.5, "section": 0.25, "document": 0.25}
    dev = record["dev_pairs"]
    assert dev["boundary"] == dev["section"] + dev["document"]  # the default mix: half boundaries
    assert (
        "--window 1,2" in record["command"]
        and "--dev-negative-mix boundary=0.5" in record["command"]
    )
    assert str(tmp_path) not in record["command"]
    assert MFCModel.load(out).window == (1, 2)
    assert record["threshold"]["rule"] in ("threshold", "valley")  # chosen on dev with --rule auto
    assert MFCModel.load(out).rule == record["threshold"]["rule"]
    assert "--rule auto" in record["command"]
    with pytest.raises(SystemExit) as exited:  # argparse rejects the option
        main(
            [
                "train-boundary",
                "--data",
                f"sectioned:{folder}",
                "--model",
                "psc",
                "--window",
                "2,2",
                "--out",
                str(out),
            ]
        )
    assert exited.value.code == 2
    assert "window" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("==========\nNot a document file.\n", encoding="utf-8")
    assert (
        main(
            ["train-boundary", "--data", f"sectioned:{empty}", "--model", "psc", "--out", str(out)]
        )
        == 2
    )
    assert "holds no document files" in capsys.readouterr().err
