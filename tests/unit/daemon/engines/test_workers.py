"""Worker pools bound both concurrency and queue length."""

import asyncio
import threading
import time

import pytest

from daemon.engines.workers import WorkerPool
from daemon.errors import Busy
from tests.helpers import eventually


async def test_runs_off_the_loop_and_refuses_when_full():
    pool = WorkerPool("test", workers=1, max_queue=1)
    gate = threading.Event()
    loop_thread = threading.get_ident()

    def job() -> int:
        gate.wait(5)
        return threading.get_ident()

    first = asyncio.ensure_future(pool.run(job))
    second = asyncio.ensure_future(pool.run(job))
    await asyncio.sleep(0.05)
    with pytest.raises(Busy, match="busy"):
        await pool.run(job)
    gate.set()
    assert loop_thread not in {await first, await second}
    pool.close()
    pool.close()


async def test_stream_consumes_in_worker_and_stops_early():
    pool = WorkerPool("test", workers=1, max_queue=4)
    produced = []

    def gen():
        for i in range(1000):
            produced.append(i)
            time.sleep(0.001)
            yield i

    got = []
    async for item in pool.stream(gen):
        got.append(item)
        if len(got) == 3:
            break
    assert got == [0, 1, 2]
    await asyncio.sleep(0.05)
    assert len(produced) < 100
    assert pool.pending == 0


async def test_stream_raises_worker_errors():
    pool = WorkerPool("test", workers=1, max_queue=4)

    def gen():
        yield 1
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        async for _ in pool.stream(gen):
            pass


async def test_close_with_queued_work_fails_fast_instead_of_hanging():
    pool = WorkerPool("test", workers=1, max_queue=4)
    gate = threading.Event()
    blocker = asyncio.ensure_future(pool.run(gate.wait, 5))
    await asyncio.sleep(0.05)

    def gen():
        yield 1

    async def consume():
        return [x async for x in pool.stream(gen)]

    queued_stream = asyncio.ensure_future(consume())
    queued_call = asyncio.ensure_future(pool.run(lambda: 1))
    await asyncio.sleep(0.05)
    pool.close()
    with pytest.raises(Busy, match="shutting down"):
        await asyncio.wait_for(queued_stream, 2)
    with pytest.raises(Busy, match="shutting down"):
        await asyncio.wait_for(queued_call, 2)
    gate.set()
    await blocker
    with pytest.raises(Busy):
        await pool.run(lambda: 1)


async def test_cancelling_a_stream_consumer_does_not_wait_for_the_worker():
    pool = WorkerPool("test", workers=1, max_queue=4)
    gate = threading.Event()
    got: list[int] = []

    def slow():
        yield 1
        gate.wait(10)  # the worker is busy until the test lets it go
        yield 2

    async def consume():
        async for item in pool.stream(slow):
            got.append(item)

    task = asyncio.ensure_future(consume())
    assert await eventually(lambda: got == [1])
    task.cancel()
    # Waiting for the worker would wait for the gate, which opens only after this.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert pool.pending == 1  # the thread is still busy: the slot stays taken
    gate.set()
    assert await eventually(lambda: pool.pending == 0)
