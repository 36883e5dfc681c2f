"""Saves: every damaged save is a typed error at load; a 0.2 save loads; a load overtaken by
saves reads the current version; a reader follows newer saves; HNSW indexes round-trip.

(Several processes and kills: tests/processes/test_shared_directory.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import ConfigError, StoreError
from semrag.index import semantic_index as semantic_index_mod
from semrag.index.storage import persist
from semrag.index.storage import saved as saved_mod
from semrag.index.storage.persist import saved_folder
from semrag.testing import FakeEmbedder

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
    manifest_path = saved_folder(path) / "manifest.json"
    m = json.loads(manifest_path.read_text())
    change(m)
    manifest_path.write_text(json.dumps(m))


def rehash(path: Path, name: str) -> None:
    digest = hashlib.sha256((saved_folder(path) / name).read_bytes()).hexdigest()
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
    damage(saved_folder(tmp_path / "idx"))
    with pytest.raises(error, match=message):
        load(tmp_path / "idx")


def test_a_hand_edited_consistent_looking_save_fails_at_load_not_at_search(tmp_path):
    path = tmp_path / "idx"
    make_index().save(path)
    lines = (saved_folder(path) / "documents.jsonl").read_text().splitlines(keepends=True)
    (saved_folder(path) / "documents.jsonl").write_text(
        "".join(lines[1:])
    )  # one document line dropped
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
    assert (saved_folder(tmp_path / "idx") / "dense.faiss").exists()
    loaded = load(tmp_path / "idx")
    assert [(h.chunk, round(h.score, 5)) for h in loaded.search("dog ball", k=3)] == before
    loaded.add_documents([Document("birds", "Birds sing at dawn. Birds fly south.")])
    assert loaded.search("birds sing", k=1)[0].chunk.doc_id == "birds"


def test_a_save_of_semrag_0_2_loads_and_the_next_save_moves_it(tmp_path):
    path = tmp_path / "idx"
    index = make_index()
    index.save(path)
    for f in saved_folder(path).iterdir():  # the 0.2 layout: the files in the directory
        os.replace(f, path / f.name)
    shutil.rmtree(path / "v1")
    (path / "CURRENT").unlink()
    assert persist.current_generation(path) == 0
    loaded = load(path)
    np.testing.assert_array_equal(loaded.reader().dense.vectors, index.reader().dense.vectors)
    loaded.save(path)
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith(".")) == ["CURRENT", "v1"]
    assert sorted(load(path).doc_ids) == sorted(DOCS)


def test_a_load_whose_version_is_removed_under_it_reads_the_current_one(tmp_path, monkeypatch):
    path = tmp_path / "idx"
    index = make_index()
    index.save(path)
    writer = load(path)
    writer.add_documents([Document("birds", "Birds sing at dawn.")])
    monkeypatch.setattr(persist, "GRACE_S", 0.0)
    monkeypatch.setattr(persist, "KEEP", 1)
    real = saved_mod.restore

    def overtaken(folder, *args, **kwargs):  # a writer publishes and collects mid-load
        if folder.name == "v1":
            writer.save(path)
            assert not folder.exists()
        return real(folder, *args, **kwargs)

    monkeypatch.setattr(semantic_index_mod, "restore", overtaken)
    loaded = load(path)
    assert (loaded.version, sorted(loaded.doc_ids)) == (writer.version, sorted([*DOCS, "birds"]))


def test_a_loaded_index_reports_its_saved_version_and_follows_newer_saves(tmp_path):
    path = tmp_path / "idx"
    writer = make_index()
    writer.save(path)
    reader = load(path)
    assert reader.version == writer.version
    assert reader.refresh() is False
    writer.add_documents([Document("birds", "Birds sing at dawn. Birds fly south.")])
    writer.delete("cats")
    writer.save(path)
    assert persist.current_generation(path) == 2
    assert reader.refresh() is True
    assert sorted(reader.doc_ids) == ["birds", "dogs"]
    assert reader.refresh() is False
    assert [h.chunk.doc_id for h in reader.search("birds sing", k=1)] == ["birds"]
    with pytest.raises(ConfigError, match="never loaded or saved"):
        make_index().refresh()
