"""index.reembed(embedder): another model for every vector, as one change of the living index."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import ConfigError, EmbedderMismatchError, EmbeddingError
from semrag.graph import KnowledgeGraph
from semrag.index import SSGConfig
from semrag.retrieval import PPRRetriever, SketchRetriever, SSGRetriever
from semrag.static_embedder import StaticEmbedder
from semrag.testing import FakeEmbedder
from tests.counting import OtherFake

TEXTS = {
    "bees": "Honey bees dance to show where flowers grow. The hive follows the dance. "
    "Bees carry pollen between the flowers of the valley.",
    "rockets": "Rockets burn fuel to reach orbit. Their engines roar at launch. "
    "The Saturn V carried Apollo 11 to the Moon.",
    "paris": "Paris is the capital of France. The Eiffel Tower stands in Paris. "
    "Gustave Eiffel built the tower for the 1889 fair.",
}
DOCS = [Document(i, t) for i, t in TEXTS.items()]
QUERIES = ["bees dancing", "who built the tower", "engines of the rocket", "Apollo Moon"]
SETTINGS = {"ssg": SSGConfig(), "passages": True, "pieces": (24, 4)}


def table(index: SemanticIndex) -> list[tuple]:
    """Documents, chunks and every vector, without chunk ids (a re-embedding makes new ones)."""
    rows = []
    for doc_id in index.doc_ids:
        e = index.reader().indexed(doc_id)
        rows.append((doc_id, tuple(e.themes), tuple(np.round(e.theme_vector, 5))))
        for c, v in zip(e.chunks, index.reader().vectors_of(e.chunk_ids), strict=True):
            rows.append((doc_id, c.start, c.end, c.text, tuple(np.round(v, 5))))
        rows.append(tuple(np.round(np.asarray(e.sentence_vectors, np.float32), 3).ravel()))
    return rows


def answers(index: SemanticIndex) -> list:
    out = []
    retrievers = [
        lambda q: index.search(q, k=5),
        lambda q: index.search_sparse(q, k=5),
        PPRRetriever(index, k=5).retrieve,
        SSGRetriever(index, k=5).retrieve,
    ]
    for q in QUERIES:
        for retrieve in retrievers:
            out.append([(h.chunk.doc_id, h.chunk.start, round(h.score, 4)) for h in retrieve(q)])
    pieces = index.reader().piece_index
    for d in index.doc_ids:
        out.append([(p.start, p.end, tuple(np.round(v, 4))) for p, _, v in pieces.pieces_of(d)])
    return out


def fresh_build(model, index: SemanticIndex) -> SemanticIndex:
    """What a fresh build with ``model`` over the index's chunks gives."""
    fresh = SemanticIndex(embedder=model, **SETTINGS)
    docs = [index.reader().indexed(d).doc for d in index.doc_ids]
    fresh.add_chunks([c for d in index.doc_ids for c in index.chunks(d)], documents=docs)
    return fresh


def filled(model=None) -> SemanticIndex:
    index = SemanticIndex(embedder=model or FakeEmbedder(dim=32), **SETTINGS)
    index.add_documents(DOCS)
    return index


def test_a_reembedded_index_answers_as_a_fresh_build_with_the_new_model(tmp_path):
    index = filled()
    before = answers(index)
    version = index.version
    index.reembed(OtherFake(dim=48))  # another size too: every part is rebuilt
    fresh = fresh_build(OtherFake(dim=48), index)
    assert table(index) == table(fresh)
    assert answers(index) == answers(fresh) != before
    assert index.version == version + 1
    assert index.fingerprint.name == "OtherFake(dim=48)" and index.embedder.dim == 48
    assert isinstance(index.chunker.embedder, StaticEmbedder)  # later adds cut as before
    index.save(tmp_path / "idx")
    with pytest.raises(EmbedderMismatchError, match="the index saved in"):
        SemanticIndex.load(tmp_path / "idx", embedder=FakeEmbedder(dim=48))
    loaded = SemanticIndex.load(tmp_path / "idx", embedder=OtherFake(dim=48))
    assert answers(loaded) == answers(fresh)


def test_a_chunker_on_the_old_model_is_copied_with_the_new_one():
    model = FakeEmbedder(dim=32)
    index = SemanticIndex(embedder=model, chunker=SemanticChunker(model))
    index.add_documents(DOCS)
    index.reembed(OtherFake(dim=48))
    assert index.chunker.embedder is index.embedder  # later adds cut with the new model
    assert isinstance(index.chunker, SemanticChunker)


def test_the_async_twin_gives_the_same_index():
    index, twin = filled(), filled()
    index.reembed(OtherFake(dim=32))
    asyncio.run(twin.areembed(OtherFake(dim=32)))
    assert table(twin) == table(index)
    assert answers(twin) == answers(index)


def test_a_failure_leaves_the_old_index_whole():
    class Failing(OtherFake):
        def _embed_batch(self, texts):
            if len(texts) < len(__import__("semrag").fingerprint.PROBE_TEXTS) + 1:
                return super()._embed_batch(texts)
            raise RuntimeError("the model server went away")

    index = filled()
    before, version, fp = answers(index), index.version, index.fingerprint
    with pytest.raises((EmbeddingError, RuntimeError), match="the model server went away"):
        index.reembed(Failing(dim=32))
    assert (index.version, index.fingerprint) == (version, fp)
    assert isinstance(index.embedder, FakeEmbedder) and answers(index) == before


class Gated(OtherFake):
    """The new model, held at its first batch of document text until ``go`` is set."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.waiting, self.go = threading.Event(), threading.Event()

    def _embed_batch(self, texts):
        if any("bees" in t.lower() for t in texts):
            self.waiting.set()
            assert self.go.wait(30)
        return super()._embed_batch(texts)


def test_readers_keep_the_old_version_and_a_write_meanwhile_is_embedded_too():
    index = filled()
    before = answers(index)
    new = Gated(dim=32)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            index.reembed(new)
        except BaseException as exc:  # reported below
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert new.waiting.wait(30)
    # while the new model works, readers are answered by the old one, whole
    assert answers(index) == before and isinstance(index.embedder, FakeEmbedder)
    # a write lands meanwhile, embedded by the old model as the index stands
    late = Document("late", "Ants build bridges with their bodies. The colony crosses.")
    index.add_documents([late])
    new.go.set()
    worker.join(60)
    assert not errors, errors
    assert "late" in index.doc_ids  # nothing is lost, and it has the new model's vectors
    assert table(index) == table(fresh_build(OtherFake(dim=32), index))


def test_a_progress_bar_shows_the_work(capsys):
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), show_progress=True)
    index.add_documents(DOCS)
    capsys.readouterr()
    index.reembed(OtherFake(dim=32))
    assert "Indexing" in capsys.readouterr().err
    index.reembed(FakeEmbedder(dim=32), show_progress=False)
    assert "Indexing" not in capsys.readouterr().err
    quiet = filled()
    quiet.reembed(OtherFake(dim=32), show_progress=True)
    assert "Indexing" in capsys.readouterr().err and not quiet.show_progress


def test_what_cannot_be_reembedded_is_refused_with_the_way_out():
    index = filled()
    kg = KnowledgeGraph.build(index)
    with pytest.raises(ConfigError, match="unfollow"):
        index.reembed(OtherFake(dim=32))
    assert isinstance(index.embedder, FakeEmbedder)
    kg.detach()
    index.reembed(OtherFake(dim=32))  # then the graph is built again over the new model
    rebuilt = KnowledgeGraph.build(index)
    assert SketchRetriever(index, rebuilt, k=3).retrieve("Eiffel tower")


def test_a_chunker_given_or_of_another_model_is_kept():
    from semrag.chunking import SemanticChunker

    chunker = SemanticChunker(FakeEmbedder(dim=32), max_tokens=16)
    index = SemanticIndex(chunker=chunker, embedder=FakeEmbedder(dim=32))
    index.add_documents(DOCS)
    index.reembed(OtherFake(dim=32))
    assert index.chunker is chunker  # it did not embed with the index's embedder object
    other = SemanticChunker(OtherFake(dim=32), max_tokens=16)
    index.reembed(FakeEmbedder(dim=32), chunker=other)
    assert index.chunker is other
