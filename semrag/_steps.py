"""Drive step generators: the algorithm yields what it needs, the driver fetches it.

Algorithms that call an LLM are written once as generators that yield requests (prompts)
and receive replies. The sync driver answers with blocking calls; the async driver runs
each step of the generator in a worker thread (so its CPU work and any sync embedding
never block the event loop) and awaits the replies.

Algorithms that read an index (or a graph store) the same way yield :class:`Call`
requests: the sync answer calls the method, the async answer awaits its ``a``-prefixed
twin (on a database: a read on its async driver).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
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
    """A request to call ``<on>.<name>(*args, **kwargs)`` (see :func:`call` / :func:`acall`).

    ``on`` is the object called; ``None`` calls the target the driver was given.
    """

    name: str
    args: tuple[Any, ...]
    on: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)

    def of(self, target: Any) -> Any:
        """The object this request calls."""
        return target if self.on is None else self.on


def call(target: Any, request: Call) -> Any:
    """Answer ``request`` with a blocking call of the method."""
    return getattr(request.of(target), request.name)(*request.args, **request.kwargs)


async def acall(target: Any, request: Call) -> Any:
    """Answer ``request`` with the method's async twin (``a`` + name).

    An object with no such twin (an in-memory graph store, say) has its blocking method
    run in a worker thread.
    """
    obj = request.of(target)
    twin = getattr(obj, "a" + request.name, None)
    if twin is None:
        return await asyncio.to_thread(getattr(obj, request.name), *request.args, **request.kwargs)
    return await twin(*request.args, **request.kwargs)


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
