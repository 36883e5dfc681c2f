"""Deterministic fakes and contract checks, public so other projects can test with them.

* :class:`FakeEmbedder` hashes words into vectors: texts that share words are similar,
  texts that share none are orthogonal. No model, no network, instant.
* :class:`FakeLLM` replays scripted replies and records the prompts it was sent.
* :func:`check_chunker` asserts the invariants every semrag chunker must keep.
* :func:`check_reader` checks the reader contract the retrievers rely on (a third
  party's reader over another database proves itself with it); :func:`check_store`
  checks a knowledge graph's store likewise.
"""

from __future__ import annotations

from semrag.testing.checks import check_chunker, check_chunks
from semrag.testing.fakes import FakeEmbedder, FakeLLM, boundary_model_for
from semrag.testing.readers import ReaderReport, check_reader
from semrag.testing.stores import check_store

__all__ = [
    "FakeEmbedder",
    "FakeLLM",
    "ReaderReport",
    "boundary_model_for",
    "check_chunker",
    "check_chunks",
    "check_reader",
    "check_store",
]
