from __future__ import annotations

import json
import subprocess
import sys

import pytest

from semrag import SemanticChunker
from semrag.cli import main
from semrag.errors import ConfigError
from semrag.testing import FakeEmbedder
from semrag.viz import plot_breakpoints

TEXT = (
    "The cat sat on the mat. The cat sat on the rug. "
    "Stock prices fell sharply today. Stock prices rose sharply later."
)


def test_plot_breakpoints_writes_a_png(tmp_path):
    stats = SemanticChunker(FakeEmbedder(), threshold=0.6).chunk_with_stats([TEXT])[0].stats
    out = plot_breakpoints(stats, tmp_path / "sub" / "curve.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_needs_a_curve(tmp_path):
    stats = SemanticChunker(FakeEmbedder()).chunk_with_stats(["One sentence."])[0].stats
    with pytest.raises(ConfigError, match="fewer than two sentences"):
        plot_breakpoints(stats, tmp_path / "x.png")


@pytest.mark.model
def test_cli_chunk_json(tmp_path, capsys):
    f = tmp_path / "a.txt"
    f.write_text(TEXT + " " + TEXT, encoding="utf-8")
    assert (
        main(
            [
                "chunk",
                str(f),
                "--json",
                "--buffer-size",
                "0",
                "--threshold",
                "0.5",
                "--plot",
                str(tmp_path),
            ]
        )
        == 0
    )
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    text = f.read_text(encoding="utf-8")
    assert records and all(text[r["start"] : r["end"]] == r["text"] for r in records)
    assert (tmp_path / "a.txt.breakpoints.png").exists()


def test_cli_rejects_binary_and_missing_files(tmp_path, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\xff\xfe\x00\x81binary")
    assert main(["chunk", str(junk)]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err
    assert main(["chunk", str(tmp_path / "missing.txt")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_bad_option_is_reported(tmp_path, capsys):
    f = tmp_path / "a.txt"
    f.write_text(TEXT, encoding="utf-8")
    assert main(["chunk", str(f), "--threshold", "median"]) == 2
    assert "threshold='median' is not allowed" in capsys.readouterr().err


def test_import_semrag_is_light():
    code = (
        "import sys, semrag; heavy = [m for m in ('torch', 'sentence_transformers', "
        "'langchain_core', 'llama_index') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.model
def test_importing_semrag_leaves_the_environment_and_import_hooks_and_the_encoder_quiets_openmp():
    import os

    code = (
        "import os, sys; before = dict(os.environ), list(sys.meta_path); "
        "import semrag, semrag.index, semrag.retrieval, semrag.postprocess; "
        "assert dict(os.environ) == before[0], 'import semrag changed os.environ'; "
        "assert sys.meta_path == before[1], 'import semrag added an import hook'; "
        "from semrag.embeddings import SentenceTransformerEmbedder; "
        "SentenceTransformerEmbedder().embed(['x']); import torch; "
        "a = torch.ones(64, 64); (a @ a).sum().item(); print(os.environ['OMP_WAIT_POLICY'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for given, want in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        run_env = env if given is None else {**env, "OMP_WAIT_POLICY": given}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=run_env
        )
        assert out.stdout.strip().splitlines()[-1] == want and "libgomp" not in out.stderr


def test_plot_traversal_writes_a_png(tmp_path):
    from semrag import Document, SemanticIndex, SSGRetriever
    from semrag.viz import plot_traversal

    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents([Document("a", TEXT), Document("b", TEXT.replace("cat", "dog"))])
    hits = SSGRetriever(index, strategy="ssg_traversal", k=3).retrieve("cat mat")
    for kwargs in ({}, {"index": index}):
        out = plot_traversal(hits, tmp_path / f"t{len(kwargs)}.png", **kwargs)
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ConfigError, match="no SSG provenance"):
        plot_traversal(index.search("cat", 2), tmp_path / "x.png")


@pytest.mark.model
def test_cli_index_and_query(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TEXT, encoding="utf-8")
    (docs / "b.md").write_text(
        "Rockets launch into orbit. Astronauts live on the station.", encoding="utf-8"
    )
    (docs / "skip.bin").write_bytes(b"\x00\xff")
    assert main(["index", str(docs), "--out", str(tmp_path / "plain")]) == 0
    assert "indexed 2 documents" in capsys.readouterr().out
    # the default index: no similarity graph; the default query is GraphRetriever()'s walk
    assert main(["query", str(tmp_path / "plain"), "Where do astronauts live?", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records[0]["doc_id"].endswith("b.md")
    assert records[0]["provenance"][0]["strategy"] == "ppr"
    assert main(["query", str(tmp_path / "plain"), "x", "--algorithm", "query_traversal"]) == 2
    assert "enable('ssg')" in capsys.readouterr().err
    assert main(["query", str(tmp_path / "plain"), "x", "--retriever", "ppr", "--algorithm",
                 "dense"]) == 2  # fmt: skip
    assert main(["index", str(docs), "--out", str(tmp_path / "idx"), "--ssg"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "query",
                str(tmp_path / "idx"),
                "Where do astronauts live?",
                "--algorithm",
                "query_traversal",
                "--k",
                "2",
                "--json",
                "--plot",
                str(tmp_path / "t.png"),
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    records = [json.loads(line) for line in out.out.splitlines()]
    assert records[0]["doc_id"].endswith("b.md")
    assert records[0]["provenance"][0]["algorithm"] == "query_traversal"
    assert (tmp_path / "t.png").exists()
    assert main(["query", str(tmp_path / "idx"), "rockets", "--algorithm", "sparse"]) == 0
    assert "b.md" in capsys.readouterr().out
    assert (
        main(
            [
                "query",
                str(tmp_path / "idx"),
                "Where do Astronauts live?",
                "--retriever",
                "ppr",
                "--k",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "b.md" in out and "hop 0: Astronauts" in out
    assert main(["query", str(tmp_path / "missing"), "x"]) == 2


@pytest.mark.model
def test_cli_graph_index_and_graph_retrievers(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "song.txt").write_text(
        "SexyBack is a song by Justin Timberlake. Timbaland produced it.", encoding="utf-8"
    )
    (docs / "bio.txt").write_text(
        "Justin Timberlake was born in Memphis. He sang with NSync.", encoding="utf-8"
    )
    idx = str(tmp_path / "idx")
    assert main(["index", str(docs), "--out", idx, "--graph", "memory"]) == 0
    assert "graph (memory):" in capsys.readouterr().out
    for retriever in ("sketch", "local", "global", "iar"):
        assert (
            main(
                [
                    "query",
                    idx,
                    "Where was Justin Timberlake born?",
                    "--retriever",
                    retriever,
                    "--json",
                    "--k",
                    "2",
                ]
            )
            == 0
        )
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert records and records[0]["doc_id"].endswith(".txt")
    assert main(["index", str(docs), "--out", idx, "--graph", "memory", "--extractor", "llm"]) == 2
    assert "--llm" in capsys.readouterr().err
    assert (
        main(["query", str(tmp_path / "idx"), "x", "--retriever", "sketch", "--plot", "p.png"]) == 2
    )
