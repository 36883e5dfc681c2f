"""An index remembers the model that embedded it: the fingerprint and where it is checked."""

from __future__ import annotations

import json

import numpy as np
import pytest

from semrag import Document, SemanticIndex
from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError, EmbedderMismatchError, StoreError
from semrag.fingerprint import (
    MIN_PROBE_COSINE,
    PROBE_TEXTS,
    EmbedderFingerprint,
    check_embedder,
)
from semrag.index.storage.persist import saved_folder
from semrag.testing import FakeEmbedder
from tests.counting import OtherFake

DOCS = [
    Document("bees", "Honey bees dance to show where flowers grow. The hive follows."),
    Document("rockets", "Rockets burn fuel to reach orbit. Their engines roar."),
]


class Transformed(BaseEmbedder):
    """Another embedder's vectors, changed by ``how`` (a dtype round trip, a rotation)."""

    def __init__(self, inner: BaseEmbedder, how, name: str) -> None:
        super().__init__(dim=inner.dim)
        self.inner, self.how, self.name = inner, how, name

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self.how(np.asarray(self.inner.embed(texts), np.float32))


def half(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16).astype(np.float32)


def rotated(dim: int, seed: int = 0):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return lambda v: (v @ q).astype(np.float32)


def built(tmp_path, embedder, **kwargs) -> SemanticIndex:
    index = SemanticIndex(embedder=embedder, **kwargs)
    index.add_documents(DOCS)
    index.save(tmp_path / "idx")
    return index


# -- the fingerprint ---------------------------------------------------------------------------
def test_a_fingerprint_round_trips_through_json():
    a = EmbedderFingerprint.of(FakeEmbedder(dim=48))
    b = EmbedderFingerprint.from_dict(json.loads(json.dumps(a.to_dict())))
    assert b == a and b.name == "FakeEmbedder(dim=48)" and b.dim == 48
    assert b.probe.shape == (len(PROBE_TEXTS), 48)
    assert a.similarity(b) > 0.99999


def test_a_damaged_fingerprint_is_a_store_error():
    data = EmbedderFingerprint.of(FakeEmbedder(dim=16)).to_dict()
    data["probe"] = data["probe"][:2]
    with pytest.raises(StoreError, match="shape"):
        EmbedderFingerprint.from_dict(data)


def test_float16_of_the_same_model_matches_and_another_model_does_not():
    fake = FakeEmbedder(dim=384)
    mine = EmbedderFingerprint.of(fake)
    assert mine.matches(EmbedderFingerprint.of(Transformed(fake, half, "fake16")))
    other = EmbedderFingerprint.of(OtherFake(dim=384))
    assert not mine.matches(other) and mine.similarity(other) < 0.5
    # another dimension never matches
    assert mine.similarity(EmbedderFingerprint.of(FakeEmbedder(dim=128))) == -1.0


@pytest.mark.model
def test_minilm_in_float16_matches_itself_and_no_other_384d_model(minilm):
    stored = EmbedderFingerprint.of(minilm)
    as16 = EmbedderFingerprint.of(Transformed(minilm, half, "minilm-fp16"))
    assert stored.similarity(as16) > 0.9999  # far above the tolerance
    # the same space turned (every distance kept: a model no probe-free check can tell apart)
    turned = EmbedderFingerprint.of(Transformed(minilm, rotated(384), "turned"))
    for other in (turned, EmbedderFingerprint.of(FakeEmbedder(dim=384))):
        assert stored.similarity(other) < MIN_PROBE_COSINE - 0.3
        assert not stored.matches(other)


def test_check_embedder_names_both_models_and_the_ways_out():
    stored = EmbedderFingerprint.of(FakeEmbedder(dim=32))
    with pytest.raises(EmbedderMismatchError, match="the index in x/ was embedded with") as err:
        check_embedder(stored, OtherFake(dim=32), what="the index in x/")
    msg = str(err.value)
    assert "FakeEmbedder(dim=32)" in msg and "OtherFake(dim=32)" in msg
    assert "reembed" in msg and "allow_embedder_mismatch=True" in msg
    assert (err.value.stored, err.value.given) == ("FakeEmbedder(dim=32)", "OtherFake(dim=32)")
    assert isinstance(err.value, ConfigError)
    # the override lets it through and says whose fingerprint it is
    given = check_embedder(stored, OtherFake(dim=32), what="x", allow_mismatch=True)
    assert given.name == "OtherFake(dim=32)"


# -- SemanticIndex.load ------------------------------------------------------------------------
def test_a_load_with_another_model_of_the_same_size_is_refused(tmp_path):
    built(tmp_path, FakeEmbedder(dim=384))
    with pytest.raises(EmbedderMismatchError, match="FakeEmbedder"):
        SemanticIndex.load(tmp_path / "idx", embedder=OtherFake(dim=384))
    loaded = SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=384))
    assert [h.chunk.doc_id for h in loaded.search("bees dancing", k=1)] == ["bees"]


@pytest.mark.model
def test_a_load_without_the_embedder_is_refused_not_answered(tmp_path):
    """The reported case: built with a 384-d model, loaded with the packaged MiniLM."""
    built(tmp_path, FakeEmbedder(dim=384))
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        SemanticIndex.load(tmp_path / "idx")


def test_the_override_loads_notes_it_and_keeps_the_saved_fingerprint(tmp_path):
    built(tmp_path, FakeEmbedder(dim=32))
    index = SemanticIndex.load(
        tmp_path / "idx", embedder=OtherFake(dim=32), allow_embedder_mismatch=True
    )
    assert any("allow_embedder_mismatch" in n for n in index.notes)
    assert index.fingerprint.name == "FakeEmbedder(dim=32)"  # the vectors' model
    index.save(tmp_path / "again")
    with pytest.raises(
        EmbedderMismatchError, match="the index saved in"
    ):  # still refused without the override
        SemanticIndex.load(tmp_path / "again", embedder=OtherFake(dim=32))


def test_the_manifest_records_the_model_by_name_without_a_path(tmp_path):
    built(tmp_path, FakeEmbedder(dim=32))
    m = json.loads((saved_folder(tmp_path / "idx") / "manifest.json").read_text())
    assert m["embedder"] == "FakeEmbedder(dim=32)"
    assert EmbedderFingerprint.from_dict(m["fingerprint"]).matches(
        EmbedderFingerprint.of(FakeEmbedder(dim=32))
    )


def test_a_save_from_before_fingerprints_loads_with_a_warning(tmp_path):
    from tests.unit.test_persistence import edit_manifest

    built(tmp_path, FakeEmbedder(dim=32))

    def old(m):
        del m["fingerprint"]
        m["format_version"] = 2

    edit_manifest(tmp_path / "idx", old)
    with pytest.warns(UserWarning, match="only its dimension could be checked"):
        index = SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=32))
    assert index.fingerprint.name == "FakeEmbedder(dim=32)"
    with pytest.raises(ConfigError, match="16"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=16))


# -- add_prepared ------------------------------------------------------------------------------
def test_add_prepared_refuses_a_batch_of_another_model():
    writer = SemanticIndex(embedder=FakeEmbedder(dim=32))
    batch = SemanticIndex(embedder=OtherFake(dim=32)).prepare_documents(DOCS)
    with pytest.raises(EmbedderMismatchError, match="OtherFake"):
        writer.add_prepared(batch)
    assert len(writer) == 0
    same = SemanticIndex(embedder=Transformed(FakeEmbedder(dim=32), half, "FakeEmbedder16"))
    writer.add_prepared(same.prepare_documents(DOCS))  # the same model in float16
    assert writer.doc_ids == ["bees", "rockets"]
