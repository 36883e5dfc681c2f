"""The parts of a :class:`~semrag.SemanticIndex`: which it keeps, and adding one on demand."""

from __future__ import annotations

import dataclasses

import numpy as np

from semrag.errors import ConfigError
from semrag.index._ssg_view import mean_of
from semrag.index.change import Change, StagedPart
from semrag.index.live_ssg import LiveSSG
from semrag.index.passages import PassagePhrases
from semrag.index.pieces import PieceIndex, check_split
from semrag.index.ssg import SSGConfig, window_ranges


class Parts:
    """The parts side of a :class:`~semrag.SemanticIndex`: ``parts``, ``enable``."""

    @property
    def parts(self) -> dict[str, StagedPart]:
        """The index's own parts, by name: each stages and publishes every :class:`Change`."""
        return self._part_set.named()

    def can_commit(self) -> bool:
        """Whether the calling thread may make a change now (it holds no read of the index)."""
        return self._corpus.can_commit()

    def enable(
        self,
        part: str,
        *,
        split: tuple[int, int] = (100, 16),
        config: SSGConfig | None = None,
    ) -> None:
        """Add a part to a populated index: built from the indexed documents, then kept.

        ``"passages"``: the PPR passage phrases (as ``SemanticIndex(passages=True)``);
        ``"pieces"``: SKETCH's small pieces of ``split`` (as ``SemanticIndex(pieces=split)``);
        ``"ssg"``: the semantic similarity graph with ``config`` (default ``SSGConfig()``),
        from the sentence vectors the index holds (window nodes mean-pooled: nothing is
        embedded again). From then on the part follows every change and is saved with the
        index. An index that holds the part already is left as it is. Followers that store
        the index elsewhere (:class:`~semrag.neo4j.Neo4jIndexStore`) are told, through
        their ``part_enabled(part)``, and write the new part before this returns.

        Raises:
            ConfigError: for a part that cannot be enabled this way, a bad ``split``, or an
                SSG config that needs what the index did not keep (concatenated windows,
                another number of themes): build with ``SemanticIndex(ssg=config)``.
        """
        if part not in ("passages", "pieces", "ssg"):
            raise ConfigError(
                f"enable() builds the parts 'passages', 'pieces' and 'ssg', not {part!r}"
            )
        with (
            self._corpus.commit_lock
        ):  # no change between the part's build and its followers' write
            if part == "ssg":
                built_now = self._enable_ssg(config or SSGConfig())
            else:
                built_now = self._enable_part(part, split)
            if built_now:
                for follower in self._corpus.followers:
                    told = getattr(follower, "part_enabled", None)
                    if callable(told):
                        told(part)

    def _enable_part(self, part: str, split: tuple[int, int]) -> bool:
        """Build ``"passages"`` or ``"pieces"`` (under the commit lock ``enable`` holds)."""
        if part in self._part_set.named():
            return False
        built: PassagePhrases | PieceIndex
        if part == "passages":
            built = PassagePhrases(self.embedder)
        else:
            built = PieceIndex(
                check_split("SemanticIndex.enable", split),
                self.chunker.tokenizer,
                self.embedder,
                self.dense_kind,
            )
        publish = built.stage(Change(self._corpus.version, tuple(self._corpus.records())))
        with self._corpus.lock.write():
            publish()
            self._part_set.keep(part, built)
        return True

    def _enable_ssg(self, cfg: SSGConfig) -> bool:
        if not isinstance(cfg, SSGConfig):
            raise ConfigError(f"config must be an SSGConfig, got {type(cfg).__name__}")
        if cfg.node_pooling != "mean" or cfg.n_themes != SSGConfig().n_themes:
            raise ConfigError(
                "enable('ssg') mean-pools window nodes from the kept sentence vectors and "
                "uses the themes found at indexing; for node_pooling='concat' or another "
                "n_themes, build the index with SemanticIndex(ssg=config)"
            )
        if self._part_set.ssg is not None:  # under the commit lock ``enable`` holds
            return False
        entries = self._corpus.records()
        nodes = []
        for e in entries:
            ranges = window_ranges(len(e.sentences), cfg.window, cfg.step)
            svec = np.asarray(e.sentence_vectors, np.float32)
            nvec = mean_of(svec, ranges, self.embedder.dim)
            if cfg.vector_dtype != "float32":
                svec, nvec = svec.astype(cfg.vector_dtype), nvec.astype(cfg.vector_dtype)
            nodes.append((ranges, svec, nvec))
        graph = LiveSSG(cfg, self.embedder.dim)
        staged = tuple(  # the graph is built while readers go on reading
            dataclasses.replace(e, node_ranges=r, sentence_vectors=sv, node_vectors=nv)
            for e, (r, sv, nv) in zip(entries, nodes, strict=True)
        )
        publish = graph.stage(Change(self._corpus.version, staged))
        with self._corpus.lock.write():  # readers see the index without the graph or with it
            for e, (ranges, svec, nvec) in zip(entries, nodes, strict=True):
                object.__setattr__(e, "node_ranges", ranges)
                object.__setattr__(e, "sentence_vectors", svec)
                object.__setattr__(e, "node_vectors", nvec)
            publish()
            self._part_set.keep("ssg", graph)
            self.ssg_config = cfg
            self._share_vectors(())
            self._publish_view()
        return True

    @property
    def piece_index(self) -> PieceIndex | None:
        """The small pieces kept with the index (``pieces=``), or ``None``."""
        return self._part_set.pieces
