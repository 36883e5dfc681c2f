"""Progress bars: on a terminal by default, never in CI, and what the caller says."""

from __future__ import annotations

import io
import sys

import pytest

from semrag import Document, SemanticIndex
from semrag._progress import wanted
from semrag.testing import FakeEmbedder


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_default_shows_a_bar_on_a_terminal_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("SEMRAG_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert wanted(None) is True
    assert wanted(False) is False
    monkeypatch.setenv("SEMRAG_PROGRESS", "0")
    assert wanted(None) is False
    monkeypatch.delenv("SEMRAG_PROGRESS")
    monkeypatch.setenv("CI", "true")
    assert wanted(None) is False and wanted(True) is True
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log file, not a terminal
    assert wanted(None) is False


@pytest.mark.parametrize(("show", "shown"), [(True, True), (None, False), (False, False)])
def test_an_index_build_shows_its_bar_when_asked(monkeypatch, show, shown):
    monkeypatch.delenv("CI", raising=False)
    err = io.StringIO()  # not a terminal: the default stays quiet
    monkeypatch.setattr(sys, "stderr", err)
    index = SemanticIndex(embedder=FakeEmbedder(), show_progress=show)
    assert index.show_progress is show
    index.add_documents([Document(f"d{i}", f"Bees dance number {i}.") for i in range(3)])
    assert ("Indexing" in err.getvalue()) is shown
