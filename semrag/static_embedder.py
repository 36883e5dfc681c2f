"""The static boundary encoder: sentence vectors without torch, from a table of word pieces.

:class:`StaticEmbedder` reads a model2vec model (MinishLab's static embeddings): one
vector per word piece, a sentence's vector the mean of its pieces' rows. The packaged one,
``semrag/weights/static-minilm``, was distilled from the packaged all-MiniLM-L6-v2
(``benchmarks/distill_static.py``: 256 dimensions, float16, 15 MB); it shares MiniLM's
word pieces, so a chunker's token cap counts exactly what it counted with MiniLM.

It is the default encoder of :class:`~semrag.chunking.SemanticChunker`'s boundaries: the
question there is "do these sentences talk about the same thing", which a static model
answers as well as the transformer on our development data, over a hundred times faster and with
only numpy and ``tokenizers`` (``benchmarks/chunk_retrieval.py``, ``splitting_speed.py``).
Retrieval vectors still come from MiniLM (:class:`~semrag.minilm.MiniLMEmbedder`, no torch either).

Examples:
    >>> emb = StaticEmbedder()
    >>> emb.embed(["Bees dance.", "Rockets burn fuel."]).shape
    (2, 256)
    >>> emb.model_name
    'static-minilm'
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from semrag.embeddings import BaseEmbedder, Vectors, check_embeddings
from semrag.errors import ConfigError, MissingDependencyError
from semrag.text.tokens import HuggingFaceTokenizer, word_splitter

if TYPE_CHECKING:
    from model2vec import StaticModel

__all__ = ["STATIC_MODEL_NAME", "StaticEmbedder", "packaged_static_path"]

STATIC_MODEL_NAME = "static-minilm"
"""The packaged static model's name (its directory under ``semrag/weights``)."""

_MODELS: dict[str, StaticModel] = {}  # one loaded table per directory, shared by instances
_TOKENIZERS: dict[str, HuggingFaceTokenizer] = {}  # and one word-piece counter
_MODELS_LOCK = threading.Lock()
_PARALLEL_ROWS = 50_000
"""Rows from which :func:`segment_sums` sums on two cores (a few pages of text)."""


def packaged_static_path() -> str:
    """Return the directory of the static model shipped inside the semrag package."""
    return str(Path(__file__).resolve().parent / "weights" / STATIC_MODEL_NAME)


def segment_sums(
    rows: npt.NDArray[np.float32], index: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]
) -> npt.NDArray[np.float32]:
    """Sum ``rows[index]`` in consecutive segments of ``sizes`` (an empty segment sums to 0).

    Segments of one size are summed together, as one gather and one sum (numpy's
    ``add.reduceat`` over rows is ten times slower). From :data:`_PARALLEL_ROWS` rows on a
    machine with two cores or more, half of the sizes are summed on a second thread: the
    gathers are bound by memory, and the batch's sums took a quarter less time.

    Examples:
        >>> rows = np.eye(3, dtype=np.float32)
        >>> segment_sums(rows, np.array([0, 1, 2, 2]), np.array([2, 0, 1, 1])).tolist()
        [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    """
    out = np.zeros((len(sizes), rows.shape[1]), dtype=np.float32)
    starts = np.cumsum(sizes) - sizes

    def sum_groups(groups: list[int]) -> None:
        for n in groups:
            which = np.flatnonzero(sizes == n)
            out[which] = rows[index[starts[which, None] + np.arange(n)]].sum(axis=1)

    groups = np.unique(sizes[sizes > 0]).tolist()
    if index.size < _PARALLEL_ROWS or (os.cpu_count() or 1) < 2:
        sum_groups(groups)
        return out
    with ThreadPoolExecutor(1) as helper:  # numpy lets go of the GIL while it sums
        half = helper.submit(sum_groups, groups[1::2])
        sum_groups(groups[::2])
        half.result()
    return out


class StaticEmbedder(BaseEmbedder):
    """A model2vec static model: the mean of the word pieces' vectors, L2-normalised.

    The model is loaded on first use from a local directory (never from a hub); instances
    of one directory share the loaded table. Texts are not truncated: a long sentence is
    the mean of all its pieces.

    Args:
        model_path: a model2vec model directory (``model.safetensors``, ``tokenizer.json``,
            ``config.json``); ``None`` for the packaged ``static-minilm``.
        cache_size: most vectors kept in the instance's LRU cache; default 0 (a static
            vector costs less to compute than to look up).

    Raises:
        MissingDependencyError: on first use, if ``model2vec`` is not installed.
        ConfigError: on first use, if ``model_path`` is not a model2vec directory.
    """

    name = "StaticEmbedder"

    def __init__(self, model_path: str | None = None, *, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.model_path = model_path
        self._model: StaticModel | None = None
        self._tokenizer: HuggingFaceTokenizer | None = None
        self._table: npt.NDArray[np.float32] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_table"] = None  # a worker converts its own table
        return state

    @property
    def path(self) -> str:
        """The model's directory."""
        return self.model_path or packaged_static_path()

    @property
    def model(self) -> StaticModel:
        """The loaded model2vec model."""
        if self._model is None:
            path = self.path
            if not (Path(path) / "tokenizer.json").is_file():
                raise ConfigError(
                    f"no model2vec model directory at {path!r} (model.safetensors, "
                    "tokenizer.json, config.json); semrag loads models from local paths only"
                )
            with _MODELS_LOCK:
                model = _MODELS.get(path)
                if model is None:
                    try:
                        from model2vec import StaticModel
                    except ImportError as exc:  # pragma: no cover - a core dependency
                        raise MissingDependencyError(
                            "model2vec is not installed; it is a dependency of semrag: "
                            "pip install semrag"
                        ) from exc
                    model = StaticModel.from_pretrained(path, force_download=False)
                    _MODELS[path] = model
            self._model = model
            self._dim = int(model.dim)
        return self._model

    @property
    def tokenizer(self) -> HuggingFaceTokenizer:
        """The model's word pieces (MiniLM's, for the packaged model)."""
        if self._tokenizer is None:
            model, path = self.model, self.path
            with _MODELS_LOCK:  # one per model: building it reads the whole vocabulary
                if path not in _TOKENIZERS:
                    _TOKENIZERS[path] = HuggingFaceTokenizer(model.tokenizer, name=self.model_name)
                self._tokenizer = _TOKENIZERS[path]
        return self._tokenizer

    @property
    def model_name(self) -> str:
        """The model's directory name (``static-minilm`` for the packaged one)."""
        return Path(self.path).name

    encoder_name = model_name

    def weights_fingerprint(self) -> str:
        """SHA-256 (first 16 hex digits) of the model's weight file."""
        digest = hashlib.sha256((Path(self.path) / "model.safetensors").read_bytes())
        return digest.hexdigest()[:16]

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        return self.model.encode(
            texts, max_length=None, use_multiprocessing=False, batch_size=max(1, len(texts))
        )

    def embed_counted(self, texts: Sequence[str]) -> tuple[Vectors, list[int]]:
        """Embed ``texts`` and count their word pieces, tokenizing each distinct word once.

        A chunker needs both for every sentence. A static vector is the mean of the rows
        of the text's pieces, and with a tokenizer that never makes a piece across
        whitespace (:attr:`~semrag.text.tokens.HuggingFaceTokenizer.additive`: MiniLM's)
        a text's pieces are its words' pieces: so the distinct words are tokenized once,
        each word's rows summed once, and each text is the sum of its words. The vectors
        equal :meth:`embed`'s and the counts :meth:`tokenizer`'s ``count`` (the property
        tests hold both); not cached.

        Returns:
            The vectors (``(len(texts), dim)``, float32, unit rows) and one count per text.

        Examples:
            >>> emb = StaticEmbedder()
            >>> vectors, counts = emb.embed_counted(["Bees dance.", "Bees dance again."])
            >>> counts
            [3, 4]
            >>> bool(abs(vectors - emb.embed(["Bees dance.", "Bees dance again."])).max() < 1e-3)
            True
        """
        if isinstance(texts, str):
            raise ConfigError("embed_counted() takes a sequence of strings, not a single str")
        tokenizer = self.tokenizer
        if not tokenizer.additive:  # pieces may span spaces: tokenize the texts themselves
            found = tokenizer.pieces(texts)
            unit = np.arange(len(texts), dtype=np.int64)
            return self._pooled(texts, found.ids, found.lengths, unit, found.lengths), found.counts
        split = word_splitter(texts)
        words: defaultdict[str, int] = defaultdict(itertools.count().__next__)  # word -> unit
        flat: list[int] = []
        per_text: list[int] = []
        for text in texts:
            found_words = split(text)
            per_text.append(len(found_words))
            flat += map(words.__getitem__, found_words)
        found = tokenizer.pieces(list(words))
        sizes = np.asarray(per_text, dtype=np.int64)
        order = np.asarray(flat, dtype=np.int64)
        per_word = np.asarray(found.counts, dtype=np.int64)[order]
        running = np.concatenate([[0], np.cumsum(per_word)])  # tokens before each word
        ends = np.cumsum(sizes)
        vectors = self._pooled(texts, found.ids, found.lengths, order, sizes)
        return vectors, (running[ends] - running[ends - sizes]).tolist()

    def _pooled(
        self,
        texts: Sequence[str],
        pieces: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.int64],
        order: npt.NDArray[np.int64],
        sizes: npt.NDArray[np.int64],
    ) -> Vectors:
        """Each text's vector: the sum of the rows of its units' pieces, normalised.

        A unit (a distinct word) has ``lengths[u]`` of ``pieces``, in order; ``order``
        holds the units of all texts in a row, ``sizes[i]`` of them for text ``i``.
        """
        table = self._float_table()
        units = segment_sums(table, pieces, lengths)
        out = segment_sums(units, order, sizes)
        if self._dim is None:
            self._dim = int(table.shape[1])
        return check_embeddings(out, texts, expected_dim=self._dim, source=self.name)

    def _float_table(self) -> npt.NDArray[np.float32]:
        """The model's rows in float32, unknown pieces zeroed (model2vec leaves them out)."""
        if self._table is None:
            table = np.array(self.model.embedding, dtype=np.float32)
            if self.model.unk_token_id is not None:
                table[self.model.unk_token_id] = 0.0
            self._table = table
        return self._table

    def __repr__(self) -> str:
        where = "" if self.model_path is None else f"{self.model_path!r}, "
        return f"StaticEmbedder({where}cache_size={self.cache_size})"
