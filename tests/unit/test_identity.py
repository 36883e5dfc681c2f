"""Document identity: one rule everywhere, no silent replacement, deletes that report."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument
from llama_index.core import Document as LIDocument

from langchain_semrag import SemanticTextSplitter
from semrag import Document, SemanticIndex
from semrag.errors import ConfigError, DocumentConflictError
from semrag.identity import chunk_document_id, content_id, document_id, entry_id
from semrag.testing import FakeEmbedder

CHESS = "Chess is played on a board of 64 squares. The rook moves in straight lines."
BEES = "Honey bees dance to tell their sisters where flowers grow. Bees store nectar."
TEA = "Green tea is steamed soon after picking. Black tea is left to oxidise."


def fresh() -> SemanticIndex:
    return SemanticIndex(embedder=FakeEmbedder(), ssg=False)


def loaded(*pairs: tuple[str, str]) -> list[LCDocument]:
    """What LangChain's TextLoader gives: no id, the path as ``source``."""
    return [LCDocument(text, metadata={"source": path}) for path, text in pairs]


def test_the_rule_reads_explicit_id_then_source_then_content():
    assert document_id(CHESS, {"source": "chess.txt"}) == "chess.txt"
    assert document_id(CHESS, {"source": "c.pdf", "page": 0}) == "c.pdf#page=0"
    assert document_id(CHESS, {"source": "c.csv", "row": 3}) == "c.csv#row=3"
    assert document_id(CHESS, {"source": "x", "doc_id": "mine"}) == "mine"
    assert document_id(CHESS, {"source": "x"}, LCDocument(CHESS, id="lc")) == "lc"
    assert document_id(CHESS, {}, LIDocument(text=CHESS, id_="li")) == "li"
    assert document_id(CHESS) == content_id(CHESS) != content_id(BEES)
    # a chunk names its document: what the splitter recorded, a node's source, the source
    meta = {"source": "c.pdf", "page": 2, "start_index": 80}
    assert chunk_document_id(meta) == "c.pdf#page=2"
    assert chunk_document_id({**meta, "semrag_doc_id": "rec"}, "ref") == "rec"
    assert chunk_document_id(meta, "ref") == "ref"
    assert chunk_document_id({"lang": "en"}) is None
    # an entry of a vector store: its place in the source, else its content
    assert entry_id(CHESS, meta) == "c.pdf#page=2&start_index=80"
    assert entry_id(CHESS, {"source": "c.txt"}) == f"c.txt#{content_id(CHESS)}"


def test_loaded_files_keep_their_source_ids_and_a_later_add_replaces_nothing():
    index = fresh()
    index.add_documents(loaded(("chess.txt", CHESS), ("bees.txt", BEES)))
    index.add_documents(loaded(("tea.txt", TEA)))  # its position in this call is 0
    assert sorted(index.doc_ids) == ["bees.txt", "chess.txt", "tea.txt"]
    assert index.document("chess.txt").text == CHESS and index.notes == []
    hit = index.search("tea", k=1)[0]
    assert hit.chunk.doc_id == "tea.txt" and hit.to_metadata()["source"] == "tea.txt"
    assert index.delete("chess.txt") is True and "chess.txt" not in index


def test_a_collision_is_refused_by_default_and_names_the_ids():
    index = fresh()
    index.add_documents(loaded(("chess.txt", CHESS), ("bees.txt", BEES)))
    version = index.version
    with pytest.raises(DocumentConflictError, match="chess.txt") as caught:
        index.add_documents(loaded(("tea.txt", TEA), ("chess.txt", "A new text.")))
    assert caught.value.ids == ["chess.txt"]
    assert index.version == version and "tea.txt" not in index  # nothing was added
    assert index.document("chess.txt").text == CHESS


def test_replace_and_skip_are_the_callers_choice():
    index = fresh()
    index.add_documents(loaded(("chess.txt", CHESS)))
    index.add_documents(loaded(("chess.txt", CHESS + " Rooks castle.")), on_conflict="replace")
    assert index.document("chess.txt").text.endswith("Rooks castle.") and index.notes == []
    index.add_documents(loaded(("chess.txt", "Lost?"), ("tea.txt", TEA)), on_conflict="skip")
    assert index.document("chess.txt").text.endswith("Rooks castle.")
    assert "tea.txt" in index
    assert index.notes == ["add: skipped 1 already indexed: ['chess.txt']"]
    with pytest.raises(ConfigError, match="on_conflict"):
        index.add_documents([Document("x", "X.")], on_conflict="upsert")  # type: ignore[arg-type]


def test_duplicates_in_one_call_are_named():
    with pytest.raises(DocumentConflictError, match=r"\['a.txt'\]"):
        fresh().add_documents(loaded(("a.txt", CHESS), ("a.txt", BEES)))


def test_delete_takes_one_id_or_a_list_and_reports_unknown_ids():
    index = fresh()
    index.add_documents([Document(i, t) for i, t in [("a", CHESS), ("b", BEES), ("c", TEA)]])
    version = index.version
    assert index.delete(["a", "b"]) is True  # LangChain's delete(ids) form
    assert index.version == version + 1 and index.doc_ids == ["c"]  # one change
    assert index.delete(["c", "nope"]) is False
    assert index.doc_ids == [] and index.notes == ["delete: not indexed: ['nope']"]
    for bad in (None, 3, b"c", [1, 2], {"a": 1}):
        with pytest.raises(ConfigError, match="document ids"):
            index.delete(bad)  # type: ignore[arg-type]


def test_the_splitters_ids_are_the_ids_the_index_files_chunks_under():
    docs = loaded(("chess.txt", CHESS), ("bees.txt", BEES))
    chunks = SemanticTextSplitter(FakeEmbedder()).split_documents(docs)
    assert {c.metadata["semrag_doc_id"] for c in chunks} == {"chess.txt", "bees.txt"}
    index = fresh()
    index.add_chunks(chunks, documents=docs)  # the very documents that were split
    assert sorted(index.doc_ids) == ["bees.txt", "chess.txt"]
    assert index.document("bees.txt").text == BEES
    assert all(c.metadata["source"] == c.doc_id for c in index.chunks())
    with pytest.raises(DocumentConflictError, match="2 document id"):
        index.add_chunks(chunks, documents=docs)
    index.add_chunks(chunks, documents=docs, on_conflict="replace")
    assert len(index) == 2


def test_async_twins_follow_the_same_rule():
    async def flow() -> SemanticIndex:
        index = fresh()
        await index.aadd_documents(loaded(("chess.txt", CHESS)))
        with pytest.raises(DocumentConflictError, match="1 document id"):
            await index.aadd_documents(loaded(("chess.txt", BEES)))
        await index.aadd_documents(loaded(("bees.txt", BEES)))
        assert await index.adelete(["chess.txt", "x"]) is False
        return index

    index = asyncio.run(flow())
    assert index.doc_ids == ["bees.txt"] and index.notes == ["delete: not indexed: ['x']"]


def test_a_concurrent_add_of_the_same_id_never_replaces_silently():
    index = fresh()

    async def both() -> list[object]:
        return await asyncio.gather(
            index.aadd_documents(loaded(("a.txt", CHESS))),
            index.aadd_documents(loaded(("a.txt", BEES))),
            return_exceptions=True,
        )

    outcomes = asyncio.run(both())
    assert sum(isinstance(o, DocumentConflictError) for o in outcomes) == 1
    assert index.document("a.txt").text in (CHESS, BEES) and len(index) == 1


ids = st.one_of(st.none(), st.text(min_size=1, max_size=4))
sources = st.one_of(st.none(), st.sampled_from(["a.txt", "b.pdf", "dir/c.md"]))
pages = st.one_of(st.none(), st.integers(0, 3))
texts = st.text(alphabet="abc .", min_size=1, max_size=12).filter(str.strip)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ids, sources, pages, texts), min_size=1, max_size=6), st.randoms())
def test_ids_never_depend_on_the_position_in_a_call(specs, random):
    def lc(spec):
        explicit, source, page, text = spec
        meta = {k: v for k, v in (("source", source), ("page", page)) if v is not None}
        return LCDocument(text, metadata=meta, id=explicit)

    docs = [lc(s) for s in specs]
    named = {id(d): d.id or document_id(d.page_content, d.metadata) for d in docs}
    shuffled = list(docs)
    random.shuffle(shuffled)
    index = fresh()
    if len(set(named.values())) < len(docs):  # a true collision: refused, nothing indexed
        with pytest.raises(DocumentConflictError, match="more than once"):
            index.add_documents(shuffled)
        assert len(index) == 0
        return
    index.add_documents(shuffled)
    assert sorted(index.doc_ids) == sorted(named.values())
    for d in docs:  # each retrievable under its own id, with its own text and source
        stored = index.document(named[id(d)])
        assert stored.text == d.page_content
        assert stored.metadata.get("source") == d.metadata.get("source")
    # the splitter names every document the same way as the index
    split = SemanticTextSplitter(FakeEmbedder()).split_documents(docs)
    assert {c.metadata["semrag_doc_id"] for c in split} <= set(named.values())


def test_a_lone_surrogate_is_refused_at_the_door_before_any_change():
    index = fresh()
    index.add_documents(loaded(("chess.txt", CHESS)))
    version = index.version
    with pytest.raises(ConfigError, match="lone surrogate .* at offset 7"):
        index.add_documents(loaded(("bad.txt", "Broken \ud800 text.")))
    with pytest.raises(ConfigError, match="Document.id holds a lone surrogate"):
        index.add_documents([Document("\udfff", "Fine.")])
    assert index.version == version and index.doc_ids == ["chess.txt"]
