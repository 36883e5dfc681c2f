"""Answering step requests: :class:`Call` and reads asked :class:`Together`."""

from __future__ import annotations

import asyncio

import pytest

from semrag._steps import Call, Together, acall, adrive, call, drive
from semrag.errors import NotIndexedError


class Database:
    """Runs the steps it is given together, recording each batch."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def run_together(self, steps):
        self.batches.append(len(steps))
        return [drive(s, _no_read) for s in steps]

    async def arun_together(self, steps):
        return self.run_together(steps)


def _no_read(ask):
    raise AssertionError(f"a read asked for {ask}")


class Part:
    """A method ``double`` (and its async twin) on a database, or on none."""

    def __init__(self, database: Database | None = None) -> None:
        self.database = database
        self.calls = 0

    def double(self, x):
        self.calls += 1
        return 2 * x

    def read_steps(self, method, *args):
        if self.database is None or method != self.double:
            return None
        return self.database, self._double_steps(*args)

    def _double_steps(self, x):
        return 2 * x
        yield  # a generator that asks for nothing


def test_calls_together_on_one_database_run_at_once_and_reply_in_order():
    db = Database()
    a, b = Part(db), Part(db)
    assert call(Together((Call(a.double, (1,)), Call(b.double, (5,))))) == (2, 10)
    assert db.batches == [2] and a.calls == b.calls == 0


@pytest.mark.parametrize("databases", ["none", "apart", "one has none"])
def test_calls_together_elsewhere_are_answered_one_by_one(databases):
    db = Database()
    a, b = {
        "none": (Part(), Part()),
        "apart": (Part(db), Part(Database())),
        "one has none": (Part(db), Part()),
    }[databases]
    request = Together((Call(a.double, (1,)), Call(b.double, (5,)), Call(a.double, (0,))))
    assert call(request) == (2, 10, 0)
    assert (a.calls, b.calls) == (2, 1) and db.batches == []


async def test_async_calls_together_elsewhere_are_awaited_concurrently():
    # each waits for the other to start: answered one after the other, they never finish
    started = [asyncio.Event(), asyncio.Event()]

    class Waiting:
        def __init__(self, me: int) -> None:
            self.me = me

        async def ameet(self):
            started[self.me].set()
            await started[1 - self.me].wait()
            return self.me

        def meet(self):  # pragma: no cover - the async twin is used
            raise AssertionError("the blocking method was called")

    first, second = Waiting(0), Waiting(1)
    request = Together((Call(first.meet, twin=first.ameet), Call(second.meet, twin=second.ameet)))
    assert await asyncio.wait_for(acall(request), 5) == (0, 1)


async def test_async_calls_together_on_one_database_run_at_once():
    db = Database()
    a, b = Part(db), Part(db)
    request = Together((Call(a.double, (2,)), Call(b.double, (3,))))
    assert await acall(request) == (4, 6)
    assert db.batches == [2]


def test_a_failed_read_raises_inside_the_steps_which_may_catch_it_and_go_on():
    def gone(n):
        raise NotIndexedError(f"chunk {n} is gone")

    def steps():
        tries = []
        for n in range(3):
            try:
                return (yield Call(gone if n < 2 else str, (n,))), tries
            except NotIndexedError as exc:
                tries.append(str(exc))
        return None, tries

    expected = ("2", ["chunk 0 is gone", "chunk 1 is gone"])
    assert drive(steps(), call) == expected
    assert asyncio.run(adrive(steps(), acall)) == expected


def test_a_failed_read_the_steps_do_not_catch_is_raised_by_the_driver():
    def steps():
        yield Call(int, ("not a number",))
        return "unreachable"

    with pytest.raises(ValueError, match="invalid literal"):
        drive(steps(), call)
    with pytest.raises(ValueError, match="invalid literal"):
        asyncio.run(adrive(steps(), acall))
