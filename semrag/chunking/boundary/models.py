"""PSC and MFC: small pair models that say whether two sides of a gap share a section.

Both read the frozen encoder's embeddings ``e_i, e_j`` of the two sides of a gap (one
sentence each in the paper; the mean of ``window`` sentences per side when trained so, or
the concatenation of such means at several windows, e.g. ``window=(1, 3, 8)``) and
project them with one learned linear map ``W``:

* **PSC** (Projected Similarity Chunking): ``logit = (W e_i) . (W e_j) + b``.
* **MFC** (Metric Fusion Chunking): ``[dot, euclidean, manhattan]`` of the projections,
  standardised (a batch-norm layer without affine terms: the three metrics live on very
  different scales), go through one linear layer to a logit.

``sigmoid(logit)`` is p(same section). The classes are estimators: :meth:`~PairModel.fit`
on labelled pairs, :meth:`~PairModel.predict_proba` on sentence pairs or on vectors,
:meth:`~PairModel.save` and :meth:`~PairModel.load`. A saved model is ``config.json``
(constructor arguments, the encoder's identity, the threshold and break rule chosen on
development data, the library version) plus ``model.safetensors``; no pickle.

The encoder's identity is its name, a fingerprint of its weight files when it has them,
and the embeddings of four fixed probe sentences. :meth:`~PairModel.check_encoder`
accepts an embedder whose fingerprint matches, or whose probe embeddings match (cosine
>= 0.99 each), and raises otherwise, so weights are never run on another encoder's
vectors that merely share the dimension.

References:
    Allamraju et al., "Breaking It Down: Domain-Aware Semantic Segmentation for
    Retrieval Augmented Generation", §3.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt
import torch

from semrag.chunking.boundary.rules import check_rule
from semrag.embeddings import BaseEmbedder, Embedder, as_embedder
from semrag.errors import ConfigError
from semrag.fingerprint import MIN_PROBE_COSINE, PROBE_TEXTS, EmbedderFingerprint

if TYPE_CHECKING:
    from semrag.chunking.boundary.data import PairSet
    from semrag.chunking.boundary.train import TrainConfig

__all__ = [
    "PROBE_SENTENCES",
    "MFCModel",
    "PSCModel",
    "encoder_identity",
    "fit_boundary_model",
    "load_boundary_model",
]

PROBE_SENTENCES = PROBE_TEXTS
"""Texts whose embeddings identify an encoder (recorded with trained weights)."""


def encoder_identity(embedder: BaseEmbedder) -> dict[str, Any]:
    """Name, weights fingerprint (or ``None``) and probe embeddings of an embedder."""
    weights = getattr(embedder, "weights_fingerprint", None)  # a local model's files
    fingerprint = EmbedderFingerprint.of(embedder)
    return {
        "name": fingerprint.name,
        "fingerprint": weights() if callable(weights) else None,
        "probe": np.round(fingerprint.probe.astype(np.float64), 5).tolist(),
    }


class PairModel(torch.nn.Module):
    """Shared plumbing: config, training, CPU inference, encoder check, save and load."""

    kind: ClassVar[str] = ""

    def __init__(
        self,
        dim: int,
        *,
        proj_dim: int = 256,
        window: int | Sequence[int] = 1,
        encoder: dict[str, Any] | str | None = None,
        threshold: float = 0.5,
        rule: str = "threshold",
    ):
        super().__init__()
        from semrag.chunking.boundary.data import check_windows

        if dim < 1 or proj_dim < 1:
            raise ConfigError(f"dim and proj_dim must be >= 1, got {dim}, {proj_dim}")
        self.windows = check_windows(window)
        if not 0.0 < threshold < 1.0:
            raise ConfigError(f"threshold must be within (0, 1), got {threshold}")
        self.rule = check_rule(rule, type(self).__name__)
        self.dim = dim
        self.proj_dim = proj_dim
        self.encoder = {"name": encoder} if isinstance(encoder, str) else encoder
        self.threshold = float(threshold)
        self.history_: list[dict[str, Any]] = []
        self.proj = torch.nn.Linear(dim * len(self.windows), proj_dim, bias=False)

    @property
    def window(self) -> int | tuple[int, ...]:
        """Sentences per side: one int, or the windows whose means are concatenated."""
        return self.windows[0] if len(self.windows) == 1 else self.windows

    @property
    def side_dim(self) -> int:
        """Width of one side vector: ``dim`` times the number of windows."""
        return self.dim * len(self.windows)

    def _as_sides(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Side vectors of width ``side_dim``.

        An ``(n, dim)`` array is one vector per side at every window (a side given whole,
        as a text pair's side is).
        """
        if x.ndim == 2 and x.shape[1] == self.dim and len(self.windows) > 1:
            return np.tile(x, (1, len(self.windows)))
        return x

    @property
    def encoder_name(self) -> str:
        """Name of the encoder the model was trained on (``"unknown"`` if not recorded)."""
        return str((self.encoder or {}).get("name", "unknown"))

    def get_config_dict(self) -> dict[str, Any]:
        """Constructor arguments, for ``config.json``."""
        return {
            "dim": self.dim,
            "proj_dim": self.proj_dim,
            "window": list(self.windows) if len(self.windows) > 1 else self.windows[0],
            "threshold": self.threshold,
            "rule": self.rule,
            "encoder": self.encoder,
        }

    def forward(self, left: Any, right: Any) -> Any:  # pragma: no cover - per subclass
        """Logits of p(same section) for batches of side vectors."""
        raise NotImplementedError

    # -- the estimator ---------------------------------------------------------------------

    def fit(
        self,
        pairs: PairSet | Sequence[tuple[str, str]],
        labels: Sequence[float] | None = None,
        *,
        embedder: BaseEmbedder,
        dev: PairSet | Sequence[tuple[str, str]] | None = None,
        dev_labels: Sequence[float] | None = None,
        config: TrainConfig | None = None,
        cache_dir: str | Path | None = None,
        show_progress: bool = False,
    ) -> PairModel:
        """Train on labelled pairs; keep the epoch with the lowest dev loss.

        Args:
            pairs: a :class:`~semrag.chunking.boundary.data.PairSet` (its sides are
                ``window``-sentence means), or ``(left_text, right_text)`` pairs (each text
                is one side, embedded whole).
            labels: 1 = same section, 0 = not; required with text pairs.
            embedder: the frozen encoder; its identity is recorded in the model.
            dev: development pairs to choose the epoch (default: 10% of ``pairs``).
            dev_labels: labels of text dev pairs.
            config: hyper-parameters (:class:`~semrag.chunking.boundary.train.TrainConfig`).
            cache_dir: on-disk cache of sentence embeddings between runs.
            show_progress: progress bars.

        Returns:
            ``self``, in eval mode, with ``history_`` holding one record per epoch.

        Raises:
            ConfigError: on empty or mislabelled input, or an embedder of another dimension.
        """
        from semrag.chunking.boundary.train import side_tensors, train_loop

        if int(embedder.dim) != self.dim:
            raise ConfigError(
                f"the embedder gives {embedder.dim}-dimensional vectors; "
                f"this model takes {self.dim}"
            )

        def sides(items: Any, item_labels: Any) -> tuple[Any, Any, Any]:
            left, right, y = side_tensors(
                items,
                item_labels,
                embedder,
                self.window,
                cache_dir=cache_dir,
                progress=show_progress,
            )
            return (
                torch.from_numpy(self._as_sides(left.numpy())),
                torch.from_numpy(self._as_sides(right.numpy())),
                y,
            )

        train_sides = sides(pairs, labels)
        if dev is None:
            train_sides, dev_sides = _hold_out(
                train_sides, seed=0 if config is None else config.seed
            )
        else:
            dev_sides = sides(dev, dev_labels)
        self.encoder = encoder_identity(embedder)
        self.history_ = train_loop(self, train_sides, dev_sides, config, progress=show_progress)
        return self

    def predict_proba(
        self,
        pairs: Sequence[tuple[str, str]] | npt.ArrayLike,
        right: npt.ArrayLike | None = None,
        *,
        embedder: Embedder | None = None,
        batch_size: int = 4096,
    ) -> npt.NDArray[np.float32]:
        """p(same section) for each pair (CPU, no gradients).

        Args:
            pairs: ``(left_text, right_text)`` pairs (needs ``embedder``), or an ``(n, dim)``
                array of left side vectors (with ``right``).
            right: ``(n, dim)`` right side vectors, when ``pairs`` are vectors.
            embedder: the encoder for text pairs (checked with :meth:`check_encoder`).
            batch_size: pairs per forward pass.

        Raises:
            ConfigError: if the vectors do not have the model's dimension, or text pairs come
                without an embedder or with one the model was not trained on.
        """
        if right is None:
            if embedder is None:
                raise ConfigError("predict_proba on text pairs needs embedder=")
            self.check_encoder(embedder)
            texts = [str(t) for pair in pairs for t in pair]  # type: ignore[union-attr]
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32).reshape(-1, 2, self.dim)
            left, right_ = vectors[:, 0], vectors[:, 1]
        else:
            left = np.asarray(pairs, dtype=np.float32)
            right_ = np.asarray(right, dtype=np.float32)
        if left.ndim == 1:
            left, right_ = left[None, :], right_[None, :]
        left, right_ = self._as_sides(left), self._as_sides(right_)
        if left.shape != right_.shape or left.ndim != 2 or left.shape[1] != self.side_dim:
            wide = f" or (n, {self.side_dim})" if self.side_dim != self.dim else ""
            raise ConfigError(
                f"{self.kind} model expects two (n, {self.dim}){wide} arrays from "
                f"{self.encoder_name}; got {left.shape} and {right_.shape}"
            )
        out = np.empty(left.shape[0], dtype=np.float32)
        was_training = self.training
        self.eval()
        with torch.no_grad():
            for i in range(0, left.shape[0], batch_size):
                logits = self(
                    torch.from_numpy(left[i : i + batch_size]),
                    torch.from_numpy(right_[i : i + batch_size]),
                )
                out[i : i + batch_size] = torch.sigmoid(logits).numpy()
        self.train(was_training)
        return out

    def check_encoder(self, embedder: Embedder) -> None:
        """Raise unless ``embedder`` is the encoder the weights were trained on.

        Accepted: the same weights fingerprint, or probe embeddings within cosine 0.99 of
        the recorded ones. A model that records no encoder (built by hand) accepts any
        embedder of its dimension.

        Raises:
            ConfigError: naming both encoders.
        """
        dim = int(embedder.dim)
        if dim != self.dim:
            raise ConfigError(
                f"the {self.kind} weights expect {self.dim}-dimensional embeddings of "
                f"{self.encoder_name}; the embedder gives {dim}"
            )
        recorded = self.encoder or {}
        if "probe" not in recorded:
            return
        fingerprint = getattr(embedder, "weights_fingerprint", None)
        if recorded.get("fingerprint") and callable(fingerprint):
            if fingerprint() == recorded["fingerprint"]:
                return
        trained = EmbedderFingerprint.from_dict(
            {"name": self.encoder_name, "dim": self.dim, "probe": recorded["probe"]}
        )
        given = EmbedderFingerprint.of(as_embedder(embedder))
        if not trained.matches(given):
            raise ConfigError(
                f"the {self.kind} weights were trained on {self.encoder_name}; the given "
                f"embedder ({given.name}) embeds the probe sentences differently (cosine "
                f"{trained.similarity(given):.3f} < {MIN_PROBE_COSINE}). "
                "Use the encoder the weights were trained on, or train weights for this one "
                "(semrag train-boundary)."
            )

    # -- persistence -----------------------------------------------------------------------

    def save(self, directory: str | Path) -> Path:
        """Write ``config.json`` and ``model.safetensors`` to ``directory``."""
        from safetensors.torch import save_file

        from semrag._version import __version__

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {"kind": self.kind, "library_version": __version__, **self.get_config_dict()}
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(directory / "model.safetensors"))
        (directory / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> PairModel:
        """Load a model saved with :meth:`save` (of this class's kind).

        Raises:
            ConfigError: if the directory holds no model or a model of another kind.
        """
        model = load_boundary_model(directory)
        if cls.kind and model.kind != cls.kind:
            raise ConfigError(f"{directory} holds a {model.kind} model, not {cls.kind}")
        return model

    def __repr__(self) -> str:
        name = type(self).__name__
        return (
            f"{name}(dim={self.dim}, proj_dim={self.proj_dim}, window={self.window}, "
            f"encoder={self.encoder_name!r}, threshold={self.threshold:g}, rule={self.rule!r})"
        )


def _hold_out(sides: tuple[Any, Any, Any], *, seed: int) -> tuple[Any, Any]:
    left, right, y = sides
    n = len(y)
    if n < 10:
        raise ConfigError(f"need at least 10 pairs to hold out a dev set, got {n}")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    cut = n // 10
    dev, train = order[:cut], order[cut:]
    return (left[train], right[train], y[train]), (left[dev], right[dev], y[dev])


class PSCModel(PairModel):
    """Projected Similarity Chunking: ``sigmoid((W e_i) . (W e_j) + b)``.

    Examples:
        >>> import numpy as np
        >>> model = PSCModel(4, proj_dim=2)
        >>> model.predict_proba(np.ones((3, 4)), np.ones((3, 4))).shape
        (3,)
    """

    kind = "psc"

    def __init__(self, dim: int, **kwargs: Any):
        super().__init__(dim, **kwargs)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def forward(self, left: Any, right: Any) -> Any:
        """Logits of p(same section)."""
        return (self.proj(left) * self.proj(right)).sum(dim=-1) + self.bias


class MFCModel(PairModel):
    """Metric Fusion Chunking: ``sigmoid(w . scale([dot, L2, L1]) + b)`` over the projections."""

    kind = "mfc"

    def __init__(self, dim: int, **kwargs: Any):
        super().__init__(dim, **kwargs)
        self.scale = torch.nn.BatchNorm1d(3, affine=False)
        self.head = torch.nn.Linear(3, 1)

    def forward(self, left: Any, right: Any) -> Any:
        """Logits of p(same section)."""
        a, b = self.proj(left), self.proj(right)
        diff = a - b
        features = torch.stack(
            [(a * b).sum(dim=-1), diff.norm(dim=-1), diff.abs().sum(dim=-1)], dim=-1
        )
        return self.head(self.scale(features)).squeeze(-1)


_KINDS: dict[str, type[PairModel]] = {"psc": PSCModel, "mfc": MFCModel}


def fit_boundary_model(
    kind: str,
    train: PairSet,
    dev: PairSet,
    embedder: BaseEmbedder,
    *,
    config: TrainConfig | None = None,
    window: int | Sequence[int] = 1,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
) -> tuple[PairModel, list[dict[str, Any]]]:
    """Build a PSC or MFC model for ``embedder`` and :meth:`~PairModel.fit` it.

    Args:
        kind: ``"psc"`` or ``"mfc"``.
        train: training pairs (see :func:`~semrag.chunking.boundary.data.sample_pairs`).
        dev: development pairs (used only to choose the epoch).
        embedder: the frozen sentence encoder.
        config: hyper-parameters.
        window: sentences per side, or several windows whose means are concatenated.
        cache_dir: where sentence embeddings are cached between runs.
        show_progress: progress bars.

    Returns:
        The trained model (in eval mode) and its per-epoch history.

    Raises:
        ConfigError: on an unknown kind or empty training or dev pairs.
    """
    from semrag.chunking.boundary.train import TrainConfig as Defaults

    config = config or Defaults()
    classes = {"psc": PSCModel, "mfc": MFCModel}
    if kind not in classes:
        raise ConfigError(f"model must be 'psc' or 'mfc', got {kind!r}")
    if not len(train) or not len(dev):
        raise ConfigError("training and dev pairs must not be empty")
    torch.manual_seed(config.seed)
    model = classes[kind](embedder.dim, proj_dim=config.proj_dim, window=window)
    model.fit(
        train,
        embedder=embedder,
        dev=dev,
        config=config,
        cache_dir=cache_dir,
        show_progress=show_progress,
    )
    return model, model.history_


def load_boundary_model(directory: str | Path, *, expected_dim: int | None = None) -> PairModel:
    """Load a PSC or MFC model saved with ``save``.

    Args:
        directory: the model directory (``config.json`` + ``model.safetensors``).
        expected_dim: the embedder's dimension; a mismatch raises.

    Raises:
        ConfigError: if the directory or its files are missing or damaged, the kind is
            unknown, or the weights were made for another embedding dimension.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from semrag._version import __version__, is_newer

    directory = Path(directory)
    config_file, weights = directory / "config.json", directory / "model.safetensors"
    if not config_file.exists() or not weights.exists():
        raise ConfigError(
            f"no boundary model at {directory} (need config.json and model.safetensors)"
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        kind, dim = config.get("kind"), int(config["dim"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{config_file} is not a boundary model config: {exc}") from exc
    if kind not in _KINDS:
        raise ConfigError(f"{config_file}: unknown model kind {kind!r} (expected psc or mfc)")
    encoder = config.get("encoder")
    if expected_dim is not None and dim != expected_dim:
        name = encoder.get("name") if isinstance(encoder, dict) else encoder
        raise ConfigError(
            f"the {kind} weights at {directory} were trained for {dim}-dimensional "
            f"embeddings of {name}; the embedder gives {expected_dim}"
        )
    if is_newer(config.get("library_version")):
        warnings.warn(
            f"{directory} was saved by semrag {config.get('library_version')}; "
            f"loading with {__version__}",
            UserWarning,
            stacklevel=2,
        )
    model = _KINDS[kind](
        dim,
        proj_dim=int(config.get("proj_dim", 256)),
        window=config.get("window", 1),
        encoder=encoder,
        threshold=float(config.get("threshold", 0.5)),
        rule=str(config.get("rule", "threshold")),
    )
    try:
        model.load_state_dict(load_file(str(weights)))
    except (SafetensorError, RuntimeError, OSError) as exc:
        raise ConfigError(f"{weights} does not hold {kind} weights of this shape: {exc}") from exc
    model.eval()
    return model
