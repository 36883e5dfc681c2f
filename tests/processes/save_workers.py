"""Processes that share one saved index directory (run by test_shared_directory.py).

``python save_workers.py writer D N LOG``: N rounds of (add or delete one document, save);
each successful save appends ``{"generation", "version", "docs"}`` to LOG.
``python save_workers.py loader D STOP LOG``: load D until the file STOP exists; each
load appends what it got, or ``{"error": type, "message"}``.
``python save_workers.py burst D N LOG``: load D N times at once with other bursts.
``python save_workers.py killed D STEP``: load D, add a document and save, killing itself
at the save's STEP.
``python save_workers.py racer D N LOG NAME``: like writer, but a refused save
(``SaveConflictError``) reloads D, applies the change again and saves again.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from semrag import Document, SemanticChunker, SemanticIndex
from semrag.errors import SaveConflictError, SemragError
from semrag.testing import FakeEmbedder

EMBEDDER = FakeEmbedder()


def new_index() -> SemanticIndex:
    chunker = SemanticChunker(EMBEDDER, buffer_size=0, threshold=0.9)
    return SemanticIndex(embedder=EMBEDDER, chunker=chunker)


def load(directory: str) -> SemanticIndex:
    return SemanticIndex.load(directory, embedder=EMBEDDER)


def state(index: SemanticIndex) -> dict:
    return {"version": index.version, "docs": sorted(index.doc_ids)}


def log(path: str, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def change(index: SemanticIndex, name: str, i: int) -> None:
    if i % 3 == 2:  # every third round deletes the document added two rounds before
        index.delete([f"{name}-{i - 2}"])
    else:
        index.add_documents([Document(f"{name}-{i}", f"{name} wrote note {i}. It is round {i}.")])


def writer(directory: str, rounds: int, out: str) -> None:
    index = load(directory)
    for i in range(rounds):
        change(index, "w", i)
        index.save(directory)
        log(out, state(index))


def racer(directory: str, rounds: int, out: str, name: str) -> None:
    index = load(directory)
    for i in range(rounds):
        while True:
            change(index, name, i)
            try:
                index.save(directory)
                break
            except SaveConflictError:
                index = load(directory)  # the documented path: reload, apply again, save
        log(out, {**state(index), "round": i})


def loader(directory: str, stop: str, out: str) -> None:
    while not Path(stop).exists():
        load_once(directory, out)
        time.sleep(0.005)


def burst(directory: str, n: int, out: str) -> None:
    for _ in range(n):
        load_once(directory, out)


def killed(directory: str, step: str) -> None:
    from semrag.index.storage import persist

    index = load(directory)
    index.add_documents([Document("birds", "Birds sing at dawn. Birds fly south.")])

    def die(name: str) -> None:
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    persist._step = die
    index.save(directory)


def load_once(directory: str, out: str) -> None:
    try:
        index = load(directory)
    except SemragError as exc:
        log(out, {"error": type(exc).__name__, "message": str(exc)})
    except Exception as exc:  # noqa: BLE001 - an untyped error is what the test looks for
        log(out, {"error": type(exc).__name__, "message": str(exc), "untyped": True})
    else:
        log(out, state(index))


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "writer":
        writer(args[0], int(args[1]), args[2])
    elif role == "racer":
        racer(args[0], int(args[1]), args[2], args[3])
    elif role == "burst":
        burst(args[0], int(args[1]), args[2])
    elif role == "killed":
        killed(args[0], args[1])
    else:
        loader(*args)
