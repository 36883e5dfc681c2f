"""Drive step generators: the algorithm yields what it needs, the driver fetches it.

Algorithms that call an LLM are written once as generators that yield requests (prompts)
and receive replies. The sync driver answers with blocking calls; the async driver runs
each step of the generator in a worker thread (so its CPU work and any sync embedding
never block the event loop) and awaits the replies.

Algorithms that read an index (or a graph store) the same way yield :class:`Call`
requests: the sync answer calls the method, the async answer awaits its ``a``-prefixed
twin (on a database: a read on its async driver). Reads that do not depend on each other
are asked :class:`Together`: where one database serves them all it runs them as one
statement (one round trip).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Call", "Done", "Together", "acall", "advance", "adrive", "call", "drive"]

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


@dataclass(frozen=True, slots=True)
class Together:
    """Requests that do not depend on each other, answered with their replies in order.

    When every object called can give the steps of its read (``read_steps(name, *args,
    **kwargs)`` returning ``(database, steps)``) on one and the same database, that
    database runs them at once (``run_together`` / ``arun_together``: on Neo4j one
    statement, one round trip). Otherwise they are answered one by one (the async answer:
    concurrently). The replies are the same either way.
    """

    calls: tuple[Call, ...]


def _shared(target: Any, request: Together) -> tuple[Any, list[Any]] | None:
    """The database every call of ``request`` reads, with the steps of each; else ``None``."""
    database: Any = None
    steps: list[Any] = []
    for c in request.calls:
        read_steps = getattr(c.of(target), "read_steps", None)
        found = read_steps(c.name, *c.args, **c.kwargs) if read_steps is not None else None
        if found is None or (database is not None and found[0] is not database):
            for s in steps:
                s.close()
            return None
        database = found[0]
        steps.append(found[1])
    return database, steps


def call(target: Any, request: Call | Together) -> Any:
    """Answer ``request`` with a blocking call of the method (of each, for :class:`Together`)."""
    if isinstance(request, Together):
        shared = _shared(target, request)
        if shared is not None:
            return tuple(shared[0].run_together(shared[1]))
        return tuple(call(target, c) for c in request.calls)
    return getattr(request.of(target), request.name)(*request.args, **request.kwargs)


async def acall(target: Any, request: Call | Together) -> Any:
    """Answer ``request`` with the method's async twin (``a`` + name).

    An object with no such twin (an in-memory graph store, say) has its blocking method
    run in a worker thread. The calls of a :class:`Together` that no one database runs
    at once are awaited concurrently.
    """
    if isinstance(request, Together):
        shared = _shared(target, request)  # the steps are made, not started
        if shared is not None:
            return tuple(await shared[0].arun_together(shared[1]))
        return tuple(await asyncio.gather(*(acall(target, c) for c in request.calls)))
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
