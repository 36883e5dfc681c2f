"""Heading paths and size targets through both frameworks' splitters and the index."""

from __future__ import annotations

from llama_index.core import Document as LIDocument
from llama_index.core.schema import MetadataMode

from langchain_semrag import SemanticTextSplitter
from llama_index_semrag import SemanticNodeParser
from semrag import SemanticChunker, SemanticIndex
from semrag.testing import FakeEmbedder
from semrag.types import HEADINGS_KEY

MARKDOWN = (
    "# Bees\n\nBees make honey in hives. Bees dance to share where the flowers are.\n\n"
    "## Stings\n\nA bee stings once and dies. Wasps can sting many times.\n\n"
    "# Moon\n\nApollo 11 landed on the Moon in 1969. Astronauts walked on its dust."
)


def test_langchain_chunks_carry_exact_offsets_and_their_heading_path():
    splitter = SemanticTextSplitter(FakeEmbedder(), chunk_size=120)
    docs = splitter.create_documents([MARKDOWN], metadatas=[{"source": "notes.md"}])
    assert len(docs) >= 3
    for d in docs:
        start = d.metadata["start_index"]
        assert MARKDOWN[start : start + len(d.page_content)] == d.page_content
        assert d.metadata["source"] == "notes.md"
    by_head = {d.page_content.split("\n")[0]: d.metadata.get(HEADINGS_KEY) for d in docs}
    assert by_head["## Stings"] == ["Bees", "Stings"]
    assert by_head["# Moon"] == ["Moon"]
    # chunk_size is the cap in characters; the target is the same share of it
    assert splitter.chunker.target == 120 * 0.3125
    assert all(len(d.page_content) <= 120 for d in docs)


def test_llama_index_nodes_carry_the_path_and_embed_it_only_when_asked():
    doc = LIDocument(text=MARKDOWN, id_="notes")
    plain = SemanticNodeParser(embed_model=FakeEmbedder(), chunk_size=64)
    nodes = plain.get_nodes_from_documents([doc])
    moon = next(n for n in nodes if n.get_content().startswith("# Moon"))
    assert moon.metadata[HEADINGS_KEY] == ["Moon"]
    assert HEADINGS_KEY not in moon.get_content(metadata_mode=MetadataMode.EMBED)
    assert HEADINGS_KEY not in moon.get_content(metadata_mode=MetadataMode.LLM)
    for n in nodes:
        assert MARKDOWN[n.start_char_idx : n.end_char_idx] == n.get_content()

    contextual = SemanticNodeParser(
        embed_model=FakeEmbedder(), chunk_size=64, contextual_headings=True
    )
    moon = next(
        n
        for n in contextual.get_nodes_from_documents([doc])
        if n.get_content().startswith("# Moon")
    )
    assert "Moon" in moon.get_content(metadata_mode=MetadataMode.EMBED).split("# Moon")[0]


class RecordingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(cache_size=0)
        self.seen: list[str] = []

    def _embed_batch(self, texts):
        self.seen.extend(texts)
        return super()._embed_batch(texts)


def test_the_index_embeds_the_heading_path_only_with_contextual_headings():
    for contextual in (False, True):
        emb = RecordingEmbedder()
        chunker = SemanticChunker(emb, max_tokens=64, contextual_headings=contextual)
        index = SemanticIndex(chunker=chunker)
        index.add_documents([MARKDOWN])
        moon = next(c for c in index.chunks() if c.text.startswith("# Moon"))
        assert moon.text == MARKDOWN[moon.start : moon.end]
        assert ("Moon\n\n" + moon.text in emb.seen) is contextual
