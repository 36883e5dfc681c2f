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
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from semrag.chunking.boundary.data import PairSet
from semrag.chunking.boundary.models import MFCModel, PSCModel, _PairModel
from semrag.embeddings import BaseEmbedder
from semrag.errors import ConfigError

__all__ = ["TrainConfig", "embed_cached", "encoder_name", "fit_boundary_model"]


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


def encoder_name(embedder: BaseEmbedder) -> str:
    """A stable name for the embedder (recorded with trained weights)."""
    path = getattr(embedder, "model_path", None)
    if path:
        return str(path)
    if type(embedder).__name__ == "SentenceTransformerEmbedder":
        return "all-MiniLM-L6-v2"
    return getattr(embedder, "name", type(embedder).__name__)


def embed_cached(
    embedder: BaseEmbedder,
    texts: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
    block: int = 4096,
) -> npt.NDArray[np.float32]:
    """Embed ``texts``, reading and writing an on-disk cache keyed by encoder and texts."""
    path = None
    if cache_dir is not None:
        h = hashlib.sha256(encoder_name(embedder).encode())
        for t in texts:
            h.update(t.encode("utf-8", "surrogatepass") + b"\0")
        path = Path(cache_dir) / f"embeddings-{h.hexdigest()[:32]}.npy"
        if path.exists():
            cached = np.load(path, allow_pickle=False)
            if cached.shape[0] == len(texts):
                return cached
    parts = []
    iterator: Any = range(0, len(texts), block)
    if show_progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="Embedding sentences", unit="block")
    for i in iterator:
        parts.append(embedder.embed(list(texts[i : i + block])))
    vectors = np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy")
        os.close(fd)
        np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp, path)
    return vectors


def _tensors(pairs: PairSet, vectors: npt.NDArray[np.float32]) -> tuple[Any, Any, Any]:
    return (
        torch.from_numpy(vectors[pairs.left]),
        torch.from_numpy(vectors[pairs.right]),
        torch.from_numpy(pairs.label),
    )


def fit_boundary_model(
    kind: str,
    train: PairSet,
    dev: PairSet,
    embedder: BaseEmbedder,
    *,
    config: TrainConfig | None = None,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
) -> tuple[_PairModel, list[dict[str, float]]]:
    """Train a PSC or MFC model and keep the epoch with the lowest dev loss.

    Args:
        kind: ``"psc"`` or ``"mfc"``.
        train: training pairs (see :func:`~semrag.chunking.boundary.data.sample_pairs`).
        dev: development pairs (used only to choose the epoch).
        embedder: the frozen sentence encoder.
        config: hyper-parameters.
        cache_dir: where sentence embeddings are cached between runs.
        show_progress: progress bars.

    Returns:
        The trained model (in eval mode) and one record per epoch (train loss, dev loss,
        dev accuracy at threshold 0.5).

    Raises:
        ConfigError: on an unknown kind or empty training or dev pairs.
    """
    config = config or TrainConfig()
    classes = {"psc": PSCModel, "mfc": MFCModel}
    if kind not in classes:
        raise ConfigError(f"model must be 'psc' or 'mfc', got {kind!r}")
    if not len(train) or not len(dev):
        raise ConfigError("training and dev pairs must not be empty")
    xtr = embed_cached(embedder, train.sentences, cache_dir=cache_dir, show_progress=show_progress)
    xdv = embed_cached(embedder, dev.sentences, cache_dir=cache_dir, show_progress=show_progress)
    torch.manual_seed(config.seed)
    model = classes[kind](xtr.shape[1], proj_dim=config.proj_dim, encoder=encoder_name(embedder))
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    ltr, rtr, ytr = _tensors(train, xtr)
    ldv, rdv, ydv = _tensors(dev, xdv)
    gen = torch.Generator().manual_seed(config.seed)
    history: list[dict[str, float]] = []
    best_state, best_loss = None, float("inf")
    epochs: Any = range(1, config.epochs + 1)
    if show_progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc=f"Training {kind}", unit="epoch")
    for epoch in epochs:
        model.train()
        order = torch.randperm(len(ytr), generator=gen)
        total = 0.0
        for i in range(0, len(order), config.batch_size):
            idx = order[i : i + config.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(ltr[idx], rtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
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
    assert best_state is not None
    model.load_state_dict(best_state)
    model.eval()
    return model, history


def config_record(config: TrainConfig) -> dict[str, Any]:
    """The training configuration as a JSON-ready dict."""
    return asdict(config)
