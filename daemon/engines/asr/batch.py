"""Decode utterances that are ready at the same time in one batched model call.

Sessions call ``AsrModel.transcribe`` from worker threads and block until their
transcript is back. :class:`Batcher` queues those calls: the first one waits at
most ``window_s`` for others to join, then one of the waiting threads runs the
whole batch (up to ``max_batch`` requests that share a key, i.e. decoding options
a batch can share) and hands every caller its own result. No thread of its own:
the callers take turns running batches, ``runners`` at a time, so there is
nothing to start or stop. When a batch is running, the next requests queue up and
go together as soon as it ends.

:func:`take` is the pure decision (which requests go now, or how long to wait),
so the timing rules are tested with a fake clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Q = TypeVar("Q")
R = TypeVar("R")

AUTO_MAX_BATCH = {"cuda": 8, "cpu": 1}
"""``asr.max_batch: 0`` per device. On for CUDA, where a batch costs little more than one
utterance. Off on the CPU: with ten clients at once on 2 cores a batch cut the p95 by 6-13 %
but every client waited for the whole batch, so the median doubled (bench/RESULTS.md,
"Batching")."""


def batch_size(max_batch: int, device: str) -> int:
    """The batch cap for a model on ``device`` (cpu, cuda or cuda:N); 0 means auto."""
    if max_batch > 0:
        return max_batch
    return AUTO_MAX_BATCH["cpu" if device == "cpu" else "cuda"]


@dataclass
class Pending(Generic[Q]):
    """One queued request."""

    key: Hashable
    """Requests batch together only when their keys are equal."""
    item: Q
    arrived: float
    """Clock reading (s) when it was queued."""
    done: bool = False
    result: object = None
    error: BaseException | None = None


@dataclass(frozen=True)
class BatchPlan(Generic[Q]):
    """What :func:`take` decided: a batch to run now, or seconds to wait."""

    batch: list[Pending[Q]] = field(default_factory=list)
    wait_s: float = 0.0


def take(
    pending: Sequence[Pending[Q]], now: float, window_s: float, max_batch: int
) -> BatchPlan[Q]:
    """The batch to run now (the oldest request and those sharing its key), or how long to wait.

    A batch goes when it is full or when its oldest request has waited
    ``window_s``; so no request waits for others longer than the window.
    """
    if not pending:
        return BatchPlan()
    head = pending[0]
    group = [p for p in pending if p.key == head.key][:max_batch]
    waited = now - head.arrived
    if len(group) >= max_batch or waited >= window_s:
        return BatchPlan(batch=group)
    return BatchPlan(wait_s=window_s - waited)


class Batcher(Generic[Q, R]):
    """Queue blocking calls and run them in batches (see the module docstring)."""

    def __init__(
        self,
        run: Callable[[list[Q]], list[R]],
        window_s: float,
        max_batch: int,
        runners: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._run = run
        self.window_s = window_s
        self.max_batch = max(1, max_batch)
        self.runners = max(1, runners)
        self._clock = clock
        self._pending: list[Pending[Q]] = []
        self._running = 0
        self._cond = threading.Condition()
        self.batches: list[int] = []
        """Sizes of the batches run so far (the last 1000), for logs and tests."""

    def submit(self, key: Hashable, item: Q) -> R:
        """Queue ``item``, take part in running batches, and return its result (blocking)."""
        request: Pending[Q] = Pending(key, item, self._clock())
        with self._cond:
            self._pending.append(request)
            self._cond.notify_all()
            while not request.done:
                if self._running >= self.runners:
                    self._cond.wait()
                    continue
                decision = take(self._pending, self._clock(), self.window_s, self.max_batch)
                if not decision.batch:
                    self._cond.wait(decision.wait_s)
                    continue
                for chosen in decision.batch:
                    self._pending.remove(chosen)
                self._running += 1
                self._cond.release()
                try:
                    self._execute(decision.batch)
                finally:
                    self._cond.acquire()
                    self._running -= 1
                    self._cond.notify_all()
        if request.error is not None:
            raise request.error
        return request.result  # type: ignore[return-value]

    def _execute(self, batch: list[Pending[Q]]) -> None:
        """Run one batch outside the lock; every request gets a result or the error."""
        try:
            results = self._run([p.item for p in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"batch of {len(batch)} gave {len(results)} results")
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            for p in batch:
                p.error, p.done = exc, True
            return
        for p, result in zip(batch, results, strict=True):
            p.result, p.done = result, True
        self.batches = [*self.batches[-999:], len(batch)]
