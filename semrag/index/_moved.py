"""The module paths of ``semrag.index`` before its parts, ingestion and storage had folders.

``import semrag.index.dense`` (and the other public modules that moved in 0.3) still
works until 0.4: it warns (``DeprecationWarning``) and gives a module holding the same
objects as the new one (``semrag.index.parts.dense``), so ``isinstance`` checks and
pickles agree.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

MOVED = {
    f"semrag.index.{old}": f"semrag.index.{new}"
    for old, new in {
        "dense": "parts.dense",
        "external": "parts.external",
        "knn": "parts.knn",
        "live_ssg": "parts.live_ssg",
        "part_set": "parts.part_set",
        "passages": "parts.passages",
        "pieces": "parts.pieces",
        "sparse": "parts.sparse",
        "ssg": "parts.ssg",
        "persist": "storage.persist",
        "prepared": "ingest.prepared",
        "presplit": "ingest.presplit",
    }.items()
}
"""Old module path: new module path."""


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved module under its old path: the new module's names, with a warning."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a plain module, filled by exec_module

    def exec_module(self, module: ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(
            f"{module.__name__} moved to {new} in semrag 0.3; the old path goes in 0.4",
            DeprecationWarning,
            stacklevel=2,
        )
        target = importlib.import_module(new)
        module.__dict__.update(
            {k: v for k, v in vars(target).items() if not (k.startswith("__") and k.endswith("__"))}
        )
        module.__doc__ = target.__doc__


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules())
