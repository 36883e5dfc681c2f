"""Training of the PSC / MFC boundary models (BCEWithLogits, AdamW, epoch chosen on dev).

Sentence embeddings are computed once per corpus and encoder and cached on disk
(``cache_dir``), so retraining with other settings costs seconds.

    semrag train-boundary --data nicta:PATH csabstruct:PATH --dev nicta:PATH --model psc --out DIR
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch

from semrag.chunking.boundary.data import PAIR_KINDS, PairSet, check_windows, gap_sides
from semrag.chunking.boundary.rules import gap_breaks
from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError
from semrag.eval.datasets import SectionedDocument
from semrag.eval.metrics import pk

if TYPE_CHECKING:  # the models import this module to train; it needs them only for types
    from semrag.chunking.boundary.models import PairModel

__all__ = [
    "TrainConfig",
    "accuracy_by_kind",
    "choose_threshold",
    "embed_cached",
    "encoder_name",
    "gap_probabilities",
    "side_tensors",
    "train_loop",
]


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """How a boundary model is trained."""

    epochs: int = 8
    """Most epochs; the one with the lowest dev loss is kept."""
    lr: float = 1e-3
    """AdamW learning rate."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    batch_size: int = 512
    """Pairs per step."""
    proj_dim: int = 256
    """Width of the learned projection."""
    seed: int = 0
    """Seed of the initialisation and of the shuffling."""
    average: float | None = None
    """Decay of an exponential moving average of the weights, updated after every step
    (e.g. 0.995); the averaged weights are the ones evaluated on dev and kept. ``None``
    keeps the weights as trained."""

    def __post_init__(self) -> None:
        if self.average is not None and not 0.0 < self.average < 1.0:
            raise ConfigError(f"average must be within (0, 1), got {self.average}")


def encoder_name(embedder: BaseEmbedder) -> str:
    """A stable name for the embedder (recorded with trained weights)."""
    return embedder.model_name


def embed_cached(
    embedder: BaseEmbedder,
    texts: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
    block: int = 4096,
) -> npt.NDArray[np.float32]:
    """Embed ``texts`` through an on-disk store of one vector per distinct text.

    The store (``cache_dir/embeddings-<encoder>/``) keeps a 16-byte digest per text and its
    vector; only texts it lacks are embedded (in blocks, saved after each one, so an
    interrupted run keeps its work). Without ``cache_dir`` every text is embedded.
    """
    if cache_dir is None:
        return _embed_blocks(embedder, list(texts), block, show_progress)
    store = _VectorStore(Path(cache_dir) / f"embeddings-{_slug(encoder_name(embedder))}")
    keys = [_digest(t) for t in texts]
    missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in store))
    starts: Any = range(0, len(missing), block)
    if show_progress and len(missing) > block:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="Embedding sentences", unit="block")
    for i in starts:
        part = missing[i : i + block]
        store.add([_digest(t) for t in part], _embed_blocks(embedder, part, block, False))
    return store.get(keys, embedder.dim)


def _embed_blocks(
    embedder: BaseEmbedder, texts: list[str], block: int, show_progress: bool
) -> npt.NDArray[np.float32]:
    parts = []
    iterator: Any = range(0, len(texts), block)
    if show_progress and len(texts) > block:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="Embedding sentences", unit="block")
    for i in iterator:
        parts.append(np.asarray(embedder.embed(texts[i : i + block]), dtype=np.float32))
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80]


class _VectorStore:
    """Digests and vectors in two ``.npy`` files, replaced atomically on every add."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.keys: list[bytes] = []
        self.vectors = np.zeros((0, 0), np.float32)
        keys_file, vectors_file = directory / "keys.npy", directory / "vectors.npy"
        if keys_file.exists() and vectors_file.exists():
            try:
                raw = np.load(keys_file, allow_pickle=False)
                self.vectors = np.load(vectors_file, allow_pickle=False)
            except (ValueError, OSError) as exc:
                raise ConfigError(
                    f"the embedding cache at {directory} is damaged ({exc}); delete it"
                ) from exc
            # Rows are appended in the same order to both files; after a crash between the
            # two writes, the shorter file says how many rows are whole.
            n = min(raw.shape[0], self.vectors.shape[0])
            self.keys = [bytes(k) for k in raw[:n]]
            self.vectors = self.vectors[:n]
        self.row = {k: i for i, k in enumerate(self.keys)}

    def __contains__(self, key: bytes) -> bool:
        return key in self.row

    def add(self, keys: list[bytes], vectors: npt.NDArray[np.float32]) -> None:
        for k in keys:
            self.row[k] = len(self.keys)
            self.keys.append(k)
        self.vectors = vectors if not self.vectors.size else np.concatenate([self.vectors, vectors])
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, array in (
            ("vectors.npy", self.vectors),
            ("keys.npy", np.frombuffer(b"".join(self.keys), dtype="V16")),
        ):
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".npy")
            os.close(fd)
            np.save(tmp, array, allow_pickle=False)
            os.replace(tmp, self.directory / name)

    def get(self, keys: list[bytes], dim: int) -> npt.NDArray[np.float32]:
        if not keys:
            return np.zeros((0, dim), np.float32)
        return self.vectors[[self.row[k] for k in keys]]


def side_tensors(
    pairs: PairSet | Sequence[tuple[str, str]],
    labels: Sequence[float] | None,
    embedder: BaseEmbedder,
    window: int | Sequence[int],
    *,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> tuple[Any, Any, Any]:
    """Left side, right side and label tensors of labelled pairs.

    A :class:`PairSet` embeds only the sentences its pairs' windows read (its sides are
    :func:`~semrag.chunking.boundary.data.gap_sides`); text pairs embed each text as one
    side, of the encoder's width.

    Raises:
        ConfigError: on no pairs, labels missing or of the wrong length, or labels not 0/1.
    """
    if isinstance(pairs, PairSet):
        if labels is not None:
            raise ConfigError("a PairSet carries its labels; do not pass labels=")
        if not len(pairs):
            raise ConfigError("no pairs to train on")
        left_vecs, right_vecs = _pair_set_sides(pairs, embedder, window, cache_dir, progress)
        y = pairs.label
    else:
        texts = list(pairs)
        if not texts:
            raise ConfigError("no pairs to train on")
        if labels is None or len(labels) != len(texts):
            raise ConfigError("text pairs need one label each (labels=)")
        y = np.asarray(labels, dtype=np.float32)
        flat = [t for pair in texts for t in pair]
        vectors = embed_cached(embedder, flat, cache_dir=cache_dir, show_progress=progress)
        vectors = vectors.reshape(len(texts), 2, -1)
        left_vecs, right_vecs = vectors[:, 0], vectors[:, 1]
    if not np.isin(y, (0.0, 1.0)).all():
        raise ConfigError("labels must be 0 (different sections) or 1 (same section)")
    return (
        torch.from_numpy(np.ascontiguousarray(left_vecs, dtype=np.float32)),
        torch.from_numpy(np.ascontiguousarray(right_vecs, dtype=np.float32)),
        torch.from_numpy(np.asarray(y, dtype=np.float32)),
    )


def _pair_set_sides(
    pairs: PairSet,
    embedder: BaseEmbedder,
    window: int | Sequence[int],
    cache_dir: str | Path | None,
    progress: bool,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Side vectors of every pair, embedding only the sentences inside their windows."""
    n = len(pairs.sentences)
    offsets = np.arange(max(check_windows(window)))
    needed = np.unique(
        np.concatenate(
            [
                (pairs.left[:, None] - offsets).ravel(),
                (pairs.right[:, None] + offsets).ravel(),
            ]
        ).clip(0, n - 1)
    )
    texts = [pairs.sentences[i] for i in needed]
    sub = embed_cached(embedder, texts, cache_dir=cache_dir, show_progress=progress)
    vectors = np.zeros((n, sub.shape[1]), dtype=np.float32)
    vectors[needed] = sub
    # Sentences not needed stay zero; windows never read them (a window that would is cut
    # at the document edge, and every sentence inside one is in ``needed``).
    return gap_sides(vectors, pairs.doc_of, pairs.left, pairs.right, window, pairs.reach)


def train_loop(
    model: PairModel,
    train: tuple[Any, Any, Any],
    dev: tuple[Any, Any, Any],
    config: TrainConfig | None = None,
    *,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """BCEWithLogits + AdamW; the state with the lowest dev loss is kept.

    With ``config.average`` the state evaluated and kept is the moving average of the
    weights (Polyak averaging; buffers such as batch-norm statistics are averaged too).

    Returns:
        One record per epoch: train loss, dev loss, dev accuracy at p = 0.5.
    """
    config = config or TrainConfig()
    torch.manual_seed(config.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    ltr, rtr, ytr = train
    ldv, rdv, ydv = dev
    if not len(ytr) or not len(ydv):
        raise ConfigError("training and dev pairs must not be empty")
    gen = torch.Generator().manual_seed(config.seed)
    history: list[dict[str, Any]] = []
    best_state, best_loss = None, float("inf")
    averaged = _Average(model, config.average) if config.average is not None else None
    epochs: Any = range(1, config.epochs + 1)
    if progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc=f"Training {model.kind}", unit="epoch")
    for epoch in epochs:
        model.train()
        order = torch.randperm(len(ytr), generator=gen)
        total = 0.0
        for i in range(0, len(order), config.batch_size):
            idx = order[i : i + config.batch_size]
            if len(idx) < 2:
                continue  # batch-norm needs two rows
            opt.zero_grad()
            loss = loss_fn(model(ltr[idx], rtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            if averaged is not None:
                averaged.update(model)
            total += float(loss.detach()) * len(idx)
        trained = None
        if averaged is not None:
            trained = {k: v.detach().clone() for k, v in model.state_dict().items()}
            model.load_state_dict(averaged.state)
        model.eval()
        with torch.no_grad():
            logits = model(ldv, rdv)
            dev_loss = float(loss_fn(logits, ydv))
            dev_acc = float(((logits > 0).float() == ydv).float().mean())
        history.append(
            {
                "epoch": epoch,
                "train_loss": total / len(ytr),
                "dev_loss": dev_loss,
                "dev_acc": dev_acc,
            }
        )
        if dev_loss < best_loss:
            best_loss = dev_loss
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if trained is not None:
            model.load_state_dict(trained)  # training goes on from the trained weights
    assert best_state is not None
    model.load_state_dict(best_state)
    model.eval()
    return history


class _Average:
    """An exponential moving average of a model's state (parameters and buffers)."""

    def __init__(self, model: torch.nn.Module, decay: float) -> None:
        self.decay = decay
        self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        for k, v in model.state_dict().items():
            if v.is_floating_point():
                self.state[k].mul_(self.decay).add_(v.detach(), alpha=1.0 - self.decay)
            else:
                self.state[k].copy_(v)  # counters (batch-norm's num_batches_tracked)


def accuracy_by_kind(
    model: PairModel, pairs: PairSet, embedder: BaseEmbedder, **kw: Any
) -> dict[str, float]:
    """Accuracy at the model's threshold for each kind of pair (positives, each negative kind)."""
    left, right, y = side_tensors(pairs, None, embedder, model.window, **kw)
    p = model.predict_proba(left.numpy(), right.numpy())
    correct = (p >= model.threshold) == (y.numpy() > 0.5)
    out = {"all": float(correct.mean())}
    for k, name in enumerate(PAIR_KINDS):
        mask = pairs.kind == k
        if mask.any():
            out[name] = float(correct[mask].mean())
    return out


def gap_probabilities(
    model: PairModel,
    documents: Sequence[SectionedDocument],
    embedder: BaseEmbedder,
    *,
    cache_dir: str | Path | None = None,
) -> list[tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]]:
    """p(same section) at every gap between consecutive sentences, with the gold boundaries."""
    sentences = [s for doc in documents for section in doc.sections for s in section]
    doc_of = np.asarray(
        [d for d, doc in enumerate(documents) for section in doc.sections for _ in section],
        dtype=np.int64,
    )
    vectors = embed_cached(embedder, sentences, cache_dir=cache_dir)
    out = []
    pos = 0
    for doc in documents:
        n = sum(len(section) for section in doc.sections)
        gold = np.zeros(max(n - 1, 0), dtype=bool)
        at = 0
        for section in doc.sections[:-1]:
            at += len(section)
            gold[at - 1] = True
        probs = np.zeros(0, dtype=np.float32)
        if n > 1:
            gaps = np.arange(pos, pos + n - 1)
            left, right = gap_sides(vectors, doc_of, gaps, gaps + 1, model.window)
            probs = model.predict_proba(left, right)
        out.append((probs, gold))
        pos += n
    return out


def choose_threshold(
    model: PairModel,
    sources: Sequence[tuple[str, Sequence[SectionedDocument]]],
    embedder: BaseEmbedder,
    *,
    grid: Sequence[float] = tuple(np.round(np.arange(0.02, 0.99, 0.02), 2)),
    rules: Sequence[str] = ("threshold",),
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """The threshold (and break rule) with the lowest mean Pk on development documents.

    Pk is computed over sentence gaps of each document; each source counts equally (the
    mean of its documents' Pk), so a source with many documents does not set the threshold
    alone. Every rule of ``rules`` is tried at every threshold of ``grid`` (see
    :func:`~semrag.chunking.boundary.rules.gap_breaks`); ties keep the earlier rule.

    Returns:
        ``threshold``, ``rule``, the mean dev ``pk`` there, and each source's Pk.

    Raises:
        ConfigError: with no development documents or an unknown rule.
    """
    scored = [
        (name, gap_probabilities(model, docs, embedder, cache_dir=cache_dir))
        for name, docs in sources
        if docs
    ]
    if not scored:
        raise ConfigError("no development documents to choose a threshold on")
    best: dict[str, Any] = {}
    for rule in rules:
        for t in grid:
            per_source = {
                name: float(np.mean([pk(gold, gap_breaks(probs, t, rule)) for probs, gold in docs]))
                for name, docs in scored
            }
            mean = float(np.mean(list(per_source.values())))
            if not best or mean < best["pk"]:
                best = {"threshold": float(t), "rule": rule, "pk": mean, "pk_by_source": per_source}
    return best


def config_record(config: TrainConfig) -> dict[str, Any]:
    """The training configuration as a JSON-ready dict."""
    return asdict(config)
