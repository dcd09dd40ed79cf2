"""The session's ordered input: client events, acted on one at a time, in order.

Audio must reach the conversation in the order it came, a commit must follow the
audio before it, and a ``response.create`` must answer the turns committed before
it; only the events that stop something (a ``response.cancel``) must not wait behind
a slow VAD. So every other client event goes through one :class:`Lane`, read by one
task. The lane is bounded by the bytes it holds: a client that sends faster than
Hearth hears waits (its socket fills) rather than growing memory.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One client event to act on."""

    run: Callable[[], Awaitable[None]]
    client_event: str | None
    """The client's ``event_id`` (named in an error)."""
    size: int
    """Bytes of the message (what the lane's bound counts)."""


class Lane:
    """A FIFO of steps holding at most ``max_bytes`` (then :meth:`put` waits)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self._steps: deque[Step] = deque()
        self._changed = asyncio.Condition()

    async def put(self, step: Step) -> None:
        """Queue a step, waiting while too much is queued (a step larger than the
        bound alone still passes once the lane is empty)."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: not self._steps or self.queued_bytes + step.size <= self.max_bytes
            )
            self._steps.append(step)
            self.queued_bytes += step.size
            self._changed.notify_all()

    async def get(self) -> Step:
        """The next step (waits for one)."""
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._steps))
            step = self._steps.popleft()
            self.queued_bytes -= step.size
            self._changed.notify_all()
            return step

    def __len__(self) -> int:
        return len(self._steps)
