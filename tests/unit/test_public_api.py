"""The public surface is pinned: a name enters or leaves a package's ``__all__`` on purpose.

Change a list here together with the CHANGELOG. Everything not listed is internal, even
where its module has no leading underscore yet.
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "semrag": [
        "Chunk",
        "ConfigError",
        "Document",
        "DocumentConflictError",
        "GraphRetriever",
        "IntentAwareRetriever",
        "MFCChunker",
        "PSCChunker",
        "SPC",
        "SSGRetriever",
        "ScoredChunk",
        "SemanticChunker",
        "SemanticIndex",
        "SemragError",
        "__version__",
    ],
    "semrag.chunking": [
        "BoundaryChunker",
        "Break",
        "ChunkingResult",
        "ChunkingStats",
        "SemanticChunker",
        "framework_cap_arguments",
        "framework_threshold_arguments",
    ],
    "semrag.chunking.boundary": ["MFCChunker", "PSCChunker", "PairModelChunker", "shipped_weights"],
    "semrag.embeddings": [
        "BaseEmbedder",
        "CacheInfo",
        "CountingEmbedder",
        "Embedder",
        "SentenceTransformerEmbedder",
        "as_embedder",
        "check_embeddings",
    ],
    "semrag.errors": [
        "ConfigError",
        "DocumentConflictError",
        "EmbedderMismatchError",
        "EmbeddingError",
        "LLMError",
        "LLMOutputError",
        "MissingDependencyError",
        "NotFittedError",
        "NotIndexedError",
        "SemragError",
        "StoreError",
        "StoreUnavailableError",
    ],
    "semrag.eval": [
        "EvalDataWarning",
        "EvalQuestion",
        "Excerpt",
        "Generated",
        "MeteredEmbedder",
        "MeteredLLM",
        "ResultTable",
        "Split",
        "Verdict",
        "boundaries_from_offsets",
        "evaluate_retrievers",
        "evaluate_splitters",
        "generate_questions",
        "paired_bootstrap",
        "pk",
        "questions_needed",
        "read_questions",
        "verdict_lines",
        "window_diff",
        "write_questions",
        "write_report",
    ],
    "semrag.graph": [
        "ChunkRef",
        "Community",
        "Entity",
        "Extraction",
        "GraphStore",
        "HeuristicGraphExtractor",
        "InMemoryGraphStore",
        "KnowledgeGraph",
        "LLMGraphExtractor",
        "Mention",
        "Relation",
        "Subgraph",
        "community_reports",
        "detect_communities",
        "merge_extractions",
        "resolve_entities",
    ],
    "semrag.neo4j": ["Neo4jGraphStore", "Neo4jIndex", "Neo4jIndexStore", "Neo4jVectorClient"],
    "semrag.identity": [
        "CHUNK_POSITION_KEYS",
        "ON_CONFLICT",
        "OnConflict",
        "POSITION_KEYS",
        "as_documents",
        "check_on_conflict",
        "chunk_document_id",
        "content_id",
        "document_id",
        "entry_id",
        "explicit_id",
        "source_id",
    ],
    "semrag.index": [
        "BM25Index",
        "DenseIndex",
        "IndexReader",
        "PieceIndex",
        "SSGConfig",
        "SemanticIndex",
        "SemanticSimilarityGraph",
        "bm25_tokenize",
    ],
    "semrag.static_embedder": ["STATIC_MODEL_NAME", "StaticEmbedder", "packaged_static_path"],
    "semrag.llm": ["LLM", "acomplete_json", "complete_json", "extract_json", "validate_json"],
    "semrag.postprocess": [
        "Completeness",
        "Repair",
        "SPC",
        "SPCResult",
        "Signal",
        "assess",
        "best_window",
        "covering_sentences",
        "follow_up_query",
        "key_elements",
        "support_scores",
    ],
    "semrag.retrieval": [
        "ALGORITHMS",
        "CheckResult",
        "CommunityRetriever",
        "GraphRetriever",
        "INTENTS",
        "INTENT_WEIGHTS",
        "IntentAwareRetriever",
        "PPRRetriever",
        "PassageGraph",
        "QueryPlan",
        "RetrieveAndCheck",
        "SSGRetriever",
        "STRATEGIES",
        "SketchRetriever",
        "Traversal",
        "classify_intent",
        "personalized_pagerank",
        "plan_query",
    ],
    "semrag.testing": [
        "FakeEmbedder",
        "FakeLLM",
        "ReaderReport",
        "boundary_model_for",
        "check_chunker",
        "check_chunks",
        "check_reader",
    ],
    "semrag.text": [
        "HuggingFaceTokenizer",
        "LINE_MODES",
        "LengthFunctionTokenizer",
        "SentenceSplitter",
        "Tokenizer",
        "WhitespaceTokenizer",
        "as_tokenizer",
        "is_line_structured",
        "normalize_sentence_spans",
        "split_sentences",
    ],
    "semrag.types": [
        "Chunk",
        "Document",
        "HEADINGS_KEY",
        "MetadataFilter",
        "ScoredChunk",
        "Span",
        "as_filter",
    ],
    "langchain_semrag": [
        "CommunityRetriever",
        "GraphRetriever",
        "IntentAwareRetriever",
        "LangChainEmbedder",
        "LangChainLLM",
        "MFCTextSplitter",
        "PSCTextSplitter",
        "RetrieveAndCheckRetriever",
        "SPCCompressor",
        "SSGRetriever",
        "SemanticTextSplitter",
        "SemanticVectorStore",
        "SemragEmbeddings",
        "SemragLLM",
        "SketchRetriever",
        "VectorStoreClient",
        "__version__",
    ],
    "llama_index_semrag": [
        "CommunityRetriever",
        "GraphRetriever",
        "IntentAwareRetriever",
        "LlamaIndexEmbedder",
        "LlamaIndexLLM",
        "MFCNodeParser",
        "PSCNodeParser",
        "RetrieveAndCheckRetriever",
        "SPCPostprocessor",
        "SSGRetriever",
        "SemanticNodeParser",
        "SemanticVectorStore",
        "SemragEmbedding",
        "SemragLLM",
        "SketchRetriever",
        "VectorStoreClient",
        "__version__",
    ],
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned_and_every_name_resolves(package):
    module = importlib.import_module(package)
    assert sorted(module.__all__) == PUBLIC[package]
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_the_neo4j_names_moved_out_of_graph_still_resolve_with_a_warning():
    import semrag.graph
    import semrag.neo4j

    for name in PUBLIC["semrag.neo4j"]:
        with pytest.warns(DeprecationWarning, match=f"semrag.neo4j.{name}"):
            assert getattr(semrag.graph, name) is getattr(semrag.neo4j, name)
    with pytest.raises(AttributeError):
        semrag.graph.Neo4jNothing  # noqa: B018


def test_the_top_level_is_small():
    assert len(PUBLIC["semrag"]) <= 15


# Raises of builtin errors that stay: the module __getattr__ protocol, the private lock's
# guard against a self-deadlock, and the test helpers' own script check.
ALLOWED_BUILTIN_RAISES = {
    ("semrag/_deps.py", "AttributeError"),
    ("semrag/graph/__init__.py", "AttributeError"),
    ("semrag/index/semantic_index.py", "AttributeError"),  # its __getattr__: moved names
    ("semrag/_rwlock.py", "RuntimeError"),
    ("semrag/testing/fakes.py", "RuntimeError"),
    # an unknown keyword (neither a parameter nor an old spelling of one) is Python's own
    # TypeError, as it is for a signature without **kwargs; a ConfigError (a ValueError too)
    # raised inside a pydantic model's validation would come out as its ValidationError
    ("semrag/_validation.py", "TypeError"),
    # a broken rule of the reader contract is a test failure, as check_chunker's asserts are
    ("semrag/testing/readers.py", "AssertionError"),
}


def test_every_raise_is_a_semrag_error():
    import ast
    import builtins
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = set()
    for package in ("semrag", "langchain_semrag", "llama_index_semrag"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                    name = getattr(node.exc.func, "id", None)
                    if name and isinstance(getattr(builtins, name, None), type):
                        found.add((str(path.relative_to(root)), name))
    assert found - ALLOWED_BUILTIN_RAISES == set()


def test_an_id_the_index_does_not_hold_is_a_typed_key_error():
    from semrag import Document, SemanticIndex
    from semrag.errors import NotIndexedError
    from semrag.testing import FakeEmbedder

    index = SemanticIndex(embedder=FakeEmbedder(), ssg=False)
    index.add_documents([Document("a", "Bees dance.")])
    for read in (index.document, index.chunks, index.reader().sentences, index.reader().indexed):
        with pytest.raises(NotIndexedError, match="'nope' is not indexed"):
            read("nope")
    with pytest.raises(KeyError):  # still a KeyError for callers that catch one
        index.chunk(10**6)


@pytest.mark.parametrize("old", sorted(__import__("semrag.index._moved").index._moved.MOVED))
def test_a_moved_module_imports_by_its_old_path_with_a_warning(old):
    import importlib
    import sys

    from semrag.index._moved import MOVED

    sys.modules.pop(old, None)
    new = importlib.import_module(MOVED[old])
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    public = [n for n in vars(new) if not n.startswith("_")]
    assert public and all(getattr(module, n) is getattr(new, n) for n in public)
