"""Reply audio to a Realtime client, paced as it plays, with a count of what it played.

Over a WebSocket Hearth cannot hear the client's speaker, so it keeps the client's
clock: each reply's audio goes out no more than :data:`LEAD_S` ahead of the time it
plays (a client plays what it receives, at once and in real time), and what has
played by now is what was sent less what is still ahead. That is how much of a
reply the person heard when they cut in (``conversation.item.truncated``'s
``audio_end_ms``), and why a barge-in leaves little audio queued in the client.

:class:`PacedPlayback` is the conversation's :class:`~daemon.speech.reply.Playback`:
``playing`` holds while audio is queued or still playing, so new speech stops it,
and ``clear`` drops what is queued. Events that must follow a reply's audio (its
``response.done``) wait in the same queue (:meth:`PacedPlayback.after`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

LEAD_S = 0.5
"""How far ahead of the client's playback audio is sent (s): enough to ride over a
network hiccup, little enough to stop soon on a barge-in."""
MAX_QUEUED_S = 300.0
"""Reply audio held at most (s): a longer reply is cut."""

Send = Callable[[dict[str, Any]], Awaitable[None]]
Action = Callable[[], Awaitable[None]]


@dataclass
class _Chunk:
    message: dict[str, Any]
    seconds: float


class PacedPlayback:
    """The client's player of reply audio, as far as Hearth can tell (see the module)."""

    def __init__(
        self, send: Send, lead_s: float = LEAD_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._send = send
        self._lead_s = lead_s
        self._clock = clock
        self._queue: deque[_Chunk | Action] = deque()
        self._queued_s = 0.0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sent_s = 0.0
        """Audio of the current reply sent so far."""
        self._ends_at = 0.0
        """When the client will have played everything sent (monotonic seconds)."""
        self._cut = False
        self.cut_ms: int | None = None
        """How much of the last cleared reply had played (ms); None: none was cleared."""

    # ---------------------------------------------------------------- Playback

    @property
    def playing(self) -> bool:
        """Whether reply audio is queued or still playing in the client."""
        return bool(self._queue) or self._ends_at > self._clock()

    def clear(self) -> None:
        """Barge-in: drop what is queued, and remember how much had played. The cut
        reply's later audio and events are dropped too, up to the next :meth:`begin`.
        Clearing it again keeps the count of the first cut."""
        if not self._cut:
            self.cut_ms = self.played_ms
        self._queue.clear()
        self._queued_s = 0.0
        self._ends_at = min(self._ends_at, self._clock())
        self._cut = True

    # ---------------------------------------------------------------- replies

    @property
    def played_ms(self) -> int:
        """How much of the current reply the client has played by now (ms)."""
        ahead = max(0.0, self._ends_at - self._clock())
        return max(0, round((self._sent_s - ahead) * 1000))

    @property
    def sent_ms(self) -> int:
        """How much of the current reply was sent (ms)."""
        return round(self._sent_s * 1000)

    def begin(self) -> None:
        """A new reply starts: its count starts at zero."""
        self._cut = False
        self._sent_s = 0.0
        self.cut_ms = None

    def play(self, message: dict[str, Any], seconds: float) -> bool:
        """Queue one audio event holding ``seconds`` of audio; False when it was
        dropped (the reply was cut, or too much is queued)."""
        if self._cut or self._queued_s + seconds > MAX_QUEUED_S:
            return False
        self._queue.append(_Chunk(message, seconds))
        self._queued_s += seconds
        self._wake.set()
        return True

    def after(self, action: Action) -> None:
        """Run ``action`` once the audio queued before it has been sent (dropped when
        the reply is cut first)."""
        if not self._cut:
            self._queue.append(action)
            self._wake.set()

    # ---------------------------------------------------------------- sending

    def start(self) -> None:
        """Begin sending (in a task of its own)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        """Stop sending; what is queued is dropped. Safe to call more than once."""
        self._queue.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            head = self._queue[0]
            if isinstance(head, _Chunk):
                wait = self._ends_at - self._clock() - self._lead_s
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue  # a barge-in may have emptied the queue meanwhile
                self._queue.popleft()
                self._queued_s -= head.seconds
                now = self._clock()
                self._ends_at = max(self._ends_at, now) + head.seconds
                self._sent_s += head.seconds
                await self._send(head.message)
            else:
                self._queue.popleft()
                await head()
