"""Lazy loaders for heavy dependencies, with install hints."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any

from semrag.errors import missing_dependency

__all__ = ["INDEX_PACKAGES", "faiss", "import_part", "lazy_names", "quiet_openmp"]

INDEX_PACKAGES = frozenset({"faiss", "scipy", "networkx", "rank_bm25"})
"""What ``pip install "semrag[index]"`` adds to the core (which splits without them)."""
TORCH_PACKAGES = frozenset({"torch", "sentence_transformers", "transformers"})
"""What ``pip install "semrag[torch]"`` adds (other encoders, training, a GPU)."""


def import_part(module: str) -> ModuleType:
    """Import ``module``; a missing package of the ``index`` extra says how to install it.

    Raises:
        MissingDependencyError: when the import fails for want of one of
            :data:`INDEX_PACKAGES` or :data:`TORCH_PACKAGES` (naming the extra).
    """
    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in INDEX_PACKAGES | TORCH_PACKAGES:
            extra = "index" if missing in INDEX_PACKAGES else "torch"
            raise missing_dependency(missing, extra) from exc
        raise


def lazy_names(
    package: str, names: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names load on first use.

    ``names`` maps each name to the module that defines it; the first access imports that
    module (:func:`import_part`: a missing ``index`` package is a typed error naming the
    extra) and keeps the value in the package, so later accesses are plain lookups.
    ``__dir__`` lists ``public`` (the package's ``__all__``).
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = vars(import_part(module))[name]
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__


def quiet_openmp() -> None:
    """Let OpenMP threads sleep between parallel regions, unless the environment says.

    Sets ``OMP_WAIT_POLICY=PASSIVE`` when it is not set. With OpenMP's default the threads
    torch runs a model on spin after each call, waiting for more work; on a machine with
    few cores the next exact search's BLAS threads, and the next model call after a search,
    then wait for the cores. Measured on 2 cores (``benchmarks/omp_wait.py``): a query
    (the model, then an exact search of 20,279 vectors) 0.68x the time, batch embedding
    0.95x the throughput. The runtime reads the variable once, when it loads (with torch),
    so this runs just before semrag's MiniLM encoder imports its model (and torch), never
    when semrag is imported: a process that imported torch first (or a boundary model)
    keeps the policy it started with, and an explicit ``OMP_WAIT_POLICY`` is left as it is.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def faiss() -> Any:
    """Import and return the ``faiss`` module."""
    try:
        import faiss as module
    except ImportError as exc:  # pragma: no cover - the index extra
        raise missing_dependency("faiss", "index") from exc
    return module
