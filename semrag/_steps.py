"""Drive step generators: the algorithm yields what it needs, the driver fetches it.

Algorithms that call an LLM are written once as generators that yield requests (prompts)
and receive replies. The sync driver answers with blocking calls; the async driver runs
each step of the generator in a worker thread (so its CPU work and any sync embedding
never block the event loop) and awaits the replies.

Algorithms that read an index the same way yield :class:`Call` requests: the sync answer
calls the index's method, the async answer awaits its ``a``-prefixed twin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Call", "Done", "acall", "advance", "adrive", "call", "drive"]

Ask = TypeVar("Ask")
Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class Done:
    """The generator finished with ``value``."""

    value: Any


@dataclass(frozen=True, slots=True)
class Call:
    """A request to call ``target.<name>(*args)`` (answered by :func:`call` / :func:`acall`)."""

    name: str
    args: tuple[Any, ...]


def call(target: Any, request: Call) -> Any:
    """Answer ``request`` with a blocking call of ``target``'s method."""
    return getattr(target, request.name)(*request.args)


async def acall(target: Any, request: Call) -> Any:
    """Answer ``request`` with ``target``'s async twin (``a`` + name).

    Raises:
        AttributeError: if ``target`` has no such twin (callers check first).
    """
    return await getattr(target, "a" + request.name)(*request.args)


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
