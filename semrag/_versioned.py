"""One value derived from a versioned source, kept until the source's version changes.

The retrievers and the knowledge graph keep what they build from an index or a graph
(PPR's passage graph, community search's reports and their mentions, the graph's entity
vectors) for the version they read, and build it again after a change: :class:`Versioned`
is that cache, written once.

Examples:
    >>> kept = Versioned()
    >>> kept.get(1, lambda: "built at 1"), kept.get(1, lambda: "not built")
    ('built at 1', 'built at 1')
    >>> kept.get(2, lambda: "built at 2"), kept.peek(1)
    ('built at 2', None)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Versioned"]

_T = TypeVar("_T")


class Versioned(Generic[_T]):
    """A value and the version (any hashable key) it was made for; thread-safe.

    ``get`` makes it under the cache's lock, so concurrent callers of one version make
    it once; take a source's read lock before calling it (never the other way round).
    """

    def __init__(self) -> None:
        self._key: tuple[Hashable] | None = None  # wrapped: any key, None included
        self._value: _T | None = None
        self._lock = threading.Lock()

    def get(self, version: Hashable, make: Callable[[], _T]) -> _T:
        """The value made for ``version``: the kept one, or ``make()``'s (kept from then on)."""
        with self._lock:
            if self._key != (version,) or self._value is None:
                self._value, self._key = make(), (version,)
            return self._value

    def peek(self, version: Hashable) -> _T | None:
        """The value kept for ``version``, or ``None`` (nothing is made)."""
        with self._lock:
            return self._value if self._key == (version,) else None
