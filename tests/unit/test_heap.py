"""Freed heap goes back to the system after a large commit (glibc), and only then."""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest

from semrag import _heap


def _glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL("libc.so.6").malloc_trim  # noqa: B018 - does the symbol exist
    except (OSError, AttributeError):
        return False
    return True


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_too_little_freed_is_not_worth_a_walk_of_the_heap(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(_heap, "_TRIM", calls.append)
    assert not _heap.give_back(_heap.TRIM_FROM_BYTES - 1)
    assert _heap.give_back(_heap.TRIM_FROM_BYTES)
    assert calls == [0]


def test_without_glibc_nothing_is_given_back(monkeypatch):
    monkeypatch.setattr(_heap, "_TRIM", None)
    assert not _heap.give_back(1 << 40)


@pytest.mark.skipif(not _glibc(), reason="malloc_trim is glibc's")
def test_small_arrays_freed_between_live_ones_leave_the_resident_set():
    # 30 KB kept, 60 KB freed, interleaved (a record's sentence vectors beside its chunk
    # vectors): the freed chunks sit inside the heap, where free() keeps their pages
    kept, freed = [], []
    for _ in range(4_000):
        kept.append(np.ones(7_680, np.float32))
        freed.append(np.ones(15_360, np.float32))
    size = sum(a.nbytes for a in freed)
    del freed
    before = resident_mb()
    assert _heap.give_back(size)
    assert resident_mb() < before - 0.5 * size / 2**20
    assert sum(float(a[0]) for a in kept) == len(kept)
