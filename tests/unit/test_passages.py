"""The PPR passage phrases as a part of the index: followed, saved, loaded, never rebuilt."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import semrag.index.parts._passage_graph as passage_graph_module
import semrag.index.parts.passages as passages_module
import semrag.retrieval.ppr as ppr_module
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, StoreError
from semrag.fingerprint import PROBE_TEXTS
from semrag.index.storage.persist import _sha256, saved_folder
from semrag.retrieval import PPRRetriever
from semrag.testing import FakeEmbedder
from tests.unit.test_ppr import DOCS, QUESTION

MORE = [
    Document("porto", "Porto\n\nPorto lies on the Douro river. Marta Quill studied there."),
    Document("film", "The Glass Harbour\n\nThe Glass Harbour is a 1962 film by Anna Berg."),
]
QUERIES = [QUESTION, "Which river flows through Porto?", "Who made The Glass Harbour?"]


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def _embed_batch(self, texts):
        self.batches.append(list(texts))
        return super()._embed_batch(texts)


def ix(tmp_path):
    return saved_folder(tmp_path / "ix")


def ranked(index: SemanticIndex, **options) -> list[list[tuple[str, int, float]]]:
    retriever = PPRRetriever(index, k=4, **options)
    return [
        [(h.chunk.doc_id, h.chunk.start, round(h.score, 6)) for h in retriever.retrieve(q)]
        for q in QUERIES
    ]


def changed(index: SemanticIndex) -> SemanticIndex:
    index.add_documents(DOCS)
    index.delete("noise2")
    index.add_documents(MORE, on_conflict="replace")  # a new document and a new version
    return index


@pytest.mark.parametrize("synonym_k", [0, 2])
def test_ppr_over_kept_phrases_equals_ppr_over_derived_ones_and_enables_nothing(synonym_k):
    kept = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True))
    plain = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False))
    assert "passages" in kept.parts and "passages" not in plain.parts
    version = plain.version
    # titles=False: derived for both (the kept part has titles)
    assert ranked(kept, synonym_k=synonym_k, titles=False) == ranked(
        plain, synonym_k=synonym_k, titles=False
    )
    assert ranked(kept, synonym_k=synonym_k) == ranked(plain, synonym_k=synonym_k)
    # a retriever reads the index: it never gives it a part (enabling is a change)
    assert "passages" not in plain.parts and plain.version == version


def test_derived_phrases_are_found_once_for_every_retriever_and_follow_each_change(monkeypatch):
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False))
    found: list[str] = []
    real = passages_module.find_entities

    def counting(text):
        found.append(text)
        return real(text)

    monkeypatch.setattr(passages_module, "find_entities", counting)
    first = ranked(index)
    n_chunks = len(index.chunks())
    assert len(found) == n_chunks  # every chunk once
    assert ranked(index) == first and PPRRetriever(index, k=2).retrieve(QUESTION)
    assert len(found) == n_chunks  # a second retriever and a second query: nothing again
    index.delete("porto")
    index.add_documents([Document("lisbon", "Lisbon\n\nLisbon is the capital of Portugal.")])
    found.clear()
    after = ranked(index)
    assert len(found) == len(index.chunks("lisbon"))  # the change's document only
    fresh = SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True)
    fresh.add_documents([index.document(d) for d in index.doc_ids])
    assert after == ranked(fresh)


def test_derived_phrases_start_afresh_for_a_new_model_and_after_much_churn():
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False))
    assert len(ranked(index)) == len(QUERIES)  # derived with the first model
    index.reembed(FakeEmbedder(dim=128))
    derived_anew = ranked(index)  # the query is 128-d now; names keep the static model's vectors
    index.enable("passages")
    assert derived_anew == ranked(index)
    # a registry of names no document holds any more is dropped, not kept growing
    part = passages_module.PassagePhrases()
    docs = [Document(f"d{i}", f"Name{i} Alpha met Name{i} Beta in Town{i}.") for i in range(400)]
    churn = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    for doc in docs:
        churn.add_documents([doc])
        part.sync([churn.reader().indexed(d) for d in churn.doc_ids], churn.version)
        churn.delete(doc.id)
    churn.add_documents([Document("last", "Zed Quill lives in Faro.")])
    part.sync([churn.reader().indexed(d) for d in churn.doc_ids], churn.version)
    assert len(part) == 1 and len(part.registry.names) < 1024 + 3 * 400


def test_a_loaded_index_answers_its_first_query_without_finding_a_phrase_or_assembling(
    tmp_path, monkeypatch
):
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True))
    want = ranked(index)
    index.save(tmp_path / "ix")
    assert json.loads((ix(tmp_path) / "manifest.json").read_text())["passages"] == {"titles": True}
    emb = CountingEmbedder()
    loaded = SemanticIndex.load(tmp_path / "ix", embedder=emb)

    assert (ix(tmp_path) / "passage_graph.npz").exists()  # the graph a query assembled

    def no_rebuild(*args, **kwargs):
        raise AssertionError("a passage's phrases were found again")

    def no_assembly(*args, **kwargs):
        raise AssertionError("the passage graph was assembled again")

    monkeypatch.setattr(passages_module, "find_entities", no_rebuild)
    monkeypatch.setattr(passage_graph_module, "assemble", no_assembly)
    monkeypatch.setattr(ppr_module, "assemble", no_assembly)
    retriever = PPRRetriever(loaded, k=4)
    hits = retriever.retrieve(QUERIES[0])
    assert [h.chunk.doc_id for h in hits] == [d for d, _, _ in want[0]]
    # the load's model check (the probe texts), then the query: no name
    assert emb.batches == [list(PROBE_TEXTS), [QUERIES[0]]]
    monkeypatch.undo()
    assert ranked(loaded) == want


def test_enable_builds_the_part_on_a_populated_index_and_it_follows(tmp_path):
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False))
    version = index.version
    index.enable("passages")
    assert "passages" in index.parts and index.version == version
    index.add_documents([Document("lisbon", "Lisbon\n\nLisbon is the capital of Portugal.")])
    fresh = SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True)
    fresh.add_documents([index.document(d) for d in index.doc_ids])
    assert ranked(index) == ranked(fresh)
    index.enable("passages")  # already there: nothing changes
    with pytest.raises(ConfigError, match="passages"):
        index.enable("bogus")
    index.save(tmp_path / "ix")
    assert ranked(SemanticIndex.load(tmp_path / "ix", embedder=FakeEmbedder())) == ranked(fresh)


def test_an_index_without_the_part_saves_and_loads_without_it(tmp_path):
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False))
    index.save(tmp_path / "ix")
    assert not (ix(tmp_path) / "passages.npz").exists()
    loaded = SemanticIndex.load(tmp_path / "ix", embedder=FakeEmbedder())
    assert "passages" not in loaded.parts and ranked(loaded) == ranked(index)


def test_phrases_that_do_not_match_the_index_are_refused(tmp_path):
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True))
    index.save(tmp_path / "ix")
    arrays = dict(np.load(ix(tmp_path) / "passages.npz"))
    arrays["counts"] = arrays["counts"][:-1]
    np.savez(ix(tmp_path) / "passages.npz", **arrays)
    manifest = json.loads((ix(tmp_path) / "manifest.json").read_text())
    manifest["files"]["passages.npz"] = _sha256(ix(tmp_path) / "passages.npz")  # no checksum
    (ix(tmp_path) / "manifest.json").write_text(json.dumps(manifest))  # error: a real mismatch
    with pytest.raises(StoreError, match="passage phrases"):
        SemanticIndex.load(tmp_path / "ix", embedder=FakeEmbedder())


def test_name_vectors_of_an_earlier_model_are_embedded_again_on_load(tmp_path):
    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True))
    want = ranked(index)
    index.save(tmp_path / "ix")
    folder = ix(tmp_path)
    meta = json.loads((folder / "passages.json").read_text())
    del meta["names_model"]  # as saved before 0.4: the index embedder's vectors
    (folder / "passages.json").write_text(json.dumps(meta))
    arrays = dict(np.load(folder / "passages.npz"))
    arrays["vectors"] = FakeEmbedder().embed(meta["names"])
    np.savez(folder / "passages.npz", **arrays)
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in ("passages.json", "passages.npz"):
        manifest["files"][name] = _sha256(folder / name)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    loaded = SemanticIndex.load(tmp_path / "ix", embedder=FakeEmbedder())
    vectors = loaded.parts["passages"].registry.vectors.view
    assert vectors.shape == (len(meta["names"]), passages_module.NAMES.dim)
    assert np.allclose(vectors, passages_module.NAMES.embed(meta["names"]), atol=1e-6)
    assert ranked(loaded) == want


texts = st.sampled_from([d.text for d in [*DOCS, *MORE]])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.one_of(st.none(), texts)), max_size=8))
def test_kept_phrases_after_any_changes_equal_a_fresh_build(steps):
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True)
    for doc_id, text in steps:  # None deletes
        if text is None:
            index.delete([doc_id])
        else:
            index.add_documents([Document(doc_id, text)], on_conflict="replace")
    fresh = SemanticIndex(embedder=FakeEmbedder(), ssg=False, passages=True)
    fresh.add_documents([index.document(d) for d in index.doc_ids])
    part, other = index.parts["passages"], fresh.parts["passages"]
    for d in index.doc_ids:
        mine, theirs = part.of(d), other.of(d)
        assert [part.registry.names[n] for n in mine.names] == [
            other.registry.names[n] for n in theirs.names
        ]
        assert mine.counts.tolist() == theirs.counts.tolist()
    assert ranked(index) == ranked(fresh)


def test_derived_phrases_live_as_long_as_their_index():
    import gc
    import weakref

    index = changed(SemanticIndex(embedder=FakeEmbedder(), ssg=False))
    ranked(index)
    titles = PPRRetriever(index).titles
    assert ("passages", titles) in index.reader().derived_parts  # the reader keeps them
    gone = weakref.ref(index)
    del index
    gc.collect()
    assert gone() is None  # nothing the derived part holds keeps the index alive
