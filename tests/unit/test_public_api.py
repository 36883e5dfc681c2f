"""The public surface is pinned: a name enters or leaves a package's ``__all__`` on purpose.

Change a list in ``public_api.json`` together with the CHANGELOG. Everything not listed is
internal, even where its module has no leading underscore yet.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

PUBLIC: dict[str, list[str]] = json.loads(
    (Path(__file__).parent / "public_api.json").read_text(encoding="utf-8")
)
"""Each package's ``__all__``, sorted (a snapshot: change it with the CHANGELOG)."""


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
    with pytest.raises(AttributeError, match="module 'semrag.graph' has no attribute"):
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
    with pytest.raises(
        KeyError, match="chunk 1000000 is not indexed"
    ):  # still a KeyError for callers that catch one
        index.chunk(10**6)


@pytest.mark.parametrize("old", sorted(__import__("semrag._moved")._moved.MOVED))
def test_a_moved_module_imports_by_its_old_path_with_a_warning(old):
    import importlib
    import sys

    from semrag._moved import MOVED

    sys.modules.pop(old, None)
    new = importlib.import_module(MOVED[old])
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    public = [n for n in vars(new) if not n.startswith("_")]
    assert public and all(getattr(module, n) is getattr(new, n) for n in public)
