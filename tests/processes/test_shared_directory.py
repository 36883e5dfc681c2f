"""Several processes, one saved directory (real processes, not threads).

Loads that overlap saves each get one whole saved version, at the version and generation
it was saved at; a kill at any step of a save leaves concurrent loaders the old or the new
version; two writers never lose each other's changes; only semrag's errors escape.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import SaveConflictError
from semrag.index.storage.persist import current_generation
from semrag.testing import FakeEmbedder

WORKERS = str(Path(__file__).with_name("save_workers.py"))
STEPS = ["files_written", "manifest_written", "folder_moved_in", "published", "cleaned"]
BASE = {
    "cats": "The cat sat on the mat. The cat chased a mouse.",
    "dogs": "The dog barked at the mailman. The dog chased a ball.",
}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}


def saved_base(path: Path) -> SemanticIndex:
    emb = FakeEmbedder()
    index = SemanticIndex(embedder=emb, chunker=SemanticChunker(emb, buffer_size=0, threshold=0.9))
    index.add_documents([Document(k, v) for k, v in BASE.items()])
    index.save(path)
    return index


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, WORKERS, *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def finish(proc: subprocess.Popen, timeout: float = 240) -> int:
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()
    return proc.returncode


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_loads_that_overlap_saves_each_get_one_saved_version(tmp_path):
    directory, stop = tmp_path / "idx", tmp_path / "stop"
    base = saved_base(directory)
    saved = {base.version: {"version": base.version, "docs": sorted(BASE)}}
    loaders = [
        start("loader", str(directory), str(stop), str(tmp_path / f"l{i}")) for i in range(3)
    ]
    writer = start("writer", str(directory), "30", str(tmp_path / "w"))
    finish(writer)
    stop.touch()
    for proc in loaders:
        finish(proc)
    saved.update((r["version"], r) for r in records(tmp_path / "w"))
    assert len(saved) == 31
    loads = [r for i in range(3) for r in records(tmp_path / f"l{i}")]
    assert [r for r in loads if "error" in r] == []
    assert len(loads) >= 20
    for got in loads:
        assert got == saved[got["version"]], "a load must be one saved version, as saved"
    assert len({r["version"] for r in loads}) > 2, "the loads overlapped no saves"


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_leaves_concurrent_loaders_the_old_or_the_new_version(tmp_path, step):
    directory = tmp_path / "idx"
    saved_base(directory)
    assert finish(start("killed", str(directory), step)) == -signal.SIGKILL
    bursts = [start("burst", str(directory), "5", str(tmp_path / f"b{i}")) for i in range(4)]
    for proc in bursts:
        finish(proc)
    loads = [r for i in range(4) for r in records(tmp_path / f"b{i}")]
    assert len(loads) == 20
    assert [r for r in loads if "error" in r] == []
    new = STEPS.index(step) >= STEPS.index("published")
    expected = sorted([*BASE, "birds"]) if new else sorted(BASE)
    assert {tuple(r["docs"]) for r in loads} == {tuple(expected)}
    # the next save removes what the killed writer left
    index = SemanticIndex.load(directory, embedder=FakeEmbedder())
    index.save(directory)
    names = sorted(p.name for p in directory.iterdir())
    assert [n for n in names if n.startswith(".tmp-")] == []
    published = current_generation(directory)
    assert f"v{published}" in names
    assert all(int(n[1:]) <= published for n in names if n.startswith("v"))


def test_two_writers_never_lose_each_others_changes(tmp_path):
    directory = tmp_path / "idx"
    saved_base(directory)
    rounds = 8
    racers = [start("racer", str(directory), str(rounds), str(tmp_path / n), n) for n in "ab"]
    for proc in racers:
        finish(proc)
    final = SemanticIndex.load(directory, embedder=FakeEmbedder())
    expected = set(BASE)
    for name in "ab":
        assert len(records(tmp_path / name)) == rounds  # every round's save returned
        for i in range(rounds):
            if i % 3 == 2:
                expected.discard(f"{name}-{i - 2}")
            else:
                expected.add(f"{name}-{i}")
    assert sorted(final.doc_ids) == sorted(expected)


def test_a_save_over_a_version_it_never_saw_is_refused(tmp_path):
    directory = tmp_path / "idx"
    first = saved_base(directory)
    second = SemanticIndex.load(directory, embedder=FakeEmbedder())
    second.add_documents([Document("owls", "Owls hunt at night.")])
    second.save(directory)
    first.add_documents([Document("bees", "Bees dance.")])
    with pytest.raises(SaveConflictError, match="another writer saved meanwhile") as info:
        first.save(directory)
    assert (info.value.current, info.value.base) == (2, 1)
    assert "owls" in SemanticIndex.load(directory, embedder=FakeEmbedder())
    other = saved_base(tmp_path / "other")  # a new index over a saved directory: refused too
    with pytest.raises(SaveConflictError, match="based on no save"):
        other.save(directory)
    first.save(directory, overwrite=True)
    assert sorted(SemanticIndex.load(directory, embedder=FakeEmbedder()).doc_ids) == sorted(
        [*BASE, "bees"]
    )
