"""A bounded event stream: one writer side that waits when it is full, one reader.

The speech session and the pipeline hand their events to adapters through it, so a
slow (or absent) reader holds its producer back instead of growing memory.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class EventStream(Generic[T]):
    """A bounded queue that can be closed: the reader gets what was queued, then the end."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[T] = deque()
        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def __len__(self) -> int:
        return len(self._items)

    async def put(self, item: T) -> None:
        """Queue ``item``, waiting while the stream is full; dropped once it is closed."""
        while not self._closed and len(self._items) >= self.maxsize:
            await self._wait()
        if self._closed:
            return  # nobody will read it
        self._items.append(item)
        self._wake()

    async def get(self) -> T | None:
        """The next item, or None once the stream is closed and empty."""
        while not self._items and not self._closed:
            await self._wait()
        if not self._items:
            return None
        item = self._items.popleft()
        self._wake()
        return item

    def drop(self, unwanted: Callable[[T], bool]) -> int:
        """Remove the queued items that are ``unwanted`` (not yet read); how many."""
        kept = [item for item in self._items if not unwanted(item)]
        dropped = len(self._items) - len(kept)
        if dropped:
            self._items = deque(kept)
            self._wake()
        return dropped

    def close(self) -> None:
        """End the stream: writers stop waiting and the reader sees the end after the
        items already queued (safe to call more than once)."""
        self._closed = True
        self._wake()

    async def __aiter__(self) -> AsyncIterator[T]:
        while (item := await self.get()) is not None:
            yield item

    async def _wait(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        # Every waiter re-checks its own condition; waking in FIFO order keeps
        # blocked writers in the order they arrived.
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
