"""The cores the LLM shares: its threads follow the other engines' running calls, and a
hold (a reply's first phrase being synthesized) keeps it waiting, within a bound."""

from __future__ import annotations

import threading
import time

from daemon.engines.cores import CoreShare
from daemon.engines.workers import WorkerPool


async def test_the_llm_takes_the_cores_the_other_engines_leave() -> None:
    asr, tts = WorkerPool("asr", 1, 4), WorkerPool("tts", 2, 4)
    share = CoreShare(4, [asr, tts], base=1)
    assert share.llm_threads() == 4  # alone: every core
    started, release = threading.Event(), threading.Event()

    def busy() -> None:
        started.set()
        release.wait(5)

    decode = asr.run(busy)
    import asyncio

    task = asyncio.ensure_future(decode)
    assert await asyncio.to_thread(started.wait, 5)
    assert share.llm_threads() == 3  # a decode runs: one core less
    release.set()
    await task
    assert share.llm_threads() == 4
    assert CoreShare(2, [asr]).base == 1  # half the cores by default
    assert CoreShare(1, [asr], base=None).llm_threads() == 1  # never none
    asr.close()
    tts.close()


def test_a_hold_keeps_the_llm_waiting_until_it_ends() -> None:
    share = CoreShare(2, [])
    waited: list[float] = []

    def step() -> None:
        began = time.perf_counter()
        share.wait_turn()
        waited.append(time.perf_counter() - began)

    share.wait_turn()  # nothing holds it: at once
    with share.hold():
        llm = threading.Thread(target=step)
        llm.start()
        time.sleep(0.2)
        assert llm.is_alive()  # still waiting for the phrase
    llm.join(5)
    assert not llm.is_alive() and 0.15 < waited[0] < 2.0
    assert share.held_s >= 0.15


def test_a_hold_that_never_ends_keeps_the_llm_only_so_long() -> None:
    share = CoreShare(2, [], max_hold_s=0.1)
    with share.hold():
        began = time.perf_counter()
        share.wait_turn()
        assert 0.08 < time.perf_counter() - began < 2.0
