"""Several processes, one saved index directory: loads during saves, two writers, kills.

Corpus: the paragraphs of the first SQuAD dev articles (../shared/data/squad_dev), one
document each, embedded by the packaged MiniLM (``--embedder fake``: hashed bag of words).
Every worker is a real process (``multiprocessing``, spawn), as web workers and an
ingestion job would be:

* **loads during saves**: one writer changes the index (adds a paragraph, or deletes one
  every third round) and saves, ``--rounds`` times; three readers load the directory and
  run a ``GraphRetriever()`` query in a loop until the writer ends. A load counts as
  *whole* when its documents and version are exactly those of one save.
* **two writers**: two processes each load, change and save ``--rounds`` times; a refused
  save (``SaveConflictError``) reloads, applies the change again and saves. *Lost* counts
  the changes whose save returned but which the final directory does not hold.
* **kills**: a writer is killed (SIGKILL) at a random moment of its save loop, then four
  processes load the directory at once, ``--kills`` times.
* **refresh**: a serving index following the writer: ``refresh()`` with nothing new
  (one small file read) and with a new save (a load and a swap).

Usage: python benchmarks/shared_directory.py [--out F] [--rounds N] [--kills N]
[--embedder minilm|fake] [--docs N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import tempfile
import time
from pathlib import Path

from _common import DATA, emit, header, need, table

from semrag import Document, GraphRetriever, SemanticIndex
from semrag.errors import SaveConflictError, SemragError

QUERY = "What did the university build in the nineteenth century?"


def paragraphs(n: int) -> list[Document]:
    with gzip.open(need(DATA / "squad_dev" / "dev-v1.1.json.gz"), "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    docs = []
    for article in data:
        for i, p in enumerate(article["paragraphs"]):
            docs.append(Document(f"{article['title']}#{i}", p["context"]))
            if len(docs) == n:
                return docs
    return docs


def embedder_for(name: str):
    if name == "fake":
        from semrag.testing import FakeEmbedder

        return FakeEmbedder(dim=384)
    from semrag.embeddings import as_embedder

    return as_embedder(None)


def log(path: str, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def change(index: SemanticIndex, extra: list[Document], name: str, i: int) -> str:
    """Round ``i`` of writer ``name``: add its paragraph, or delete the one of 2 rounds ago."""
    if i % 3 == 2:
        gone = f"{name}/{extra[i - 2].id}"
        index.delete([gone])
        return f"-{gone}"
    doc = extra[i]
    index.add_documents([Document(f"{name}/{doc.id}", doc.text)])
    return f"+{name}/{doc.id}"


# -- the workers (each its own process) ---------------------------------------------------------
def writer(directory: str, extra: list, rounds: int, out: str, emb: str, name: str) -> None:
    embedder = embedder_for(emb)
    index = SemanticIndex.load(directory, embedder=embedder)
    for i in range(rounds):
        while True:
            did = change(index, extra, name, i)
            t = time.perf_counter()
            try:
                index.save(directory)
            except SaveConflictError:
                log(out, {"conflict": True})
                index = SemanticIndex.load(directory, embedder=embedder)
                continue
            log(
                out,
                {
                    "version": index.version,
                    "docs": sorted(index.doc_ids),
                    "did": did,
                    "save_s": time.perf_counter() - t,
                },
            )
            break


def reader(directory: str, stop: str, out: str, emb: str, bursts: int) -> None:
    embedder = embedder_for(emb)
    n = 0
    while (bursts and n < bursts) or (not bursts and not Path(stop).exists()):
        n += 1
        t = time.perf_counter()
        try:
            index = SemanticIndex.load(directory, embedder=embedder)
            load_s = time.perf_counter() - t
            GraphRetriever(index, k=5).retrieve(QUERY)
        except SemragError as exc:
            log(out, {"error": type(exc).__name__, "message": str(exc)[:200]})
        except Exception as exc:  # noqa: BLE001 - counted as an error outside semrag's types
            log(out, {"error": type(exc).__name__, "untyped": True, "message": str(exc)[:200]})
        else:
            log(out, {"version": index.version, "docs": sorted(index.doc_ids), "load_s": load_s})


def spawn(target, *args) -> mp.Process:
    proc = mp.get_context("spawn").Process(target=target, args=args)
    proc.start()
    return proc


# -- the runs --------------------------------------------------------------------------------------
def base(directory: Path, docs: list[Document], emb: str) -> SemanticIndex:
    index = SemanticIndex(embedder=embedder_for(emb))
    index.add_documents(docs)
    index.save(directory)
    return index


def loads_during_saves(root: Path, docs, extra, args) -> dict:
    d, stop = root / "a", root / "a.stop"
    first = base(d, docs, args.embedder)
    saved = {first.version: sorted(first.doc_ids)}
    readers = [
        spawn(reader, str(d), str(stop), str(root / f"a.r{i}"), args.embedder, 0) for i in range(3)
    ]
    w = spawn(writer, str(d), extra, args.rounds, str(root / "a.w"), args.embedder, "w")
    w.join()
    stop.touch()
    for p in readers:
        p.join()
    writes = records(root / "a.w")
    saved.update((r["version"], r["docs"]) for r in writes)
    loads = [r for i in range(3) for r in records(root / f"a.r{i}")]
    good = [r for r in loads if "error" not in r]
    return {
        "run": "1 writer + 3 loaders",
        "saves": len(writes),
        "loads": len(loads),
        "failed loads": len(loads) - len(good),
        "untyped errors": sum(1 for r in loads if r.get("untyped")),
        "whole": sum(1 for r in good if saved.get(r["version"]) == r["docs"]),
        "versions seen": len({r["version"] for r in good}),
        "save p50 ms": 1000 * statistics.median(r["save_s"] for r in writes),
        "load p50 ms": 1000 * statistics.median(r["load_s"] for r in good) if good else None,
    }


def two_writers(root: Path, docs, extra, args) -> dict:
    d = root / "b"
    base(d, docs, args.embedder)
    half = len(extra) // 2
    procs = [
        spawn(writer, str(d), part, args.rounds, str(root / f"b.{n}"), args.embedder, n)
        for n, part in (("x", extra[:half]), ("y", extra[half:]))
    ]
    for p in procs:
        p.join()
    final = set(SemanticIndex.load(d, embedder=embedder_for(args.embedder)).doc_ids)
    saves = [r for n in "xy" for r in records(root / f"b.{n}")]
    expected = {doc.id for doc in docs}
    for r in saves:
        if "did" in r:  # each writer's changes, in its order
            (expected.add if r["did"][0] == "+" else expected.discard)(r["did"][1:])
    done = [r for r in saves if "did" in r]
    lost = len(expected ^ final)
    return {
        "run": "2 writers",
        "saves": len(done),
        "refused (then reloaded and saved)": sum(1 for r in saves if r.get("conflict")),
        "lost changes": lost,
    }


def kills(root: Path, docs, extra, args) -> dict:
    rng = random.Random(0)
    errors = untyped = loads = 0
    outcomes = set()
    for k in range(args.kills):
        d = root / f"k{k}"
        first = base(d, docs, args.embedder)
        w = spawn(writer, str(d), extra, len(extra), str(root / f"k{k}.w"), args.embedder, "w")
        time.sleep(rng.uniform(3.0, 6.0) if args.embedder == "minilm" else rng.uniform(0.5, 1.5))
        os.kill(w.pid, signal.SIGKILL)
        w.join()
        saved = {first.version: sorted(first.doc_ids)}
        saved.update((r["version"], r["docs"]) for r in records(root / f"k{k}.w"))
        procs = [
            spawn(reader, str(d), "", str(root / f"k{k}.r{i}"), args.embedder, 3) for i in range(4)
        ]
        for p in procs:
            p.join()
        got = [r for i in range(4) for r in records(root / f"k{k}.r{i}")]
        loads += len(got)
        errors += sum(1 for r in got if "error" in r)
        untyped += sum(1 for r in got if r.get("untyped"))
        outcomes |= {saved.get(r["version"]) == r["docs"] for r in got if "error" not in r}
    return {
        "run": f"{args.kills} kills + 4 loaders each",
        "loads": loads,
        "failed loads": errors,
        "untyped errors": untyped,
        "every load one saved version": outcomes == {True},
    }


def refresh(root: Path, docs, extra, args) -> dict:
    d = root / "c"
    w = base(d, docs, args.embedder)
    serving = SemanticIndex.load(d, embedder=w.embedder)
    t = time.perf_counter()
    for _ in range(100):
        serving.refresh()
    idle = (time.perf_counter() - t) / 100
    w.add_documents([extra[0]])
    w.save(d)
    t = time.perf_counter()
    moved = serving.refresh()
    newer = time.perf_counter() - t
    t = time.perf_counter()
    SemanticIndex.load(d, embedder=w.embedder)
    load = time.perf_counter() - t
    return {
        "run": "refresh()",
        "nothing new ms": 1000 * idle,
        "a new save ms": 1000 * newer,
        "followed": moved and sorted(serving.doc_ids) == sorted(w.doc_ids),
        "a plain load ms": 1000 * load,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--docs", type=int, default=300, help="paragraphs in the saved index")
    ap.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    args = ap.parse_args()
    docs = paragraphs(args.docs + 2 * args.rounds)
    docs, extra = docs[: args.docs], docs[args.docs :]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = [f(root, docs, extra, args) for f in (loads_during_saves, two_writers, kills)]
        ref = refresh(root, docs, extra, args)
    report = header(
        "Several processes, one saved directory",
        f"{args.docs} SQuAD dev paragraphs (one document each), "
        f"{'the packaged MiniLM' if args.embedder == 'minilm' else 'FakeEmbedder'}; "
        f"{args.rounds} changes per writer, each saved; every worker a process",
    )
    cols = [
        "run",
        "saves",
        "loads",
        "failed loads",
        "untyped errors",
        "whole",
        "versions seen",
        "save p50 ms",
        "load p50 ms",
    ]
    report += "\n" + table([rows[0]], cols) + "\n"
    report += table([rows[1]], list(rows[1])) + "\n"
    report += table([rows[2]], list(rows[2])) + "\n"
    report += table([ref], list(ref)) + "\n"
    emit(report, args.out)


if __name__ == "__main__":
    main()
