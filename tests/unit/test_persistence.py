"""Saves: every damaged save is a typed error at load; a kill at any step of a save leaves
the old or the new save, and load finds it; HNSW indexes round-trip."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import ConfigError, StoreError
from semrag.testing import FakeEmbedder

STEPS = ["files_written", "manifest_written", "old_moved_aside", "new_moved_in", "cleaned"]
DOCS = {
    "cats": "The cat sat on the mat. The cat chased a mouse.",
    "dogs": "The dog barked at the mailman. The dog chased a ball.",
}


def make_index(dense: str = "flat") -> SemanticIndex:
    emb = FakeEmbedder()
    index = SemanticIndex(
        embedder=emb, chunker=SemanticChunker(emb, buffer_size=0, threshold=0.9), dense=dense
    )
    index.add_documents([Document(k, v) for k, v in DOCS.items()])
    return index


def load(path: Path) -> SemanticIndex:
    return SemanticIndex.load(path, embedder=FakeEmbedder())


def edit_manifest(path: Path, change) -> None:
    manifest_path = path / "manifest.json"
    m = json.loads(manifest_path.read_text())
    change(m)
    manifest_path.write_text(json.dumps(m))


def rehash(path: Path, name: str) -> None:
    digest = hashlib.sha256((path / name).read_bytes()).hexdigest()
    edit_manifest(path, lambda m: m["files"].__setitem__(name, digest))


@pytest.mark.parametrize(
    ("damage", "error", "message"),
    [
        (lambda p: (p / "manifest.json").write_text(""), StoreError, "not valid JSON"),
        (lambda p: (p / "manifest.json").write_text("[1, 2]"), StoreError, "not a JSON object"),
        (lambda p: edit_manifest(p, lambda m: m.pop("files")), StoreError, "lists no files"),
        (
            lambda p: edit_manifest(p, lambda m: m.__setitem__("format_version", 0)),
            StoreError,
            "format_version 0",
        ),
        (
            lambda p: edit_manifest(p, lambda m: m.__setitem__("format_version", "1")),
            StoreError,
            "format_version '1'",
        ),
        (lambda p: (p / "manifest.json").unlink(), StoreError, "no manifest.json"),
        (lambda p: (p / "dense_ids.npy").write_bytes(b"\x93NUMPY"), StoreError, "corrupt"),
    ],
)
def test_a_damaged_manifest_or_file_is_a_typed_error(tmp_path, damage, error, message):
    make_index().save(tmp_path / "idx")
    damage(tmp_path / "idx")
    with pytest.raises(error, match=message):
        load(tmp_path / "idx")


def test_a_hand_edited_consistent_looking_save_fails_at_load_not_at_search(tmp_path):
    path = tmp_path / "idx"
    make_index().save(path)
    lines = (path / "documents.jsonl").read_text().splitlines(keepends=True)
    (path / "documents.jsonl").write_text("".join(lines[1:]))  # one document line dropped
    rehash(path, "documents.jsonl")  # and the checksum fixed up by hand
    with pytest.raises(StoreError, match="consistent index"):
        load(path)


def test_a_newer_format_asks_for_an_upgrade(tmp_path):
    make_index().save(tmp_path / "idx")
    edit_manifest(tmp_path / "idx", lambda m: m.__setitem__("format_version", 99))
    with pytest.raises(ConfigError, match="upgrade"):
        load(tmp_path / "idx")


def test_hnsw_index_round_trips(tmp_path):
    index = make_index(dense="hnsw")
    before = [(h.chunk, round(h.score, 5)) for h in index.search("dog ball", k=3)]
    index.save(tmp_path / "idx")
    assert (tmp_path / "idx" / "dense.faiss").exists()
    loaded = load(tmp_path / "idx")
    assert [(h.chunk, round(h.score, 5)) for h in loaded.search("dog ball", k=3)] == before
    loaded.add_documents([Document("birds", "Birds sing at dawn. Birds fly south.")])
    assert loaded.search("birds sing", k=1)[0].chunk.doc_id == "birds"


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from semrag import Document, SemanticChunker, SemanticIndex
    from semrag.index.storage import persist
    from semrag.testing import FakeEmbedder

    path, step = sys.argv[1], sys.argv[2]
    emb = FakeEmbedder()
    index = SemanticIndex.load(path, embedder=emb)
    index.add_documents([Document("birds", "Birds sing at dawn. Birds fly south.")])

    def die(name):
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    persist._step = die
    index.save(path)
    """
)


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_of_save_leaves_a_loadable_save(tmp_path, step):
    path = tmp_path / "idx"
    make_index().save(path)
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(path), step],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    loaded = load(path)
    old, new = sorted(DOCS), sorted([*DOCS, "birds"])
    assert sorted(loaded.doc_ids) in (old, new)
    if STEPS.index(step) >= STEPS.index("old_moved_aside"):
        assert sorted(loaded.doc_ids) == new  # the new save was complete: it wins
    else:
        assert sorted(loaded.doc_ids) == old
    assert [h.chunk.doc_id for h in loaded.search("cat mouse", k=1)] == ["cats"]
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith(".idx")]
    assert leftovers == [], "load must clean up a dead writer's leftovers"


def test_leftovers_of_a_running_writer_are_left_alone(tmp_path):
    path = tmp_path / "idx"
    make_index().save(path)
    busy = tmp_path / f".idx.tmp-{os.getpid()}-inprogress"
    busy.mkdir()
    load(path)
    assert busy.exists()


def test_vectors_survive_a_recovered_save(tmp_path):
    path = tmp_path / "idx"
    index = make_index()
    index.save(path)
    os.replace(path, tmp_path / ".idx.old-999999999-x")  # as if killed between the renames
    loaded = load(path)
    np.testing.assert_array_equal(loaded.reader().dense.vectors, index.reader().dense.vectors)
