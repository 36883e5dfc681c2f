"""The installed version of semrag, for the modules that record it (saved indexes, weights).

Modules import it from here, not from ``semrag`` itself: no module climbs to the package's
``__init__``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__", "is_newer"]

try:
    __version__ = version("semrag")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"


def _release(version: object) -> tuple[int, ...]:
    parts = []
    for piece in str(version).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def is_newer(saved_by: object, running: str = __version__) -> bool:
    """Whether a file was written by a newer semrag than ``running`` (or an unknown one).

    Older files are read as their format version says (each loader checks it); a file from
    a newer release may hold what this one cannot read, which deserves a warning.

    Examples:
        >>> is_newer("0.0.1"), is_newer("99.0"), is_newer(None)
        (False, True, True)
    """
    saved = _release(saved_by)
    return not saved or saved > _release(running)
