"""SKETCH's small pieces as a part of the index: kept per change, saved, equal to a fresh split."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, StoreError
from semrag.graph import KnowledgeGraph
from semrag.index.parts.pieces import PieceIndex
from semrag.index.storage.persist import saved_folder
from semrag.retrieval import SketchRetriever
from semrag.testing import FakeEmbedder
from tests.unit.test_living_index import RecordingEmbedder

SPLIT = (12, 3)
TOPICS = ["Bees", "Rockets", "Honey", "Stocks", "Rivers"]


def long_text(topic: str, n: int) -> str:
    return " ".join(f"{topic} fact number {i} is told here." for i in range(n))


def table(pieces) -> list[tuple]:
    """Every piece (by id order): where it is, its parent, its text and vector."""
    ids = pieces.dense.ids.tolist()
    vectors = pieces.dense.vectors_of(ids)
    return [
        (c.doc_id, c.start, c.end, c.text, c.token_count, pieces.parents[i], tuple(v.round(5)))
        for i, c, v in zip(ids, (pieces.pieces[i] for i in ids), vectors, strict=True)
    ]


def fresh_pieces(index: SemanticIndex) -> PieceIndex:
    fresh = PieceIndex(SPLIT, index.chunker.tokenizer, index.embedder, "flat")
    fresh.sync([index.reader().indexed(d) for d in index.doc_ids], index.version)
    return fresh


def check_pieces(index: SemanticIndex) -> None:
    """Each piece is a slice of its chunk within the cap; together they cover the chunk."""
    kept = index.reader().piece_index
    covered: dict[int, list[tuple[int, int]]] = {}
    for i, c in kept.pieces.items():
        parent = index.chunk(kept.parents[i])
        assert parent.start <= c.start < c.end <= parent.end
        assert c.text == index.document(c.doc_id).text[c.start : c.end]
        assert c.token_count <= SPLIT[0] or (c.start, c.end) == (parent.start, parent.end)
        covered.setdefault(kept.parents[i], []).append((c.start, c.end))
    assert sorted(covered) == sorted(index.reader().dense.ids.tolist())
    for cid, spans in covered.items():
        parent, at = index.chunk(cid), index.chunk(cid).start
        for a, b in sorted(spans):
            assert a <= at  # no gap
            at = max(at, b)
        assert at == parent.end


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, 4), st.integers(1, 30)),
        min_size=1,
        max_size=6,
    )
)
def test_pieces_kept_per_change_equal_a_fresh_split(ops):
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False, pieces=SPLIT)
    for op, doc, n in ops:
        doc_id = f"d{doc}"
        if op == "add":  # adds, or replaces an existing document
            index.add_documents(
                [Document(doc_id, long_text(TOPICS[doc], n))], on_conflict="replace"
            )
        elif doc_id in index.doc_ids:
            index.delete(doc_id)
        assert table(index.reader().piece_index) == table(fresh_pieces(index))
        check_pieces(index)


def test_sketch_reads_the_index_pieces_and_embeds_none_at_query_time(tmp_path):
    docs = [Document(f"d{i}", long_text(t, 25)) for i, t in enumerate(TOPICS[:3])]
    embedder = RecordingEmbedder()
    kept = SemanticIndex(embedder=embedder, ssg=False, pieces=SPLIT)
    kept.add_documents(docs)
    plain = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    plain.add_documents(docs)
    assert len(kept.reader().piece_index.pieces) > len(kept.chunks())  # the long chunks were split

    query = "Which rockets fact number 7 is told?"
    got = SketchRetriever(kept, KnowledgeGraph.build(kept, communities=False), split=SPLIT)
    before = len(embedder.texts)
    hits = got.retrieve(query)
    made = embedder.texts[before:]
    assert all(len(t) < 80 for t in made) and query in made  # the queries, no piece
    assert got.pieces()[2] is kept.reader().piece_index.dense
    want = SketchRetriever(plain, KnowledgeGraph.build(plain, communities=False), split=SPLIT)
    assert [(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits] == [
        (h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in want.retrieve(query)
    ]
    other = SketchRetriever(kept, got.graph, split=(20, 4))  # a split the index does not hold
    assert other.pieces()[2] is not kept.reader().piece_index.dense

    kept.save(tmp_path / "index")
    loaded = SemanticIndex.load(tmp_path / "index", embedder=FakeEmbedder(dim=32))
    assert loaded.reader().piece_index.split == SPLIT
    assert table(loaded.reader().piece_index) == table(kept.reader().piece_index)
    loaded.add_documents(
        [Document("d9", long_text("Rivers", 20))], on_conflict="replace"
    )  # and it follows on
    assert table(loaded.reader().piece_index) == table(fresh_pieces(loaded))

    (saved_folder(tmp_path / "index") / "pieces.json").write_text(
        '{"split": [12, 3], "rows": [[0]]}'
    )
    with pytest.raises(
        StoreError, match=r"pieces.json is missing or corrupt \(checksum mismatch\)"
    ):
        SemanticIndex.load(tmp_path / "index", embedder=FakeEmbedder(dim=32))


@pytest.mark.parametrize("split", [(4, 1), (12, 7), (12,), "12"])
def test_a_bad_split_is_a_config_error(split):
    with pytest.raises(ConfigError, match="SemanticIndex: split"):
        SemanticIndex(embedder=FakeEmbedder(dim=32), pieces=split)


def test_split_none_searches_the_index_chunks_themselves():
    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"d{i}", long_text(t, 20)) for i, t in enumerate(TOPICS[:3])])
    sketch = SketchRetriever(index, KnowledgeGraph.build(index, communities=False), split=None)
    pieces, parents, dense = sketch.pieces()
    assert dense is index.reader().dense
    ids = index.reader().dense.ids.tolist()
    assert ids and all(pieces[i] == index.chunk(i) and parents[i] == i for i in ids)
    chunks = {(c.doc_id, c.start, c.end) for c in index.chunks()}
    hits = sketch.retrieve("Which rockets fact is told?")
    assert hits and all((h.chunk.doc_id, h.chunk.start, h.chunk.end) in chunks for h in hits)


def test_pieces_made_a_batch_at_a_time_equal_those_made_at_once(monkeypatch):
    """A change is split and embedded a batch of pieces at a time (bounded memory)."""
    from semrag.index.parts import pieces as pieces_module

    index = SemanticIndex(embedder=FakeEmbedder(dim=32), ssg=False)
    index.add_documents([Document(f"d{i}", long_text(TOPICS[i], 10 + 7 * i)) for i in range(5)])
    whole = fresh_pieces(index)
    monkeypatch.setattr(pieces_module, "_BATCH", 3)
    sizes: list[int] = []
    staged = pieces_module.DenseIndex.staged_batches

    def counted(self, removed, batches):  # noqa: ANN001, ANN202
        return staged(self, removed, (sizes.append(len(b[0])) or b for b in batches))

    monkeypatch.setattr(pieces_module.DenseIndex, "staged_batches", counted)
    batched = fresh_pieces(index)
    assert len(sizes) > 2 and sum(sizes) == len(whole.pieces)
    assert table(batched) == table(whole)
    assert [len(whole.pieces_of(f"d{i}")) for i in range(5)] == [
        len(batched.pieces_of(f"d{i}")) for i in range(5)
    ]
