"""PSC and MFC: small pair models that say whether two sentences share a section.

Both read the frozen encoder's sentence embeddings ``e_i, e_j`` and project them with one
learned linear map ``W``:

* **PSC** (Projected Similarity Chunking): ``logit = (W e_i) . (W e_j) + b``.
* **MFC** (Metric Fusion Chunking): ``[dot, euclidean, manhattan]`` of the projections
  go through one linear layer to a logit.

``sigmoid(logit)`` is p(same section). Models save as ``config.json`` (constructor
arguments, the encoder's name and dimension, the library version) plus
``model.safetensors``; no pickle.

References:
    Allamraju et al., "Breaking It Down: Domain-Aware Semantic Segmentation for
    Retrieval Augmented Generation", §3.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import torch

from semrag.errors import ConfigError

__all__ = ["MFCModel", "PSCModel", "load_boundary_model"]


class _PairModel(torch.nn.Module):
    """Shared plumbing: config, CPU inference on numpy, save and load."""

    kind: ClassVar[str] = ""
    config_keys: ClassVar[tuple[str, ...]] = ("dim", "proj_dim", "encoder")

    def __init__(self, dim: int, *, proj_dim: int = 256, encoder: str = "all-MiniLM-L6-v2"):
        super().__init__()
        if dim < 1 or proj_dim < 1:
            raise ConfigError(f"dim and proj_dim must be >= 1, got {dim}, {proj_dim}")
        self.dim = dim
        self.proj_dim = proj_dim
        self.encoder = encoder
        self.proj = torch.nn.Linear(dim, proj_dim, bias=False)

    def get_config_dict(self) -> dict[str, Any]:
        """Constructor arguments, for ``config.json``."""
        return {key: getattr(self, key) for key in self.config_keys}

    def forward(self, left: Any, right: Any) -> Any:  # pragma: no cover - per subclass
        """Logits of p(same section) for batches of embedding pairs."""
        raise NotImplementedError

    def predict_proba(
        self,
        e_left: npt.ArrayLike,
        e_right: npt.ArrayLike,
        *,
        batch_size: int = 4096,
    ) -> npt.NDArray[np.float32]:
        """p(same section) for each pair of rows (CPU, no gradients).

        Args:
            e_left: ``(n, dim)`` embeddings of the first sentences.
            e_right: ``(n, dim)`` embeddings of the second sentences.
            batch_size: pairs per forward pass.

        Raises:
            ConfigError: if the embeddings do not have the model's dimension.
        """
        left = np.asarray(e_left, dtype=np.float32)
        right = np.asarray(e_right, dtype=np.float32)
        if left.ndim == 1:
            left, right = left[None, :], right[None, :]
        if left.shape != right.shape or left.ndim != 2 or left.shape[1] != self.dim:
            raise ConfigError(
                f"{self.kind} model expects two (n, {self.dim}) arrays from {self.encoder}; "
                f"got {left.shape} and {right.shape}"
            )
        out = np.empty(left.shape[0], dtype=np.float32)
        was_training = self.training
        self.eval()
        with torch.no_grad():
            for i in range(0, left.shape[0], batch_size):
                logits = self(
                    torch.from_numpy(left[i : i + batch_size]),
                    torch.from_numpy(right[i : i + batch_size]),
                )
                out[i : i + batch_size] = torch.sigmoid(logits).numpy()
        self.train(was_training)
        return out

    def save(self, directory: str | Path) -> Path:
        """Write ``config.json`` and ``model.safetensors`` to ``directory``."""
        from safetensors.torch import save_file

        from semrag import __version__

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {"kind": self.kind, "library_version": __version__, **self.get_config_dict()}
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(directory / "model.safetensors"))
        (directory / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        return directory

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(dim={self.dim}, proj_dim={self.proj_dim}, encoder={self.encoder!r})"


class PSCModel(_PairModel):
    """Projected Similarity Chunking: ``sigmoid((W e_i) . (W e_j) + b)``.

    Example:
        >>> import numpy as np
        >>> model = PSCModel(4, proj_dim=2)
        >>> model.predict_proba(np.ones((3, 4)), np.ones((3, 4))).shape
        (3,)
    """

    kind = "psc"

    def __init__(self, dim: int, *, proj_dim: int = 256, encoder: str = "all-MiniLM-L6-v2"):
        super().__init__(dim, proj_dim=proj_dim, encoder=encoder)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def forward(self, left: Any, right: Any) -> Any:
        """Logits of p(same section)."""
        return (self.proj(left) * self.proj(right)).sum(dim=-1) + self.bias


class MFCModel(_PairModel):
    """Metric Fusion Chunking: ``sigmoid(w . [dot, L2, L1] + b)`` over the projections."""

    kind = "mfc"

    def __init__(self, dim: int, *, proj_dim: int = 256, encoder: str = "all-MiniLM-L6-v2"):
        super().__init__(dim, proj_dim=proj_dim, encoder=encoder)
        self.head = torch.nn.Linear(3, 1)

    def forward(self, left: Any, right: Any) -> Any:
        """Logits of p(same section)."""
        a, b = self.proj(left), self.proj(right)
        diff = a - b
        features = torch.stack(
            [(a * b).sum(dim=-1), diff.norm(dim=-1), diff.abs().sum(dim=-1)], dim=-1
        )
        return self.head(features).squeeze(-1)


_KINDS: dict[str, type[_PairModel]] = {"psc": PSCModel, "mfc": MFCModel}


def load_boundary_model(directory: str | Path, *, expected_dim: int | None = None) -> _PairModel:
    """Load a PSC or MFC model saved with ``save``.

    Args:
        directory: the model directory (``config.json`` + ``model.safetensors``).
        expected_dim: the embedder's dimension; a mismatch raises.

    Raises:
        ConfigError: if the directory or its files are missing, the kind is unknown, or the
            weights were made for another embedding dimension.
    """
    from safetensors.torch import load_file

    from semrag import __version__

    directory = Path(directory)
    config_file, weights = directory / "config.json", directory / "model.safetensors"
    if not config_file.exists() or not weights.exists():
        raise ConfigError(
            f"no boundary model at {directory} (need config.json and model.safetensors)"
        )
    config = json.loads(config_file.read_text(encoding="utf-8"))
    kind = config.get("kind")
    if kind not in _KINDS:
        raise ConfigError(f"{config_file}: unknown model kind {kind!r} (expected psc or mfc)")
    if expected_dim is not None and config["dim"] != expected_dim:
        raise ConfigError(
            f"the {kind} weights at {directory} were trained for {config['dim']}-dimensional "
            f"embeddings of {config.get('encoder')}; the embedder gives {expected_dim}"
        )
    if config.get("library_version") != __version__:
        warnings.warn(
            f"{directory} was saved by semrag {config.get('library_version')}; "
            f"loading with {__version__}",
            UserWarning,
            stacklevel=2,
        )
    model = _KINDS[kind](config["dim"], proj_dim=config["proj_dim"], encoder=config["encoder"])
    model.load_state_dict(load_file(str(weights)))
    model.eval()
    return model
