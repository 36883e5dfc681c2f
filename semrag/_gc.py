"""Pausing Python's cyclic garbage collector while a batch builds many small objects.

Splitting a batch makes tens of thousands of small objects (spans, chunks, the frameworks'
documents), none in a reference cycle: reference counting frees every one of them. Each
700 allocations still start a collection, and every few a full one walks every object
the process holds: in a process with LangChain loaded that was a fifth of a 1.5 MB split
(``benchmarks/splitting_speed.py``). :func:`collector_paused` turns the collector off for
the batch and back on after it, as :mod:`timeit` does while it times. The switch is the
process's: another thread's cyclic garbage waits for the end of the batch (reference
counting still frees the rest as it goes).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

__all__ = ["collector_paused", "paused_collector"]

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Turn the cyclic collector off inside the block, back on after it if it was on.

    A collector another caller turned off stays off; a block inside another's pause (or
    on another thread meanwhile) leaves the switch to the outer one.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def paused_collector(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate ``fn`` to run inside :func:`collector_paused`."""

    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return fn(*args, **kwargs)

    return run
