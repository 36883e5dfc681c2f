"""Versioned: one value per version, made once however many threads ask."""

from __future__ import annotations

import threading
import time

from semrag._versioned import Versioned


def test_a_value_is_made_once_per_version_and_again_after_a_change():
    made: list[int] = []
    kept: Versioned[list[int]] = Versioned()

    def make(v: int) -> list[int]:
        made.append(v)
        return [v]

    assert kept.peek(1) is None
    first = kept.get(1, lambda: make(1))
    assert kept.get(1, lambda: make(99)) is first and kept.peek(1) is first
    assert kept.get((2, None), lambda: make(2)) == [2] and kept.peek(1) is None
    assert kept.get(None, lambda: make(3)) == [3]  # None is a version like any other
    assert made == [1, 2, 3]


def test_concurrent_readers_of_one_version_make_it_once():
    calls = []
    kept: Versioned[str] = Versioned()

    def slow() -> str:
        calls.append(1)
        time.sleep(0.05)
        return "built"

    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(kept.get(7, slow))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == ["built"] * 8 and len(calls) == 1
