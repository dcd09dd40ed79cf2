"""Worker pools bound both concurrency and queue length."""

import asyncio
import threading
import time

import pytest

from daemon.errors import Busy
from daemon.workers import WorkerPool


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
