"""One connection to Neo4j: the driver, the async driver's loop, read steps, one error map."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import re
import threading
from collections.abc import Callable, Coroutine, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from semrag._steps import Done, adrive, advance, drive
from semrag.errors import (
    ConfigError,
    SemragError,
    StoreError,
    StoreUnavailableError,
    missing_dependency,
)


@dataclass(frozen=True, slots=True)
class Ask:
    """One read statement a step asks for (answered with its rows).

    ``columns``: the names of its result columns, for a statement that may run together
    with others in one (:func:`_together`); empty for one that always runs alone.
    """

    query: str
    params: dict[str, Any]
    columns: tuple[str, ...] = ()


_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _together(asks: Sequence[Ask]) -> Ask:
    """One statement running ``asks`` (each in a subquery, its rows as one list).

    Its one row holds, in column ``r<i>``, the rows of ask ``i`` as lists of its columns'
    values; each ask's parameters are renamed ``p<i>_<name>``.
    """
    parts, params = [], {}
    for i, a in enumerate(asks):
        query = _PARAMETER.sub(functools.partial(_renamed, i), a.query)
        params.update({f"p{i}_{name}": value for name, value in a.params.items()})
        row = ", ".join(f"`{c}`" for c in a.columns)
        parts.append(f"CALL () {{ CALL () {{ {query} }} RETURN collect([{row}]) AS r{i} }}")
    names = ", ".join(f"r{i}" for i in range(len(asks)))
    return Ask(" ".join(parts) + f" RETURN {names}", params)


def _apart(asks: Sequence[Ask], row: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
    """The rows of each ask from the one row of :func:`_together`."""
    return [
        [dict(zip(a.columns, r, strict=True)) for r in row[f"r{i}"]] for i, a in enumerate(asks)
    ]


def _lockstep(steps: Sequence[Steps[Any]]) -> Steps[list[Any]]:
    """Several reads' steps side by side: each round's statements run as one.

    A round asks every unfinished read for its next statement; those that name their
    columns run as one (:func:`_together`), any other on its own.
    """
    replies: list[Any] = [None] * len(steps)
    results: list[Any] = [None] * len(steps)
    pending = dict(enumerate(steps))
    while pending:
        asks: dict[int, Ask] = {}
        for i, s in list(pending.items()):
            step = advance(s, replies[i])
            if isinstance(step, Done):
                results[i] = step.value
                del pending[i]
            else:
                asks[i] = step
        joining = [i for i, a in asks.items() if a.columns]
        if len(joining) > 1:
            joined = [asks.pop(i) for i in joining]
            rows = yield _together(joined)
            for i, part in zip(joining, _apart(joined, rows[0]), strict=True):
                replies[i] = part
        for i, ask in asks.items():
            replies[i] = yield ask
    return results


_Result = TypeVar("_Result")
_Owner = TypeVar("_Owner")
_Args = ParamSpec("_Args")


@contextlib.contextmanager
def _raced_rows() -> Iterator[None]:
    """A row that a concurrent write emptied under a read is a :class:`StoreError`."""
    try:
        yield
    except (TypeError, KeyError) as exc:
        if isinstance(exc, SemragError):
            raise
        raise StoreError(
            f"a stored row changed under the read (a concurrent write?): {exc!r}; read again"
        ) from exc


def read_pair(
    steps: Callable[Concatenate[_Owner, _Args], Steps[_Result]],
    session: Callable[[_Owner], Neo4jSession],
) -> tuple[
    Callable[Concatenate[_Owner, _Args], _Result],
    Callable[Concatenate[_Owner, _Args], Coroutine[Any, Any, _Result]],
]:
    """A read written once, as steps: its blocking method and its async twin, made from them.

    In a class body, ``lookup, alookup = read_pair(_lookup_steps, lambda s: s.session)``:
    ``lookup(...)`` drives ``_lookup_steps(...)`` with blocking reads on the owner's
    session, ``alookup(...)`` with the async driver. They take the steps' arguments and
    carry their docstring; their names come from the steps' (``_x_steps``: ``x``, ``ax``).
    """
    name = steps.__name__.removeprefix("_").removesuffix("_steps")

    def read(owner: _Owner, /, *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        return session(owner).run_steps(steps(owner, *args, **kwargs))

    async def aread(owner: _Owner, /, *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        return await session(owner).arun_steps(steps(owner, *args, **kwargs))

    for fn, fn_name, doc in (
        (read, name, steps.__doc__),
        (aread, "a" + name, f"Async twin of :meth:`{name}`, on the async driver."),
    ):
        fn.__name__, fn.__doc__, fn.__module__ = fn_name, doc, steps.__module__
        fn.__qualname__ = steps.__qualname__.replace(steps.__name__, fn_name)
    return read, aread


Steps = Generator[Ask, list[dict[str, Any]], _Result]
"""A read written once as steps: the sync and the async method drive the same steps."""


class Neo4jSession:
    """One connection to a Neo4j 5 server: what every semrag class on Neo4j talks through.

    It owns the driver (and, at the first async read, an async driver on an I/O loop of
    its own: see :mod:`semrag.neo4j.graph_store`), runs read statements and read steps,
    writes in managed transactions, and maps every driver error to a semrag error in one
    place (:meth:`translated`). Each :class:`~semrag.neo4j.Neo4jGraphStore` holds one
    (``store.session``).

    Raises:
        StoreUnavailableError: if the server cannot be reached or refuses the credentials.
        MissingDependencyError: without ``pip install "semrag[neo4j]"``.
    """

    def __init__(
        self,
        uri: str = "bolt://localhost:7687",
        user: str = "neo4j",
        password: str = "",
        *,
        database: str | None = None,
        batch_size: int = 1000,
        retry_seconds: float = 15.0,
        connection_timeout: float = 10.0,
        driver: Any = None,
        async_driver: bool = True,
    ) -> None:
        try:
            import neo4j
        except ImportError as exc:
            raise missing_dependency("neo4j", "neo4j") from exc
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self._neo4j = neo4j
        self.uri = uri
        self.database = database
        self.batch_size = batch_size
        self.reads = 0
        """Read statements run so far (each one read transaction: one round trip)."""
        self._count_lock = threading.Lock()
        settings: dict[str, Any] = {
            "auth": (user, password),
            "max_transaction_retry_time": retry_seconds,
            "connection_timeout": connection_timeout,
            "connection_acquisition_timeout": connection_timeout,
            # the statements name labels and relationship types a database may not hold
            # yet (a count before the first edge): the server's notice of each would land
            # in the caller's log as a warning per statement
            "notifications_min_severity": "OFF",
        }
        # the async driver is opened with the same settings at the first async read
        self._async_settings = settings if driver is None and async_driver else None
        self._aio: AsyncDriverLoop | None = None
        self._closed = False
        self._aio_lock = threading.Lock()
        self._owns_driver = driver is None
        self._driver = driver or neo4j.GraphDatabase.driver(uri, **settings)
        try:
            self._call(self._driver.verify_connectivity)
        except BaseException:
            self.abandon()
            raise

    # -- plumbing -------------------------------------------------------------------------------
    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            mapped = self.translated(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def translated(self, exc: Exception) -> Exception | None:
        """The semrag error for a driver's exception (``None``: not the driver's)."""
        exc_mod = self._neo4j.exceptions
        if isinstance(exc, exc_mod.AuthError):
            return StoreUnavailableError(
                f"Neo4j at {self.uri} refused the credentials: {exc.message}"
            )
        if isinstance(exc, exc_mod.ServiceUnavailable | exc_mod.SessionExpired | OSError):
            return StoreUnavailableError(f"Neo4j at {self.uri} is unavailable: {exc}")
        if isinstance(exc, exc_mod.DriverError):
            return StoreUnavailableError(f"Neo4j driver error at {self.uri}: {exc}")
        if isinstance(exc, exc_mod.Neo4jError):
            return StoreError(f"Neo4j rejected a statement: {exc.code}: {exc.message}")
        return None

    def transact(self, work: Callable[[Any], Any], *, write: bool) -> Any:
        """Run ``work(tx)`` in one managed transaction (retried by the driver)."""

        def run() -> Any:
            with self._driver.session(database=self.database) as session:
                execute = session.execute_write if write else session.execute_read
                return execute(work)

        return self._call(run)

    def read_rows(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One read statement, through the driver's ``execute_query``.

        Retried like a transaction function and routed to any member of a cluster, it is
        one network round trip where a session's explicit transaction takes two.
        """
        with self._count_lock:
            self.reads += 1

        def run() -> list[dict[str, Any]]:
            records, _, _ = self._driver.execute_query(
                query,
                params,
                routing_=self._neo4j.RoutingControl.READ,
                database_=self.database,
            )
            return _values(records)

        return self._call(run)

    def run_steps(self, steps: Steps[_Result]) -> _Result:
        """Drive read steps with blocking reads.

        Raises:
            StoreError: when a row a concurrent write removed or changed under the read
                cannot be decoded (a ``null`` where a value was), never the raw error.
        """
        with _raced_rows():
            return drive(steps, lambda ask: self.read_rows(ask.query, **ask.params))

    async def arun_steps(self, steps: Steps[_Result]) -> _Result:
        """Drive read steps with the async driver (the steps run in worker threads)."""
        with _raced_rows():
            return await adrive(steps, lambda ask: self.aread_rows(ask.query, **ask.params))

    def run_together(self, steps: Sequence[Steps[Any]]) -> list[Any]:
        """Reads that do not depend on each other, in one round trip per step they take.

        Each round, the statements the reads ask for run as one statement (each in a
        subquery of its own); the results are each read's own.
        """
        return self.run_steps(_lockstep(steps))

    async def arun_together(self, steps: Sequence[Steps[Any]]) -> list[Any]:
        """Async twin of :meth:`run_together`, on the async driver."""
        return await self.arun_steps(_lockstep(steps))

    async def aread_rows(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """Async twin of :meth:`_read`, on the async driver (see the module doc).

        Cancelling the caller cancels the read on the I/O loop.
        """
        if self._async_settings is None:  # async_driver=False, or a driver given: sync
            return await asyncio.to_thread(self.read_rows, query, **params)
        with self._count_lock:
            self.reads += 1
        aio = self._async_loop(self._async_settings)
        try:
            return await asyncio.wrap_future(aio.submit(aio.read(query, params)))
        except Exception as exc:
            mapped = self.translated(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _async_loop(self, settings: Mapping[str, Any]) -> AsyncDriverLoop:
        with self._aio_lock:
            if self._closed:
                raise StoreUnavailableError(f"the store for {self.uri} is closed")
            if self._aio is None:
                self._aio = AsyncDriverLoop(
                    lambda: self._neo4j.AsyncGraphDatabase.driver(self.uri, **settings),
                    self._neo4j.RoutingControl.READ,
                    self.database,
                )
            return self._aio

    def write_rows(self, query: str, **params: Any) -> list[dict[str, Any]]:
        return self.transact(lambda tx: [r.data() for r in tx.run(query, params)], write=True)

    def write_batches(self, query: str, rows: Sequence[Any]) -> None:
        for i in range(0, len(rows), self.batch_size):
            self.write_rows(query, rows=rows[i : i + self.batch_size])

    def run_batched(self, query: str) -> None:
        """Run a ``CALL { ... } IN TRANSACTIONS`` statement (it needs an implicit transaction)."""

        def run() -> None:
            with self._driver.session(database=self.database) as session:
                session.run(query).consume()

        self._call(run)

    def close(self) -> None:
        """Close the driver (and the async driver and its I/O loop, if started)."""
        with self._aio_lock:
            aio, self._aio, self._closed = self._aio, None, True
        try:
            if aio is not None:
                aio.close()
        finally:
            self._driver.close()

    def abandon(self) -> None:
        """Close what this session opened itself (for a constructor that fails).

        A driver the caller gave stays open: it is the caller's to close.
        """
        if self._owns_driver:
            self.close()

    def __enter__(self) -> Neo4jSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _values(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Each record's values as they came.

    ``Record.data()`` walks every list and byte string (25 times slower on vectors); no
    statement here returns a node or relationship.
    """
    return [dict(r.items()) for r in records]


class AsyncDriverLoop:
    """An event loop in a daemon thread that owns one ``neo4j.AsyncDriver``.

    An async driver (its connections and locks) belongs to the loop it runs on; this
    one's loop is its own, so coroutines from any caller's loop are submitted to it
    (:meth:`submit`) and awaited there as futures.
    """

    def __init__(self, make: Callable[[], Any], routing: Any, database: str | None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="semrag-neo4j-io", daemon=True
        )
        self._thread.start()
        self._routing, self._database = routing, database

        async def open_driver() -> Any:
            return make()

        self._driver = self.submit(open_driver()).result()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Run ``coro`` on the I/O loop."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def read(self, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One read statement (runs on the I/O loop)."""
        records, _, _ = await self._driver.execute_query(
            query, params, routing_=self._routing, database_=self._database
        )
        return _values(records)

    def close(self) -> None:
        """Close the driver, stop the loop and join its thread."""
        try:
            self.submit(self._driver.close()).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


def _renamed(i: int, m: re.Match[str]) -> str:
    """The ``i``-th statement's parameter ``$name`` as ``$p{i}_name`` (statements joined)."""
    return f"$p{i}_{m[1]}"
