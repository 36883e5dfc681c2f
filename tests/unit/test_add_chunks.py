"""Pre-split input: add_chunks keeps a splitter's chunks, offsets and metadata."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument
from langchain_text_splitters import RecursiveCharacterTextSplitter
from llama_index.core import Document as LIDocument
from llama_index.core.node_parser import SentenceSplitter

from semrag import Document, SemanticIndex
from semrag.errors import ConfigError
from semrag.testing import FakeEmbedder
from semrag.types import Chunk

TEXT = (
    "Honey bees dance to tell the hive where flowers grow. The queen lays the eggs. "
    "Workers make honey from nectar.\n\nThe rocket reached orbit after a long delay. "
    "Engineers cheered in the control room. The payload deployed its solar panels."
)


def fresh(**kw) -> SemanticIndex:
    return SemanticIndex(embedder=FakeEmbedder(), **kw)


def assert_exact(index: SemanticIndex) -> None:
    for doc_id in index.doc_ids:
        text = index.document(doc_id).text
        spans = index.reader().sentences(doc_id)
        for c in index.chunks(doc_id):
            assert text[c.start : c.end] == c.text
            assert c.text == c.text.strip() and c.text
            assert 0 <= c.sentence_start < c.sentence_end <= len(spans)
            touched = [i for i, s in enumerate(spans) if s.start < c.end and s.end > c.start]
            assert touched == list(range(c.sentence_start, c.sentence_end))


def test_langchain_splitter_output_keeps_offsets_and_metadata():
    splitter = RecursiveCharacterTextSplitter(chunk_size=80, chunk_overlap=20, add_start_index=True)
    source = LCDocument(TEXT, metadata={"doc_id": "space", "lang": "en"})
    pieces = splitter.split_documents([source])
    pieces[1].metadata["page"] = 2  # a chunk's own metadata
    index = fresh()
    index.add_chunks(pieces)
    assert index.doc_ids == ["space"]
    chunks = index.chunks("space")
    assert [c.text for c in chunks] == [p.page_content for p in pieces]
    assert [c.start for c in chunks] == [p.metadata["start_index"] for p in pieces]
    assert index.document("space").metadata == {"doc_id": "space", "lang": "en"}
    assert chunks[1].metadata == {"doc_id": "space", "lang": "en", "page": 2}
    assert chunks[0].metadata == {"doc_id": "space", "lang": "en"}
    assert_exact(index)
    # Gaps the splitter dropped (the blank line) become spaces; everything else is exact.
    rebuilt = index.document("space").text
    assert len(rebuilt) == len(TEXT.rstrip())
    assert [i for i, (a, b) in enumerate(zip(rebuilt, TEXT, strict=False)) if a != b] == [
        i for i, ch in enumerate(TEXT) if ch == "\n"
    ]


def test_with_the_source_documents_offsets_index_their_text():
    splitter = RecursiveCharacterTextSplitter(chunk_size=80, chunk_overlap=20)  # no offsets
    source = LCDocument(TEXT, metadata={"doc_id": "space"})
    pieces = splitter.split_documents([source])
    index = fresh()
    index.add_chunks(pieces, documents=[Document("space", TEXT, {"doc_id": "space"})])
    assert index.document("space").text == TEXT
    assert [c.text for c in index.chunks("space")] == [p.page_content for p in pieces]
    assert_exact(index)
    assert index.search_sparse("payload solar panels", k=1)[0].chunk.doc_id == "space"


def test_llama_index_nodes_name_their_document_by_ref_doc_id():
    doc = LIDocument(text=TEXT, id_="li-doc", metadata={"lang": "en"})
    nodes = SentenceSplitter(chunk_size=32, chunk_overlap=8).get_nodes_from_documents([doc])
    assert len(nodes) > 2
    index = fresh()
    index.add_chunks(nodes, documents=[doc])
    assert index.doc_ids == ["li-doc"]
    assert index.document("li-doc").text == TEXT
    assert [c.start for c in index.chunks("li-doc")] == [n.start_char_idx for n in nodes]
    assert_exact(index)
    again = fresh()
    again.add_chunks(nodes)  # rebuilt from the nodes' own offsets
    assert [c.text for c in again.chunks("li-doc")] == [c.text for c in index.chunks("li-doc")]
    assert_exact(again)


def test_chunks_without_offsets_or_documents_are_joined_in_order():
    index = fresh()
    index.add_chunks(
        [
            LCDocument("Bees dance.", metadata={"source": "a.txt"}),
            LCDocument("  Rockets fly.  ", metadata={"source": "a.txt"}),
        ]
    )
    assert index.document("a.txt").text == "Bees dance.\n\n  Rockets fly.  "
    assert [c.text for c in index.chunks("a.txt")] == ["Bees dance.", "Rockets fly."]
    assert_exact(index)


def test_adding_chunks_again_replaces_the_document():
    index = fresh()
    index.add_chunks([Chunk("a", 0, 11, "Bees dance.", 2)])
    index.add_chunks([Chunk("a", 0, 13, "Rockets soar.", 2)], on_conflict="replace")
    assert [c.text for c in index.chunks()] == ["Rockets soar."]
    assert index.search("rockets", k=5)[0].chunk.text == "Rockets soar."
    assert len(index.search("rockets", k=5)) == 1


@pytest.mark.parametrize(
    ("chunks", "documents", "message"),
    [
        ([LCDocument("Bees dance.")], None, "names no document"),
        ([Chunk("a", 3, 14, "Bees dance.", 2)], [Document("a", "Bees dance.")], "at its offset"),
        ([Chunk("a", 0, 5, "Bees.", 1)], [Document("b", "Bees.")], "not among documents"),
        (
            [Chunk("a", 0, 5, "Bees.", 1)],
            [Document("a", "Bees."), Document("c", "Ants.")],
            "documents without chunks",
        ),
        ([Chunk("a", -1, -1, "Wasps.", 1)], [Document("a", "Bees.")], "does not occur"),
        ([Chunk("a", 0, 5, "Bees.", 1), Chunk("a", -1, -1, "Ants.", 1)], None, "some chunks"),
        ([Chunk("a", 0, 5, "Bees.", 1), Chunk("a", 2, 7, "ants.", 1)], None, "overlap"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(chunks, documents, message):
    index = fresh()
    index.add_documents([Document("keep", "Nothing changes here.")])
    with pytest.raises(ConfigError, match=message):
        index.add_chunks(chunks, documents=documents)
    assert index.doc_ids == ["keep"]
    with pytest.raises(TypeError, match="chunks must be"):
        index.add_chunks([42])
    with pytest.raises(TypeError, match="list of chunks"):
        index.add_chunks(Chunk("a", 0, 5, "Bees.", 1))


def test_chunk_metadata_survives_save_and_load(tmp_path):
    index = fresh()
    index.add_chunks(
        [
            Chunk("a", 0, 11, "Bees dance.", 2, metadata={"page": 1, "lang": "en"}),
            Chunk("a", 12, 25, "Rockets soar.", 2, metadata={"page": 2, "lang": "en"}),
        ]
    )
    index.save(tmp_path / "i")
    loaded = SemanticIndex.load(tmp_path / "i", embedder=FakeEmbedder())
    assert [dict(c.metadata) for c in loaded.chunks("a")] == [
        {"page": 1, "lang": "en"},
        {"page": 2, "lang": "en"},
    ]
    assert loaded.document("a").metadata == {"lang": "en"}


def test_split_false_indexes_each_document_whole():
    index = fresh()
    long = " ".join(f"Sentence {i} is about bees." for i in range(40))
    index.add_documents([Document("one", "  " + long + "\n")], split=False)
    [chunk] = index.chunks("one")
    assert chunk.text == long and chunk.start == 2
    assert chunk.sentence_end == len(index.reader().sentences("one")) == 40
    assert_exact(index)


def test_filtered_search_is_exact_and_a_delete_of_many_is_one_change():
    index = fresh()
    index.add_documents(
        [Document(f"d{i}", f"Bees number {i} dance.", {"even": i % 2 == 0}) for i in range(10)],
        split=False,
    )
    everything = index.search("bees dance", k=10)
    evens = index.search("bees dance", k=3, filter={"even": True})
    assert [h.chunk.doc_id for h in evens] == [
        h.chunk.doc_id for h in everything if h.chunk.metadata["even"]
    ][:3]
    assert [h.score for h in evens] == pytest.approx(
        [h.score for h in everything if h.chunk.metadata["even"]][:3]
    )
    odd = index.search("bees", k=10, filter=lambda m: not m["even"])
    assert sorted(h.chunk.doc_id for h in odd) == [f"d{i}" for i in (1, 3, 5, 7, 9)]
    assert index.search("bees", k=3, filter={"even": "no"}) == []
    version = index.version
    assert index.delete(["d0", "d1", "missing"]) is False  # one id was not indexed
    assert index.version == version + 1
    assert "d0" not in index and len(index) == 8
    with pytest.warns(DeprecationWarning, match=r"delete_many moved to index.delete\(ids\)"):
        assert index.delete_many(["d2", "missing"]) == 1
    with (
        pytest.raises(TypeError, match="pass a list of document ids, or use delete"),
        pytest.warns(DeprecationWarning),
    ):
        index.delete_many("d2")


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(
        st.sampled_from("bees dance. rockets fly. the queen lays eggs. orbit\n\n  ".split(" ")),
        min_size=1,
        max_size=40,
    ),
    cuts=st.lists(st.tuples(st.integers(0, 400), st.integers(1, 120)), min_size=1, max_size=8),
    with_documents=st.booleans(),
)
def test_any_pieces_of_a_text_are_kept_exactly(words, cuts, with_documents):
    text = " ".join(words)
    pieces = []
    for a, n in cuts:
        a = min(a, len(text))
        piece = text[a : a + n]
        if piece.strip():
            pieces.append(Chunk("t", a, a + len(piece), piece, 1))
    if not pieces:
        return
    index = fresh()
    index.add_chunks(pieces, documents=[Document("t", text)] if with_documents else None)
    stored = index.chunks("t")
    expected = sorted(
        (p.start + len(p.text) - len(p.text.lstrip()), p.text.strip()) for p in pieces
    )
    assert sorted((c.start, c.text) for c in stored) == expected
    assert [c.index for c in stored] == list(range(len(stored)))
    assert_exact(index)
    if with_documents:
        assert index.document("t").text == text


def test_pieces_upsert_and_removal_by_key_keep_the_rest_of_each_document():
    from semrag.index.ingest.presplit import remove_pieces, upsert_pieces

    stored = {"a": [Chunk("a", 0, 5, "Bees.", 1, metadata={"k": 1})]}
    new = [
        Chunk("a", 6, 11, "Ants.", 1, metadata={"k": 2}),
        Chunk("b", -1, -1, "Cats.", 1, metadata={"k": 3}),
    ]
    merged = upsert_pieces(new, lambda d: stored.get(d, []), "k")
    assert [(c.doc_id, c.text, c.start) for c in merged] == [
        ("a", "Bees.", 0),
        ("a", "Ants.", 6),
        ("b", "Cats.", -1),
    ]
    again = upsert_pieces([Chunk("a", 0, 5, "Bees!", 1, metadata={"k": 1})], stored.get, "k")
    assert [c.text for c in again] == ["Bees!"]  # the same key replaces
    left, emptied = remove_pieces(merged, {1, 3}, "k")
    assert [c.text for c in left] == ["Ants."] and emptied == ["b"]
