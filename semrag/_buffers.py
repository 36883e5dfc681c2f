"""Rows in a growing buffer whose published views never change (shared by several parts)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["GrowingRows"]

Floats = npt.NDArray[np.floating]


class GrowingRows:
    """Rows in a buffer with room to grow: appending never moves or writes earlier rows.

    A published version holds ``view`` (the first ``n`` rows); an append writes past them
    (or into a new, larger buffer), so that view never changes. :meth:`keep` makes a new
    buffer. Appending one document costs its rows, amortised, not a copy of them all.
    """

    def __init__(self, rows: Floats, *, headroom: float = 0.0) -> None:
        self.n = rows.shape[0]
        if headroom:  # room for the next changes without a copy of every row
            self.buf = np.empty((self.n + int(self.n * headroom), rows.shape[1]), rows.dtype)
            self.buf[: self.n] = rows
        else:
            self.buf = rows

    @property
    def view(self) -> Floats:
        view = self.buf[: self.n]
        view.flags.writeable = False
        return view

    def append(self, rows: Floats) -> None:
        need = self.n + rows.shape[0]
        if need > self.buf.shape[0]:
            shape = (max(need, 2 * self.buf.shape[0], 64), self.buf.shape[1])
            grown = np.empty(shape, self.buf.dtype)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : need] = rows
        self.n = need

    def keep(self, mask: npt.NDArray[np.bool_]) -> None:
        self.buf = self.buf[: self.n][mask]
        self.n = self.buf.shape[0]
