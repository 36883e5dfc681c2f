"""Parts added to a populated index (:meth:`SemanticIndex.enable`): what each is built from.

Pure builders: a new passage or piece part, or the window nodes of a similarity graph
from the sentence vectors the records hold. The index stages and swaps them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError
from semrag.index.change import IndexedDocument
from semrag.index.parts._ssg_view import mean_of
from semrag.index.parts.passages import PassagePhrases
from semrag.index.parts.pieces import PieceIndex, check_split
from semrag.index.parts.ssg import SSGConfig, window_ranges
from semrag.text.tokens import Tokenizer
from semrag.types import Floats

ENABLED = ("passages", "pieces", "ssg")
"""The parts :meth:`~semrag.SemanticIndex.enable` builds."""

Nodes = tuple[list[tuple[int, int]], Floats, Floats]
"""One document's window ranges, sentence vectors and node vectors, as the graph holds them."""


def check_enabled(part: str) -> None:
    """Raise unless ``part`` is one :meth:`~semrag.SemanticIndex.enable` builds."""
    if part not in ENABLED:
        raise ConfigError(f"enable() builds the parts 'passages', 'pieces' and 'ssg', not {part!r}")


def new_part(
    part: str,
    split: tuple[int, int],
    *,
    embedder: BaseEmbedder,
    tokenizer: Tokenizer,
    dense_kind: str,
) -> PassagePhrases | PieceIndex:
    """An empty ``"passages"`` or ``"pieces"`` part (staged with every record next)."""
    if part == "passages":
        return PassagePhrases()
    return PieceIndex(check_split("SemanticIndex.enable", split), tokenizer, embedder, dense_kind)


def check_ssg_config(cfg: Any) -> SSGConfig:
    """``cfg`` if a graph can be built from the kept sentence vectors with it.

    Raises:
        ConfigError: for another type, concatenated windows or another number of themes.
    """
    if not isinstance(cfg, SSGConfig):
        raise ConfigError(f"config must be an SSGConfig, got {type(cfg).__name__}")
    if cfg.node_pooling != "mean" or cfg.n_themes != SSGConfig().n_themes:
        raise ConfigError(
            "enable('ssg') mean-pools window nodes from the kept sentence vectors and "
            "uses the themes found at indexing; for node_pooling='concat' or another "
            "n_themes, build the index with SemanticIndex(ssg=config)"
        )
    return cfg


def window_nodes(cfg: SSGConfig, records: Sequence[IndexedDocument], dim: int) -> list[Nodes]:
    """Each record's window nodes, mean-pooled from its sentence vectors (nothing embedded)."""
    nodes: list[Nodes] = []
    for e in records:
        ranges = window_ranges(len(e.sentences), cfg.window, cfg.step)
        svec = np.asarray(e.sentence_vectors, np.float32)
        nvec = mean_of(svec, ranges, dim)
        if cfg.vector_dtype != "float32":
            svec, nvec = svec.astype(cfg.vector_dtype), nvec.astype(cfg.vector_dtype)
        nodes.append((ranges, svec, nvec))
    return nodes
