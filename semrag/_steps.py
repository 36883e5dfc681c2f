"""Drive step generators: the algorithm yields what it needs, the driver fetches it.

Algorithms that call an LLM are written once as generators that yield requests (prompts)
and receive replies. The sync driver answers with blocking calls; the async driver runs
each step of the generator in a worker thread (so its CPU work and any sync embedding
never block the event loop) and awaits the replies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Done", "advance", "adrive", "drive"]

Ask = TypeVar("Ask")
Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class Done:
    """The generator finished with ``value``."""

    value: Any


def advance(gen: Generator[Any, Any, Any], reply: Any) -> Any:
    """One step: the generator's next request, or :class:`Done` with its result."""
    try:
        return gen.send(reply)
    except StopIteration as stop:
        return Done(stop.value)


def drive(gen: Generator[Ask, Any, Result], answer: Callable[[Ask], Any]) -> Result:
    """Run ``gen`` to the end, answering each request with ``answer`` (blocking)."""
    reply = None
    while True:
        step = advance(gen, reply)
        if isinstance(step, Done):
            return step.value
        reply = answer(step)


async def adrive(
    gen: Generator[Ask, Any, Result], answer: Callable[[Ask], Awaitable[Any]]
) -> Result:
    """Async twin of :func:`drive`: generator steps run in a worker thread."""
    reply = None
    while True:
        step = await asyncio.to_thread(advance, gen, reply)
        if isinstance(step, Done):
            return step.value
        reply = await answer(step)
