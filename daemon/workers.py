"""Bounded worker pools: every model call runs here, never on the asyncio loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .errors import Busy

T = TypeVar("T")
_DONE = object()


class WorkerPool:
    """A thread pool with a bounded queue for one engine.

    ``workers`` calls run at once; at most ``max_queue`` more wait. A request beyond
    that fails fast with :class:`Busy` instead of growing memory without bound.
    """

    def __init__(self, name: str, workers: int, max_queue: int) -> None:
        self.name = name
        self.workers = workers
        self.max_queue = max_queue
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._pending = 0
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pending(self) -> int:
        """Calls running or queued now."""
        return self._pending

    @property
    def idle(self) -> bool:
        """True when a call submitted now would start at once."""
        return self._pending < self.workers

    def _enter(self) -> None:
        with self._lock:
            if self._closed:
                raise Busy(f"{self.name} engine is shutting down")
            if self._pending >= self.workers + self.max_queue:
                raise Busy(f"{self.name} engine is busy ({self._pending} requests queued)")
            self._pending += 1

    def _leave(self) -> None:
        with self._lock:
            self._pending -= 1

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """Run ``func(*args)`` in a worker thread and await its result."""
        self._enter()
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        try:
            return await loop.run_in_executor(self._executor, ctx.run, func, *args)
        finally:
            self._leave()

    async def stream(self, make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
        """Consume the blocking iterator ``make()`` in a worker, yielding its items.

        The iterator is created and consumed inside the worker thread. When the
        consumer stops early, the worker stops at the next item.
        """
        self._enter()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
        stop = threading.Event()

        def put(item: Any) -> None:
            asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

        def work() -> None:
            try:
                for item in make():
                    if stop.is_set():
                        break
                    put(item)
                put(_DONE)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                if not stop.is_set():
                    put(exc)
            finally:
                self._leave()

        try:
            future = loop.run_in_executor(self._executor, work)
        except BaseException:
            self._leave()
            raise
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            # Unblock a worker waiting on a full queue, then let it finish.
            while not future.done():
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    await asyncio.sleep(0.005)

    def close(self) -> None:
        """Stop accepting work; running calls finish. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
