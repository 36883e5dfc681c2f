"""A dictionary of sets held as tuples while they are small (the graph's adjacency indexes)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

__all__ = ["SmallSets"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)


class SmallSets(Generic[K, V]):
    """``key -> set of values``, each set held as a tuple until it has :attr:`SMALL` values.

    The knowledge graph's indexes (an entity's relations and chunks, a name token's
    entities, a chunk's entities ...) are mostly sets of one to a few values, and an
    empty Python set already costs 216 bytes (a five-value one 728), a tuple of ``n``
    values ``40 + 8n``. A set only grows past :attr:`SMALL` values as a real ``set``, so a
    hub's additions stay amortised O(1). A key whose last value is discarded goes.

    Reads (:meth:`get`, :meth:`pop`, iteration) give a tuple or a set: a read-only view by
    contract (mutate through :meth:`add` and :meth:`discard` only). A tuple lists its
    values in insertion order.

    Examples:
        >>> s = SmallSets()
        >>> s.add("ada", "r1"); s.add("ada", "r2"); s.add("ada", "r1")
        >>> s.get("ada")
        ('r1', 'r2')
        >>> s.discard("ada", "r1"); s.discard("ada", "r2")
        >>> "ada" in s, s.get("ada")
        (False, ())
    """

    SMALL = 8
    __slots__ = ("_d",)

    def __init__(self) -> None:
        self._d: dict[K, tuple[V, ...] | set[V]] = {}

    def add(self, key: K, value: V) -> None:
        """Add ``value`` to ``key``'s set (nothing if it is there)."""
        got = self._d.get(key)
        if got is None:
            self._d[key] = (value,)
        elif type(got) is tuple:
            if value not in got:
                if len(got) < self.SMALL:
                    self._d[key] = (*got, value)
                else:
                    self._d[key] = {*got, value}
        else:
            got.add(value)  # type: ignore[union-attr]

    def update(self, key: K, values: Iterable[V]) -> None:
        """Add every value of ``values`` to ``key``'s set."""
        for value in values:
            self.add(key, value)

    def discard(self, key: K, value: V) -> None:
        """Remove ``value`` from ``key``'s set if it is there; an emptied key goes."""
        got = self._d.get(key)
        if got is None:
            return
        if type(got) is tuple:
            if value in got:
                rest = tuple(v for v in got if v != value)
                if rest:
                    self._d[key] = rest
                else:
                    del self._d[key]
        else:
            got.discard(value)  # type: ignore[union-attr]
            if not got:
                del self._d[key]

    def get(self, key: K, default: Collection[V] = ()) -> Collection[V]:
        """``key``'s values (a tuple or a set, not to be mutated), or ``default``."""
        return self._d.get(key, default)

    def pop(self, key: K, default: Collection[V] = ()) -> Collection[V]:
        """Remove ``key`` and return its values, or ``default``."""
        return self._d.pop(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator[K]:
        return iter(self._d)

    def items(self) -> Iterable[tuple[K, Collection[V]]]:
        """``(key, values)`` pairs, keys in insertion order."""
        return self._d.items()

    def __repr__(self) -> str:
        return f"SmallSets({len(self._d)} keys)"
