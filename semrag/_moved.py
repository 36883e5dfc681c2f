"""The module paths of ``semrag.index`` before its parts, ingestion and storage had folders.

(Here, not in ``semrag.index``: the test configuration reads :data:`MOVED` without
importing the index, which needs the ``index`` extra.)

``import semrag.index.dense`` (and the other public modules that moved in 0.3) still works
until 0.4: each old path is a small module of its own that warns (``DeprecationWarning``)
and holds the same objects as the new one (``semrag.index.parts.dense``), so
``isinstance`` checks and pickles agree. Plain modules, no import hook: importing semrag
changes nothing outside it.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

MOVED = {
    f"semrag.index.{old}": f"semrag.index.{new}"
    for old, new in {
        "dense": "parts.dense",
        "external": "parts.external",
        "knn": "parts.knn",
        "live_ssg": "parts.live_ssg",
        "passages": "parts.passages",
        "pieces": "parts.pieces",
        "sparse": "parts.sparse",
        "ssg": "parts.ssg",
        "persist": "storage.persist",
        "presplit": "ingest.presplit",
    }.items()
}
"""Old module path: new module path (the paths 0.2 shipped)."""


def reexport(old: str, namespace: dict[str, Any]) -> None:
    """Fill the old module's ``namespace`` with the new module's names, with a warning."""
    new = MOVED[old]
    warnings.warn(
        f"{old} moved to {new} in semrag 0.3; the old path goes in 0.4",
        DeprecationWarning,
        stacklevel=3,
    )
    target = importlib.import_module(new)
    namespace.update(
        {k: v for k, v in vars(target).items() if not (k.startswith("__") and k.endswith("__"))}
    )
