"""A Neo4j writer process and this serving process: typed errors only, no stale text.

The writer (tests/processes/neo4j_writer.py) adds, replaces and deletes documents while
this process serves ``GraphRetriever`` over ``Neo4jIndex``: every read returns text of a
version committed no earlier than the last commit before the read began (a replaced
text never comes back, a deleted document never comes back after its delete), and any
error is one of semrag's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from semrag.errors import SemragError
from semrag.retrieval import GraphRetriever
from semrag.testing import FakeEmbedder

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.enable_socket]

WRITER = Path(__file__).resolve().parents[1] / "processes" / "neo4j_writer.py"
QUERIES = ["Which river reaches the sea?", "What do cats chase?", "Note about cats"]


def test_serving_while_a_writer_process_commits(neo4j_server, graph_store, tmp_path):
    from semrag.neo4j import Neo4jIndex

    log, ready = tmp_path / "commits.jsonl", tmp_path / "ready"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    args = [neo4j_server.uri, neo4j_server.user, neo4j_server.password, "30", str(log)]
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), *args, str(ready)], env=env, stderr=subprocess.PIPE
    )
    while not ready.exists():
        assert writer.poll() is None, writer.stderr.read().decode()
        time.sleep(0.05)
    reader = Neo4jIndex(graph_store, embedder=FakeEmbedder())
    retriever = GraphRetriever(reader, k=5)
    reads, typed = [], []
    while writer.poll() is None:
        began = time.time()
        try:
            hits = retriever.retrieve(QUERIES[len(reads) % len(QUERIES)])
        except SemragError as exc:
            typed.append(f"{type(exc).__name__}: {exc}")
            continue
        reads.append((began, [(h.chunk.doc_id, h.chunk.text) for h in hits]))
    err = writer.communicate(timeout=60)[1].decode()  # closes the pipe
    assert writer.returncode == 0, err
    commits = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(commits) == 30 and len(reads) >= 10
    for began, hits in reads:
        before = [c for c in commits if c["time"] < began]
        if not before:
            continue
        last = before[-1]
        for doc_id, text in hits:
            if doc_id == "r" and "version" in text:
                version = int(text.split("version ")[1].split(".")[0])
                assert version >= last["r"], "a replaced text came back after its commit"
            deleted = {d for c in before for d in c["docs"]} - set(last["docs"])
            assert doc_id not in deleted, f"{doc_id} came back after its delete"
    assert len(typed) <= len(reads) // 10, typed  # a rare StoreError, never a raw error
