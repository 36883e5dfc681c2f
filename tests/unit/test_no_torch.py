"""Splitting never imports torch, sentence-transformers or FAISS, even where they are installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

SPLIT = r"""
import sys
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument

import semrag
from langchain_semrag import SemanticTextSplitter
from llama_index_semrag import SemanticNodeParser

text = "Honey bees dance to show where flowers grow.\n\nRockets burn fuel to reach orbit."
assert SemanticTextSplitter().split_documents([Document(text)])
assert SemanticNodeParser().get_nodes_from_documents([LIDocument(text=text)])
assert semrag.SemanticChunker().chunk(text)
heavy = {m.split(".")[0] for m in sys.modules} & {"torch", "sentence_transformers", "faiss"}
print(sorted(heavy))
"""


def test_splitting_with_both_frameworks_imports_no_torch():
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    done = subprocess.run(
        [sys.executable, "-c", SPLIT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_index_without_its_extra_names_the_extra(monkeypatch, tmp_path):
    """Where an index package is missing, the error is typed and says what to install."""
    from semrag._deps import import_part
    from semrag.errors import MissingDependencyError

    (tmp_path / "semrag_needs_scipy.py").write_text("import scipy\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "scipy", None)  # as if scipy were not installed
    with pytest.raises(MissingDependencyError, match=r"semrag\[index\]"):
        import_part("semrag_needs_scipy")
