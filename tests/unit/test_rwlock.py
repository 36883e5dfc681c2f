"""The readers-writer lock: shared reads, a writer alone, and a waiting writer first."""

from __future__ import annotations

import threading

import pytest

from semrag._rwlock import RWLock


def test_a_writer_waits_for_the_last_reader_and_new_readers_wait_for_it():
    lock = RWLock()
    order: list[str] = []
    first = lock.acquire_read()  # the short form StoredRows uses
    second_in, second_out = threading.Event(), threading.Event()

    def reader() -> None:
        with lock.read():
            second_in.set()
            assert second_out.wait(10)
            order.append("reader 2 out")

    def writer() -> None:
        with lock.write():
            order.append("writer")

    def late_reader() -> None:
        with lock.read():
            order.append("late reader")

    threads = [threading.Thread(target=reader)]
    threads[0].start()
    assert second_in.wait(10)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    while not lock._waiting:  # the writer waits for both readers
        threading.Event().wait(0.001)
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()  # a reader that comes while a writer waits waits too
    threading.Event().wait(0.05)
    assert order == []
    lock.release_read(first)
    threading.Event().wait(0.05)
    assert order == []  # one reader is still inside
    second_out.set()
    for t in threads:
        t.join(10)
    assert order == ["reader 2 out", "writer", "late reader"]


def test_reads_nest_and_a_reader_cannot_start_a_write():
    lock = RWLock()
    held = lock.acquire_read()
    with lock.read():  # nested: never waits
        assert lock.reading()
    lock.release_read(held)
    assert not lock.reading()
    with lock.read(), pytest.raises(RuntimeError, match="cannot start a write"), lock.write():
        pass
    with lock.write():  # free again
        assert lock.reading()
