"""The installed version of semrag, for the modules that record it (saved indexes, weights).

Modules import it from here, not from ``semrag`` itself: no module climbs to the package's
``__init__``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("semrag")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
