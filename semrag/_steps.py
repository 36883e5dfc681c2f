"""Drive step generators: the algorithm yields what it needs, the driver fetches it.

Algorithms that call an LLM are written once as generators that yield requests (prompts)
and receive replies. The sync driver answers with blocking calls; the async driver runs
each step of the generator in a worker thread (so its CPU work and any sync embedding
never block the event loop) and awaits the replies.

Algorithms that read an index (or a graph store) the same way yield :class:`Call`
requests, each naming the typed method to call and its async twin: the sync answer calls
the method, the async answer awaits the twin (on a database: a read on its async driver).
Reads that do not depend on each other are asked :class:`Together`: where one database
serves them all it runs them as one statement (one round trip).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from types import MethodType
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from semrag._validation import offers

__all__ = [
    "BatchedReads",
    "Call",
    "Done",
    "Together",
    "acall",
    "advance",
    "adrive",
    "call",
    "drive",
    "twin",
]

_Cap = TypeVar("_Cap")
Ask = TypeVar("Ask")
Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class Done:
    """The generator finished with ``value``."""

    value: Any


@dataclass(frozen=True, slots=True)
class Call:
    """A request to call ``method(*args, **kwargs)``, a typed method of the object read.

    The sync answer (:func:`call`) calls ``method``; the async one (:func:`acall`) awaits
    ``twin``, its async version, or runs ``method`` in a worker thread where the object has
    none (an in-memory store). Both are named at the request: "go to definition" follows
    a query from the algorithm into the reader that answers it.
    """

    method: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    twin: Callable[..., Awaitable[Any]] | None = None


def twin(
    obj: object, capability: type[_Cap], pick: Callable[[_Cap], Callable[..., Awaitable[Any]]]
) -> Callable[..., Awaitable[Any]] | None:
    """``pick(obj)``, the async twin of a read, when ``obj`` offers ``capability``; else ``None``.

    A capability is a protocol of async twins (a database reader's):
    ``Call(reader.chunks_of, (ids,), twin=twin(reader, AsyncReads, lambda r: r.achunks_of))``
    awaits the database where there is one, and runs the blocking read in a worker thread
    where there is not.
    """
    return pick(cast(_Cap, obj)) if offers(obj, capability) else None


@runtime_checkable
class BatchedReads(Protocol):
    """An object whose reads can run together with others on one database."""

    def read_steps(
        self, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, Any] | None:
        """The database and the steps of ``method``'s read, or ``None`` if it is not one."""
        ...


@dataclass(frozen=True, slots=True)
class Together:
    """Requests that do not depend on each other, answered with their replies in order.

    When every object called can give the steps of its read (:class:`BatchedReads`) on
    one and the same database, that database runs them at once (``run_together`` /
    ``arun_together``: on Neo4j one statement, one round trip). Otherwise they are
    answered one by one (the async answer: concurrently). The replies are the same
    either way.
    """

    calls: tuple[Call, ...]


def _shared(request: Together) -> tuple[Any, list[Any]] | None:
    """The database every call of ``request`` reads, with the steps of each; else ``None``."""
    database: Any = None
    steps: list[Any] = []
    for c in request.calls:
        owner = c.method.__self__ if isinstance(c.method, MethodType) else None
        found = (
            owner.read_steps(c.method, *c.args, **c.kwargs)
            if isinstance(owner, BatchedReads)
            else None
        )
        if found is None or (database is not None and found[0] is not database):
            for s in steps:
                s.close()
            return None
        database = found[0]
        steps.append(found[1])
    return database, steps


def call(request: Call | Together) -> Any:
    """Answer ``request`` with a blocking call of the method (of each, for :class:`Together`)."""
    if isinstance(request, Together):
        shared = _shared(request)
        if shared is not None:
            return tuple(shared[0].run_together(shared[1]))
        return tuple(call(c) for c in request.calls)
    return request.method(*request.args, **request.kwargs)


async def acall(request: Call | Together) -> Any:
    """Answer ``request`` with the method's async twin, or the method in a worker thread.

    The calls of a :class:`Together` that no one database runs at once are awaited
    concurrently.
    """
    if isinstance(request, Together):
        shared = _shared(request)  # the steps are made, not started
        if shared is not None:
            return tuple(await shared[0].arun_together(shared[1]))
        return tuple(await asyncio.gather(*(acall(c) for c in request.calls)))
    if request.twin is None:
        return await asyncio.to_thread(request.method, *request.args, **request.kwargs)
    return await request.twin(*request.args, **request.kwargs)


def advance(gen: Generator[Any, Any, Any], reply: Any, error: Exception | None = None) -> Any:
    """One step: the generator's next request, or :class:`Done` with its result.

    ``error``: the last request failed; it is raised inside the generator (at its
    ``yield``), which may catch it as it would catch a call's.
    """
    try:
        return gen.send(reply) if error is None else gen.throw(error)
    except StopIteration as stop:
        return Done(stop.value)


def drive(gen: Generator[Ask, Any, Result], answer: Callable[[Ask], Any]) -> Result:
    """Run ``gen`` to the end, answering each request with ``answer`` (blocking).

    A request that fails raises its error inside ``gen``.
    """
    reply, error = None, None
    while True:
        step = advance(gen, reply, error)
        if isinstance(step, Done):
            return step.value
        try:
            reply, error = answer(step), None
        except Exception as exc:
            reply, error = None, exc


async def adrive(
    gen: Generator[Ask, Any, Result], answer: Callable[[Ask], Awaitable[Any]]
) -> Result:
    """Async twin of :func:`drive`: generator steps run in a worker thread."""
    reply, error = None, None
    while True:
        step = await asyncio.to_thread(advance, gen, reply, error)
        if isinstance(step, Done):
            return step.value
        try:
            reply, error = await answer(step), None
        except Exception as exc:
            reply, error = None, exc
