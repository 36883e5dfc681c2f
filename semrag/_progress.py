"""Progress bars on long work, as users of the frameworks expect them (tqdm).

``show_progress=None`` (the default of the index, the evaluations and the passage graph's
first derivation) means: a bar when the output is a terminal or a notebook and the work
lasts more than :data:`DELAY_S` seconds; none in CI (``CI`` set) or with
``SEMRAG_PROGRESS=0``. ``True`` / ``False`` say it outright.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from tqdm.auto import tqdm

__all__ = ["bar", "wanted"]

DELAY_S = 2.0
"""A bar appears only once the work has run this long (tqdm's ``delay``)."""

T = TypeVar("T")


def wanted(show_progress: bool | None) -> bool:
    """Whether to show a bar: the caller's word, else a terminal or notebook outside CI."""
    if show_progress is not None:
        return bool(show_progress)
    if os.environ.get("CI") or os.environ.get("SEMRAG_PROGRESS", "1") == "0":
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) or "ipykernel" in sys.modules


def bar(total: int, desc: str, unit: str, show_progress: bool | None) -> tqdm | None:
    """A tqdm bar over ``total`` items, or ``None`` when none is wanted."""
    if not wanted(show_progress):
        return None
    from tqdm.auto import tqdm

    delay = 0.0 if show_progress else DELAY_S
    return tqdm(total=total, desc=desc, unit=unit, delay=delay)


def over(
    items: Iterable[T], total: int, desc: str, unit: str, show_progress: bool | None
) -> Iterator[T]:
    """``items``, with a bar when one is wanted."""
    shown = bar(total, desc, unit, show_progress)
    if shown is None:
        yield from items
        return
    try:
        for item in items:
            yield item
            shown.update(1)
    finally:
        shown.close()
