"""Bounded worker pools: every model call runs here, never on the asyncio loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from daemon.errors import Busy

T = TypeVar("T")
_DONE = object()
_NEVER_RAN = object()
STREAM_BUFFER = 64
"""Items a streaming worker may run ahead of its consumer."""


class WorkerPool:
    """A thread pool with a bounded queue for one engine.

    ``workers`` calls run at once; at most ``max_queue`` more wait. A request beyond
    that fails fast with :class:`Busy` instead of growing memory without bound. A
    slot is held until the worker thread really finishes, also when the caller has
    stopped waiting, so ``pending`` and ``idle`` tell the truth about the threads.
    """

    def __init__(self, name: str, workers: int, max_queue: int) -> None:
        self.name = name
        self.workers = workers
        self.max_queue = max_queue
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix=name
        )
        self._pending = 0
        self._lock = threading.Lock()
        self._closed = False
        self.observer: Callable[[str, float], None] | None = None
        """Called with (pool name, seconds from submission to completion) per call."""

    @property
    def pending(self) -> int:
        """Calls running or queued now."""
        return self._pending

    @property
    def queued(self) -> int:
        """Calls waiting for a free worker now."""
        return max(0, self._pending - self.workers)

    @property
    def idle(self) -> bool:
        """True when a call submitted now would start at once."""
        return self._pending < self.workers

    def _submit(self, func: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise Busy(f"{self.name} engine is shutting down")
            if self._pending >= self.workers + self.max_queue:
                raise Busy(f"{self.name} engine is busy ({self._pending} requests queued)")
            self._pending += 1
        began = time.perf_counter()
        ctx = contextvars.copy_context()
        try:
            future = self._executor.submit(ctx.run, func, *args)
        except RuntimeError:  # the executor was shut down between the check and here
            self._leave()
            raise Busy(f"{self.name} engine is shutting down") from None
        future.add_done_callback(lambda done: self._leave(began, done))
        return future

    def _leave(
        self, began: float = 0.0, done: concurrent.futures.Future[Any] | None = None
    ) -> None:
        with self._lock:
            self._pending -= 1
        observer = self.observer
        if observer is not None and done is not None and not done.cancelled():
            observer(self.name, time.perf_counter() - began)

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """Run ``func(*args)`` in a worker thread and await its result."""
        future = self._submit(func, *args)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if future.cancelled() and task is not None and not task.cancelling():
                # Cancelled by close(), not by our caller.
                raise Busy(f"{self.name} engine is shutting down") from None
            raise

    async def stream(self, make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
        """Consume the blocking iterator ``make()`` in a worker, yielding its items.

        The iterator is created and consumed inside the worker thread, at most
        ``STREAM_BUFFER`` items ahead of the consumer. When the consumer stops early
        (or is cancelled) the worker stops after its current item; the consumer does
        not wait for that.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        slots = threading.Semaphore(STREAM_BUFFER)
        stop = threading.Event()

        def put(item: Any) -> bool:
            while not slots.acquire(timeout=0.1):
                if stop.is_set():
                    return False
            if stop.is_set():
                return False
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed
                return False
            return True

        def work() -> None:
            if stop.is_set():
                return
            try:
                for item in make():
                    if not put(item):
                        return
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                put(exc)
                return
            put(_DONE)

        future = self._submit(work)

        def never_ran(done: concurrent.futures.Future[None]) -> None:
            if done.cancelled():
                loop.call_soon_threadsafe(queue.put_nowait, _NEVER_RAN)

        future.add_done_callback(never_ran)
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    return
                if item is _NEVER_RAN:
                    raise Busy(f"{self.name} engine is shutting down")
                slots.release()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            future.cancel()  # only takes effect if it has not started

    def close(self) -> None:
        """Stop accepting work; queued calls are cancelled, running ones finish.

        Safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
