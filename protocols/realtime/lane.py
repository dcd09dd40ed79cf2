"""The session's ordered input: audio, commits, clears and changes of hearing.

Audio must reach the conversation in the order it came, and a commit must follow
the audio before it, while other client events (a ``response.cancel``) must not wait
behind a slow VAD. So those four kinds of step go through one :class:`Lane`, read by
one task, and the rest is handled as it arrives. The lane is bounded by the audio it
holds: a client that sends faster than Hearth hears waits (its socket fills) rather
than growing memory.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from protocols.realtime.audio import WireFormat


@dataclass(frozen=True)
class Audio:
    """Input audio, as 16-bit PCM of ``format``'s rate."""

    pcm: bytes
    format: WireFormat


@dataclass(frozen=True)
class Commit:
    """``input_audio_buffer.commit``."""

    client_event: str | None


@dataclass(frozen=True)
class Clear:
    """``input_audio_buffer.clear``."""

    client_event: str | None


@dataclass(frozen=True)
class Rehear:
    """The session changed how the conversation hears: stop hearing; the next audio
    opens a new way of hearing."""


Step = Audio | Commit | Clear | Rehear


class Lane:
    """A FIFO of steps holding at most ``max_bytes`` of audio (then :meth:`put` waits)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self._steps: deque[Step] = deque()
        self._changed = asyncio.Condition()

    async def put(self, step: Step) -> None:
        """Queue a step, waiting while too much audio is queued."""
        size = len(step.pcm) if isinstance(step, Audio) else 0
        async with self._changed:
            # A step larger than the bound alone still passes once the lane is empty.
            await self._changed.wait_for(
                lambda: not self._steps or self.queued_bytes + size <= self.max_bytes
            )
            self._steps.append(step)
            self.queued_bytes += size
            self._changed.notify_all()

    async def get(self) -> Step:
        """The next step (waits for one)."""
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._steps))
            step = self._steps.popleft()
            if isinstance(step, Audio):
                self.queued_bytes -= len(step.pcm)
            self._changed.notify_all()
            return step

    def __len__(self) -> int:
        return len(self._steps)
