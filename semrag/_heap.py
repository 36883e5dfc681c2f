"""Giving freed heap back to the system after a large commit.

A commit of a million chunks frees gigabytes of small arrays (each document's chunk
vectors, once the dense part holds them) that sit between arrays still in use. glibc's
``free`` keeps such pages; the process's resident size then stays at its peak, and the
parts staged next grow it further. ``malloc_trim`` hands the free pages back (about a
quarter of a second for a few gigabytes of heap). Other C libraries (macOS, Windows,
musl) have no such call: there :func:`give_back` does nothing and says so.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

__all__ = ["TRIM_FROM_BYTES", "give_back"]

TRIM_FROM_BYTES = 64 << 20  # freeing less is not worth a walk of the heap


def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc
        return None


_TRIM = _malloc_trim()


def give_back(freed_bytes: int) -> bool:
    """Return the heap's free pages to the system when ``freed_bytes`` were just freed.

    Returns whether it did: ``False`` below :data:`TRIM_FROM_BYTES`, or without glibc.
    """
    if _TRIM is None or freed_bytes < TRIM_FROM_BYTES:
        return False
    _TRIM(0)
    return True
