"""Invariants every semrag chunker keeps, as reusable assertions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semrag.types import Chunk

__all__ = ["check_chunker", "check_chunks"]


def check_chunks(
    text: str,
    chunks: Sequence[Chunk],
    *,
    max_tokens: int | None = None,
    overlapping: bool = True,
    count: Any = None,
) -> None:
    """Assert the chunk invariants for the chunks of one text.

    * offsets round-trip: ``text[c.start:c.end] == c.text``;
    * no chunk is empty or starts/ends with whitespace;
    * chunks are in order (starts and ends strictly increase);
    * every non-whitespace character lies in some chunk; without ``overlapping``,
      chunks do not overlap, so they tile the non-whitespace text exactly;
    * ``token_count <= max_tokens`` and, with ``count``, the count is right.

    Raises:
        AssertionError: naming the first violated invariant.
    """
    prev_start, prev_end = -1, -1
    covered_to = 0
    for i, c in enumerate(chunks):
        assert text[c.start : c.end] == c.text, f"chunk {i}: offsets do not round-trip"
        assert c.text, f"chunk {i} is empty"
        assert not c.text[0].isspace() and not c.text[-1].isspace(), f"chunk {i} is not trimmed"
        assert c.start > prev_start and c.end > prev_end, f"chunk {i} is out of order"
        if not overlapping:
            assert c.start >= prev_end, f"chunk {i} overlaps chunk {i - 1}"
        gap = text[covered_to : c.start] if c.start > covered_to else ""
        assert not gap.strip(), f"text before chunk {i} is lost: {gap.strip()[:40]!r}"
        covered_to = max(covered_to, c.end)
        if max_tokens is not None:
            assert c.token_count <= max_tokens, (
                f"chunk {i} has {c.token_count} > {max_tokens} tokens"
            )
        if count is not None:
            assert count(c.text) == c.token_count, f"chunk {i}: token_count is wrong"
        prev_start, prev_end = c.start, c.end
    assert not text[covered_to:].strip(), "text after the last chunk is lost"


def check_chunker(chunker: Any, texts: Sequence[str]) -> None:
    """Run :func:`check_chunks` on each text, and check determinism and async parity.

    Args:
        chunker: any semrag chunker (``chunk``, ``chunk_documents``, ``max_tokens``).
        texts: sample texts; include empty, whitespace-only and one-sentence ones.
    """
    import asyncio

    tokenizer = chunker.tokenizer
    for text in texts:
        chunks = chunker.chunk(text)
        check_chunks(
            text,
            chunks,
            max_tokens=chunker.max_tokens,
            overlapping=chunker.overlap_tokens > 0,
            count=lambda t: tokenizer.count([t])[0],
        )
        assert chunker.chunk(text) == chunks, "chunking is not deterministic"
        assert asyncio.run(chunker.achunk(text)) == chunks, "achunk differs from chunk"
    batched = chunker.chunk_documents(list(texts))
    single = [c for t in texts for c in chunker.chunk(t)]
    assert batched == single, "chunk_documents differs from chunking one text at a time"
