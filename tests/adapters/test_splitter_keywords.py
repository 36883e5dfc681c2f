"""The frameworks' standard splitter keywords, with their meaning, on every semrag splitter."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument

from langchain_semrag import MFCTextSplitter, PSCTextSplitter, SemanticTextSplitter
from llama_index_semrag import MFCNodeParser, PSCNodeParser, SemanticNodeParser
from semrag.chunking import framework_cap_arguments
from semrag.errors import ConfigError
from semrag.testing import FakeEmbedder, boundary_model_for

# 384 dimensions: the shipped PSC / MFC weights are for MiniLM-sized vectors; with a fake
# embedder they are passed as ``boundary_model_for`` declares them (the pipeline is tested).


def with_model(cls, emb):
    preset = getattr(cls, "preset", "")
    return {"model": boundary_model_for(emb, preset)} if preset else {}


TEXT = " ".join(
    f"Sentence number {i} talks about {'bees and honey' if i < 12 else 'rockets and fuel'}."
    for i in range(24)
)
# the trained models need torch: the index extra (`.ci/light-check` runs without it)
LC_SPLITTERS = [
    SemanticTextSplitter,
    pytest.param(PSCTextSplitter, marks=pytest.mark.index),
    pytest.param(MFCTextSplitter, marks=pytest.mark.index),
]
LI_PARSERS = [
    SemanticNodeParser,
    pytest.param(PSCNodeParser, marks=pytest.mark.index),
    pytest.param(MFCNodeParser, marks=pytest.mark.index),
]


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("cls", LC_SPLITTERS)
@pytest.mark.parametrize(("chunk_size", "length_function"), [(120, None), (15, words)])
def test_langchain_chunk_size_caps_in_the_users_units(cls, chunk_size, length_function):
    kwargs = {"length_function": length_function} if length_function else {}
    measure = length_function or len
    emb = FakeEmbedder(dim=384)
    kwargs.update(with_model(cls, emb))
    splitter = cls(emb, chunk_size=chunk_size, chunk_overlap=chunk_size // 5, **kwargs)
    assert splitter._chunk_size == chunk_size  # the base class sees the same numbers
    docs = splitter.create_documents([TEXT])
    assert len(docs) > 1
    for d in docs:
        assert measure(d.page_content) <= chunk_size
        assert TEXT[d.metadata["start_index"] : d.metadata["end_index"]] == d.page_content
        assert d.metadata["semrag_token_count"] == measure(d.page_content)


@pytest.mark.index
def test_langchain_from_huggingface_tokenizer_measures_in_word_pieces(minilm):
    from transformers import AutoTokenizer

    from semrag.embeddings import packaged_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(packaged_model_path()))
    splitter = SemanticTextSplitter.from_huggingface_tokenizer(
        tokenizer, embeddings=FakeEmbedder(dim=384), chunk_size=20, chunk_overlap=4
    )
    docs = splitter.create_documents([TEXT])
    assert len(docs) > 1
    assert all(len(tokenizer.encode(d.page_content, add_special_tokens=False)) <= 20 for d in docs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 100, "max_tokens": 50}, "chunk_size and max_tokens"),
        ({"chunk_size": 100, "chunk_overlap": 10, "overlap_tokens": 5}, "chunk_overlap and"),
        ({"length_function": len}, "give chunk_size too"),
        ({"chunk_overlap": 20}, "give chunk_size too"),
        ({"chunk_size": 100, "length_function": len, "tokenizer": len}, "both measure"),
        ({"strip_whitespace": False}, "strip_whitespace=False does not apply"),
        ({"keep_separator": "start"}, "keep_separator='start' does not apply"),
        ({"keep_separator": True}, "keep_separator=True does not apply"),
        ({"chunk_size": 100, "chunk_overlap": 100}, "overlap_tokens must be in"),
        ({"embedder": FakeEmbedder(dim=384)}, "takes its model as embeddings="),
        ({"min_chunk_size": 50}, "min_chunk_size is measured like chunk_size"),
        ({"chunk_size": 300, "min_chunk_size": 50, "min_tokens": 5}, "min_chunk_size and min_"),
        ({"sentence_split_regex": "x", "sentence_splitter": str.split}, "both split sentences"),
    ],
)
def test_langchain_keywords_that_conflict_or_do_not_apply_raise(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SemanticTextSplitter(FakeEmbedder(dim=384), **kwargs)


def test_langchain_accepted_base_options_and_positional_embeddings():
    splitter = SemanticTextSplitter(
        FakeEmbedder(dim=384), add_start_index=False, keep_separator="end", strip_whitespace=True
    )
    docs = splitter.split_documents([Document(page_content=TEXT, metadata={"source": "s"})])
    # Offsets are always there: SPC and the indexes read them.
    assert all("start_index" in d.metadata and d.metadata["source"] == "s" for d in docs)


def test_langchain_create_documents_rejects_a_bare_string_and_short_metadatas():
    splitter = SemanticTextSplitter(FakeEmbedder(dim=384))
    with pytest.raises(TypeError, match="list of texts"):
        splitter.create_documents(TEXT)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="1 entries for 2 texts"):
        splitter.create_documents([TEXT, TEXT], metadatas=[{"a": 1}])


@pytest.mark.parametrize("cls", LI_PARSERS)
def test_llama_index_chunk_size_in_tokens_of_the_given_tokenizer(cls):
    emb = FakeEmbedder(dim=384)
    parser = cls(emb, chunk_size=15, chunk_overlap=3, tokenizer=str.split, **with_model(cls, emb))
    assert (parser.chunk_size, parser.chunk_overlap) == (15, 3)
    nodes = parser.get_nodes_from_documents([LIDocument(text=TEXT)])
    assert len(nodes) > 1
    for n in nodes:
        assert len(n.text.split()) <= 15
        assert TEXT[n.start_char_idx : n.end_char_idx] == n.text


def test_llama_index_options_that_do_not_apply_raise():
    for name in ("separator", "paragraph_separator", "secondary_chunking_regex"):
        with pytest.raises(ConfigError, match=f"{name} does not apply"):
            SemanticNodeParser(FakeEmbedder(dim=384), **{name: " "})
    with pytest.raises(ConfigError, match="chunk_size and max_tokens"):
        SemanticNodeParser(FakeEmbedder(dim=384), chunk_size=64, max_tokens=32)


def test_llama_index_base_options_are_honoured():
    parser = SemanticNodeParser(
        FakeEmbedder(dim=384),
        include_prev_next_rel=False,
        id_func=lambda i, doc: f"{doc.node_id}-part-{i}",
    )
    nodes = parser.get_nodes_from_documents([LIDocument(text=TEXT, id_="doc")])
    assert [n.node_id for n in nodes][:1] == ["doc-part-0"]
    assert all(len(n.relationships) == 1 for n in nodes)  # SOURCE only


def test_framework_cap_arguments_without_chunk_size_leaves_the_core_defaults():
    assert framework_cap_arguments({"buffer_size": 2}) == {"buffer_size": 2}
    args = framework_cap_arguments({}, chunk_size=64, chunk_overlap=8)
    assert args == {"max_tokens": 64, "overlap_tokens": 8}


@pytest.mark.index  # langchain-experimental, a dev peer
def test_langchain_semantic_chunker_keywords_swap_with_their_defaults():
    import warnings

    from langchain_core.embeddings import DeterministicFakeEmbedding

    with warnings.catch_warnings():  # the package announces its own sunset on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_experimental.text_splitter import SemanticChunker as LCSemanticChunker

    for cls in (LCSemanticChunker, SemanticTextSplitter):  # only the class name changes
        splitter = cls(
            DeterministicFakeEmbedding(size=32),
            breakpoint_threshold_type="standard_deviation",
            sentence_split_regex=r"(?<=[.?!])\s+",
        )
        assert splitter.create_documents([TEXT])
    by_regex = SemanticTextSplitter(FakeEmbedder(dim=384), sentence_split_regex=r"(?<=\d) ")
    sentences = [s.of(TEXT) for s in by_regex.chunker.sentences(TEXT)]
    assert sentences[:2] == ["Sentence number 0", "talks about bees and honey. Sentence number 1"]
    assert len(sentences) == 25 and " ".join(sentences) == TEXT  # cut at each match only
    sized = SemanticTextSplitter(FakeEmbedder(dim=384), chunk_size=400, min_chunk_size=150)
    assert sized.chunker.min_tokens == 150  # characters, as chunk_size: length_function=len
    assert all(len(d.page_content) >= 150 for d in sized.create_documents([TEXT]))
    ours = SemanticTextSplitter(FakeEmbedder(dim=384), breakpoint_threshold_type="interquartile")
    assert (ours.chunker.threshold, ours.chunker.threshold_amount) == ("interquartile", 1.5)
    ours = SemanticTextSplitter(FakeEmbedder(dim=384), number_of_chunks=3)
    assert len(ours.create_documents([TEXT])) == 3
    with pytest.raises(ConfigError, match="same break rule"):
        SemanticTextSplitter(FakeEmbedder(dim=384), number_of_chunks=3, threshold="std")
    with pytest.raises(ConfigError, match="breakpoint_threshold_type='median'"):
        SemanticTextSplitter(FakeEmbedder(dim=384), breakpoint_threshold_type="median")


def test_llama_index_semantic_splitter_keywords_swap():
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    for cls in (SemanticSplitterNodeParser, SemanticNodeParser):  # only the class name changes
        parser = cls(
            buffer_size=1,
            breakpoint_percentile_threshold=90,
            embed_model=MockEmbedding(embed_dim=8),
        )
        assert parser.get_nodes_from_documents([LIDocument(text=TEXT)])
    ours = SemanticNodeParser(embed_model=FakeEmbedder(dim=384), breakpoint_percentile_threshold=90)
    assert (ours.chunker.threshold, ours.chunker.threshold_amount) == ("percentile", 90)
    for cls in (SemanticSplitterNodeParser, SemanticNodeParser):  # its sentence_splitter: strings
        parser = cls.from_defaults(
            embed_model=MockEmbedding(embed_dim=8) if cls is SemanticSplitterNodeParser else None,
            sentence_splitter=lambda text: text.split(". "),
        )
        assert parser.get_nodes_from_documents([LIDocument(text=TEXT)])
    pieces = SemanticNodeParser(sentence_splitter=lambda text: text.split(". "))
    got = [s.of(TEXT) for s in pieces.chunker.sentences(TEXT)]
    assert got[0] == "Sentence number 0 talks about bees and honey." and len(got) == 24
