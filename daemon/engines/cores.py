"""The CPU's cores between the engines: how many threads the LLM generates with now.

On a small box the LLM's generation is the last step between a transcript and the
voice's first words, and llama.cpp generates each token with the threads it is given.
More threads help only while the cores are free: while a decode, a turn check, a
synthesis or a speaker embedding runs (their worker pools say so), the LLM generates
with its base threads; alone, with every core. The VAD and wake pools are not counted:
their calls are a millisecond every few tens of milliseconds.

While the voice synthesizes the first phrase of a reply, the LLM waits (:meth:`hold`):
that phrase is what the person hears first, and a generating LLM beside it about doubles
its synthesis time (bench/RESULTS.md, "Half a second"). A hold is short (one phrase) and
bounded: the LLM goes on after ``max_hold_s`` whatever holds it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence

from daemon.engines.workers import WorkerPool

MAX_HOLD_S = 0.5
"""The longest the LLM waits for a hold (a phrase synthesizes in 50-150 ms)."""


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class CoreShare:
    """Who else computes now, and so how many threads the LLM may use (thread-safe)."""

    def __init__(
        self,
        cores: int,
        others: Sequence[WorkerPool],
        base: int | None = None,
        max_hold_s: float = MAX_HOLD_S,
    ) -> None:
        """
        Args:
            cores: the cores to share.
            others: the pools whose running calls each take a core from the LLM.
            base: the LLM's threads beside them (None: half the cores, at least one).
            max_hold_s: the longest a hold keeps the LLM waiting.
        """
        self.cores = max(1, cores)
        self.base = max(1, base if base is not None else self.cores // 2)
        self._others = list(others)
        self._max_hold_s = max_hold_s
        self._holds = 0
        self._changed = threading.Condition()
        self.held_s = 0.0
        """Seconds the LLM spent waiting on holds (tests and benchmarks read it)."""

    def llm_threads(self) -> int:
        """Threads for the LLM's next step: the cores the other engines leave free."""
        busy = sum(min(pool.pending, pool.workers) for pool in self._others)
        return max(self.base, self.cores - busy)

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Keep the LLM waiting while the block runs (a reply's first phrase)."""
        with self._changed:
            self._holds += 1
        try:
            yield
        finally:
            with self._changed:
                self._holds -= 1
                self._changed.notify_all()

    def wait_turn(self) -> None:
        """In the LLM's thread, before a step: wait while a hold lasts (bounded)."""
        with self._changed:
            if not self._holds:
                return
            began = time.perf_counter()
            self._changed.wait_for(lambda: not self._holds, self._max_hold_s)
            self.held_s += time.perf_counter() - began
