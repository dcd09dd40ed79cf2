"""One request's deadline, shared by every wait of the request, armed at once or later.

Every request has a deadline (``limits.request_timeout_s``), and it belongs to the core:
a profile says how long it is and when it starts (an upload's whole exchange counts; a
live stream's starts at the end of its audio, since the speaker paces the rest). A
request's waits (reading its body, its events, its final) each run inside
:meth:`Deadline.bound`; arming the deadline later reaches the waits already under way,
and lifting it (the answer is known) frees them. Past it, a wait raises
:class:`~daemon.errors.RequestTimeout`, which every protocol maps once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from daemon.errors import RequestTimeout

T = TypeVar("T")


class Deadline:
    """A deadline of ``seconds``, from :meth:`arm` on (see the module docstring)."""

    def __init__(self, seconds: float, *, armed: bool = True) -> None:
        self.seconds = seconds
        self.at: float | None = None
        """When it passes (the loop's clock); None: not armed, or lifted."""
        self._lifted = False
        self._waits: set[asyncio.Timeout] = set()
        self._expiry: asyncio.TimerHandle | None = None
        if armed:
            self.arm()

    def arm(self) -> None:
        """Start counting now (once; a lifted deadline stays lifted)."""
        if self.at is not None or self._lifted:
            return
        self.at = asyncio.get_running_loop().time() + self.seconds
        for wait in self._waits:
            wait.reschedule(self.at)

    def lift(self) -> None:
        """The answer is known: waits from now on are not bounded (and nothing is
        called at the expiry)."""
        self._lifted = True
        self.at = None
        for wait in self._waits:
            wait.reschedule(None)
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    def on_expiry(self, callback: Callable[[RequestTimeout], None]) -> None:
        """Call ``callback`` with the error when the (armed) deadline passes, unless it
        is lifted first: for a request no single wait covers (a Realtime response
        gathers words, then replies)."""
        if self.at is None:
            return
        loop = asyncio.get_running_loop()
        self._expiry = loop.call_at(self.at, lambda: callback(self.error()))

    @property
    def passed(self) -> bool:
        """Whether it is armed and over."""
        return self.at is not None and asyncio.get_running_loop().time() >= self.at

    def error(self) -> RequestTimeout:
        """The error of a request past it."""
        return RequestTimeout(
            f"the request took longer than {self.seconds:g} s (limits.request_timeout_s)"
        )

    @contextlib.asynccontextmanager
    async def bound(self) -> AsyncIterator[None]:
        """Run the body within the deadline (RequestTimeout past it)."""
        wait = asyncio.timeout_at(self.at)
        try:
            async with wait:
                self._waits.add(wait)
                try:
                    yield
                finally:
                    self._waits.discard(wait)
        except TimeoutError:
            if not wait.expired():
                raise  # another timeout, not this deadline's
            raise self.error() from None


async def bounded(deadline: Deadline, items: AsyncIterator[T]) -> AsyncIterator[T]:
    """``items``, each waited for within ``deadline`` (RequestTimeout past it).

    Each wait is bounded alone: a bound held across a ``yield`` would cancel the
    reader's own work, not the wait. The source is closed when the reader stops."""
    try:
        while True:
            async with deadline.bound():
                try:
                    item = await anext(items)
                except StopAsyncIteration:
                    return
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()
