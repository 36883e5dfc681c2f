"""The reader contract as capabilities: declared by protocols, checked at construction.

Retrievers, SPC and the adapters learn what a reader offers from the protocols of
:mod:`semrag.index.reader`, never by probing it with ``getattr``/``hasattr``; a test
counts the probes. :func:`semrag.testing.check_reader` is the contract a third party's
reader proves itself with: it passes on ours and fails, naming the rule, on a broken one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import semrag.index.reader as reader_module
from semrag import SemanticIndex
from semrag.errors import ConfigError
from semrag.index.reader import (
    AsyncReads,
    CorpusReader,
    CorpusSearch,
    HoldsRecords,
    KeptParts,
    MissingCapabilityError,
    PieceReads,
    capabilities,
)
from semrag.retrieval import (
    CommunityRetriever,
    GraphRetriever,
    IntentAwareRetriever,
    PPRRetriever,
    SketchRetriever,
    SSGRetriever,
)
from semrag.testing import FakeEmbedder, check_reader

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ["semrag/retrieval", "semrag/postprocess", "langchain_semrag", "llama_index_semrag"]

# The probes left in those packages, each of an object that is not a reader: a framework's
# object whose class declares no such member. (module, attribute) -> why.
NOT_READERS = {
    ("langchain_semrag/embeddings.py", "model_name"): "a LangChain Embeddings' model field",
    ("langchain_semrag/embeddings.py", "model"): "a LangChain Embeddings' model field",
    ("llama_index_semrag/embeddings.py", "<dynamic>"): "which async methods a class overrides",
    ("llama_index_semrag/vector_stores.py", "protocol"): "an fsspec filesystem's protocol",
}

DOCS = [
    "Ada Lovelace was born in London. She wrote the first program for the Analytical Engine.",
    "The Analytical Engine was designed by Charles Babbage. Babbage lived in London.",
    "Bees dance to tell the hive where flowers are. The waggle dance points to food.",
    "London is the capital of England. The Thames flows through London.",
]
QUERIES = ["Who designed the Analytical Engine?", "How do bees find flowers?"]


def _probes() -> list[tuple[str, str, int]]:
    found = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr")
                ):
                    arg = node.args[1] if len(node.args) > 1 else None
                    name = arg.value if isinstance(arg, ast.Constant) else "<dynamic>"
                    found.append((str(path.relative_to(ROOT)), name, node.lineno))
    return found


def test_no_reader_is_probed_in_retrieval_postprocess_or_the_adapters():
    probes = _probes()
    unexplained = [p for p in probes if (p[0], p[1]) not in NOT_READERS]
    assert unexplained == [], f"probes with getattr/hasattr (declare a protocol): {unexplained}"
    still_there = {(p[0], p[1]) for p in probes}
    assert set(NOT_READERS) <= still_there, "an explained probe is gone: drop it from the list"
    assert len(probes) <= 5


def _index(**kwargs) -> SemanticIndex:
    index = SemanticIndex(embedder=FakeEmbedder(dim=64), **kwargs)
    index.add_documents(DOCS)
    return index


def test_the_embedded_index_offers_every_capability_but_async_reads():
    reader = _index().reader()
    offered = set(capabilities(reader))
    assert isinstance(reader, CorpusReader)
    assert {CorpusSearch, KeptParts, HoldsRecords, PieceReads} <= offered
    assert AsyncReads not in offered


class _Narrow:
    """A reader that forwards only some members of an embedded index (a third party's)."""

    def __init__(self, index: SemanticIndex, drop: tuple[str, ...] = ()) -> None:
        self._index = index.reader()
        self._drop = drop
        self.embedder = index.embedder
        self.tokenizer = index.reader().tokenizer
        self.ssg_config = index.reader().ssg_config

    def current_version(self):
        return self._index.current_version()

    def read(self, *, followers=False):
        return self._index.read()

    @property
    def doc_ids(self):
        return self._index.doc_ids


_FORWARDED = (
    "documents chunks_of vectors_of sentence_vectors_of overlapping_chunks_many dense_search "
    "search_channels sparse_scores_many ssg_view"
).split()


def _narrow(index: SemanticIndex, *drop: str) -> _Narrow:
    """A reader class with the forwarded members but ``drop``."""
    members = {
        name: (lambda n: lambda self, *a, **kw: getattr(self._index, n)(*a, **kw))(name)
        for name in _FORWARDED
        if name not in drop
    }
    cls = type("ThirdPartyReader", (_Narrow,), members)
    return cls(index)


def test_a_retriever_names_the_capability_a_reader_lacks_at_construction():
    index = _index()
    reader = _narrow(index, "sparse_scores_many")
    with pytest.raises(MissingCapabilityError, match="CorpusSearch.*sparse_scores_many") as err:
        IntentAwareRetriever(reader)
    assert err.value.capability is CorpusSearch and err.value.members == ("sparse_scores_many",)
    assert isinstance(err.value, ConfigError)
    with pytest.raises(MissingCapabilityError, match="CorpusSearch.*sparse_scores_many"):
        PPRRetriever(reader)
    with pytest.raises(MissingCapabilityError, match="CorpusReader.*chunks_of"):
        PPRRetriever(_narrow(index, "chunks_of"))
    # community search and the SSG walk search no chunks: they need no CorpusSearch
    from semrag.graph import KnowledgeGraph

    assert CommunityRetriever(reader, KnowledgeGraph.build(index)).index is reader
    with pytest.raises(MissingCapabilityError, match="SimilarityGraphReads.*ssg_view"):
        SSGRetriever(_narrow(_index(ssg=True), "ssg_view"))
    assert SSGRetriever(_narrow(_index(ssg=True), "sparse_scores_many")).retrieve(QUERIES[1])


def test_ppr_over_a_reader_without_records_or_kept_phrases_fails_when_built():
    reader = _narrow(_index())  # every CorpusReader member: no records, no parts
    with pytest.raises(MissingCapabilityError, match="HoldsRecords.*passages=True") as err:
        GraphRetriever(reader)
    assert err.value.capability is HoldsRecords
    # IAR's automatic extended channel is then none, said by the protocols, not a probe
    assert IntentAwareRetriever(reader).extended is None
    assert isinstance(IntentAwareRetriever(_index()).extended, PPRRetriever)


def test_sketch_needs_the_piece_reads_and_says_so():
    from semrag.graph import KnowledgeGraph

    index = _index()
    graph = KnowledgeGraph.build(index)
    reader = _narrow(index)
    with pytest.raises(MissingCapabilityError, match="PieceReads"):
        SketchRetriever(reader, graph)


def test_the_async_path_follows_the_async_reads_capability():
    import asyncio

    index = _index()
    reader = _narrow(index)
    iar = IntentAwareRetriever(reader, extended=None)
    assert [h.chunk.text for h in asyncio.run(iar.aretrieve(QUERIES[0]))] == [
        h.chunk.text for h in iar.retrieve(QUERIES[0])
    ]


def test_check_reader_passes_on_the_embedded_index_and_reports_what_it_offers():
    index = _index(ssg=True)
    report = check_reader(index, queries=QUERIES, reference=_index(ssg=True))
    assert "HoldsRecords" in report.capabilities and "AsyncReads" not in report.capabilities
    assert report.documents == len(DOCS) and report.queries == len(QUERIES)
    assert "a dense score is the cosine of the query and the chunk's vector" in report.checks
    assert "IndexReader" in str(report)


def test_check_reader_passes_on_a_third_party_reader_with_only_the_contract():
    index = _index()
    report = check_reader(_narrow(index), queries=QUERIES, reference=index)
    want = {"CorpusReader", "CorpusSearch", "SimilarityGraphReads"}
    assert set(report.capabilities) == want


@pytest.mark.parametrize(
    ("member", "broken", "rule"),
    [
        (
            "dense_search",
            lambda r, v, k: tuple(a[::-1] for a in r._index.dense_search(v, k)),
            "dense scores descend",
        ),
        (
            "chunks_of",
            lambda r, ids: [
                c.__class__(c.doc_id, c.start, c.end, c.text + "!", 0)
                for c in r._index.chunks_of(ids)
            ],
            "a chunk's text is its span of the document",
        ),
        (
            "vectors_of",
            lambda r, ids: np.asarray(r._index.vectors_of(ids)) * 2,
            "unit length",
        ),
        (
            "sparse_scores_many",
            lambda r, qs, ids: np.asarray(r._index.sparse_scores_many(qs, ids)) + 1.0,
            "sparse_scores_many gives the BM25 hits' scores",
        ),
    ],
)
def test_check_reader_fails_naming_the_rule_a_reader_breaks(member, broken, rule):
    reader = _narrow(_index())
    setattr(type(reader), member, broken)
    with pytest.raises(AssertionError, match=rule):
        check_reader(reader, queries=QUERIES)


def test_check_reader_refuses_a_reader_without_the_contract():
    with pytest.raises(MissingCapabilityError, match="CorpusReader"):
        check_reader(object(), queries=QUERIES)
    with pytest.raises(ConfigError, match="at least one query"):
        check_reader(_index(), queries=[])


def _members(protocol: type) -> dict[str, list[str]]:
    """A protocol's members (its own and inherited) and the annotations each declares."""
    found: dict[str, list[str]] = {}
    for cls in protocol.__mro__:
        if cls.__module__ != reader_module.__name__:
            continue
        for name, value in vars(cls).items():
            if name.startswith("_") and name not in ("__len__", "__contains__", "__getitem__"):
                continue
            fn = value.fget if isinstance(value, property) else value
            notes = list(getattr(fn, "__annotations__", {}).values())
            found.setdefault(name, notes)
        for name, note in vars(cls).get("__annotations__", {}).items():
            found.setdefault(name, [note])
    return found


def test_every_reader_protocol_is_small_and_typed():
    protocols = [
        c
        for c in vars(reader_module).values()
        if isinstance(c, type)
        and c.__module__ == reader_module.__name__
        and getattr(c, "_is_protocol", False)
    ]
    assert CorpusReader in protocols and len(protocols) >= 8
    for protocol in protocols:
        members = _members(protocol)
        assert 0 < len(members) <= 10, (protocol.__name__, sorted(members))
        untyped = {n for n, a in members.items() if any("Any" in str(x) for x in a)}
        assert untyped == set(), (protocol.__name__, untyped)
