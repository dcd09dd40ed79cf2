"""The one player of reply audio: paced to the client's clock, cut on barge-in.

Hearth cannot hear the client's speaker, so it keeps the client's clock: a reply's audio
goes out no more than a lead ahead of the time it plays (a client plays what it
receives, at once and in real time), and what has played by now is what was sent less
what is still ahead. That is how much of a reply the person heard when they cut in, and
why a barge-in leaves little audio queued in the client. Every transport that plays
replies uses this player: a WebRTC track takes 20 ms frames from it at their time, a
Realtime socket 100 ms events; the adapter only frames the audio for its wire (Opus
packets, base64 events) and hands the frames in with their length.

:class:`ReplyPlayer` is a conversation's :class:`~daemon.speech.reply.Playback`:
``playing`` holds while audio is queued or still playing, so new speech stops it, and
``clear`` drops what is queued and every frame of the cut reply handed in after it,
up to the next :meth:`ReplyPlayer.begin`. Actions that must follow a reply's audio
(a Realtime ``response.done``) wait in the same queue (:meth:`ReplyPlayer.after`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
Action = Callable[[], Awaitable[None]]

LEAD_S = 0.5
"""How far ahead of the client's playback audio is sent by default (s): enough to ride
over a network hiccup, little enough to stop soon on a barge-in."""
MAX_QUEUED_S = 300.0
"""Reply audio held at most by default (s): a longer reply is cut."""


@dataclass(frozen=True)
class Played(Generic[T]):
    """A frame whose time has come."""

    frame: T
    seconds: float
    """How long it plays."""
    at: float
    """When it starts playing on the client's clock (the player's clock, s): a frame
    after a pause starts later than the last one ended."""


@dataclass
class _Frame(Generic[T]):
    frame: T
    seconds: float


class ReplyPlayer(Generic[T]):
    """The client's player of reply audio, as far as Hearth can tell (see the module).

    Args:
        lead_s: how far ahead of playback a frame goes out.
        max_queued_s: the most audio held (s); frames past it are refused.
        late_s: how late a frame may go out and still keep the schedule (a real-time
            transport catches up on a late loop; a socket's client plays what it gets,
            so 0 starts a new schedule at any delay).
        clock: the clock (seconds), for tests.
    """

    def __init__(
        self,
        lead_s: float = LEAD_S,
        max_queued_s: float = MAX_QUEUED_S,
        *,
        late_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lead_s = lead_s
        self._max_queued_s = max_queued_s
        self._late_s = late_s
        self._clock = clock
        self._queue: deque[_Frame[T] | Action] = deque()
        self._queued_s = 0.0
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._sent_s = 0.0
        """Audio of the current reply sent so far."""
        self._ends_at = 0.0
        """When the client will have played everything sent (the clock's seconds)."""
        self._cut = False
        self.cut_ms: int | None = None
        """How much of the last cleared reply had played (ms); None: none was cleared."""

    # ---------------------------------------------------------------- Playback

    @property
    def playing(self) -> bool:
        """Whether reply audio is queued or still playing in the client."""
        return bool(self._queue) or self._ends_at > self._clock()

    @property
    def queued(self) -> bool:
        """Whether frames wait to go out (a transport that plays what it is handed at
        once, a track, is done when none wait)."""
        return any(isinstance(item, _Frame) for item in self._queue)

    def clear(self) -> None:
        """Barge-in: drop what is queued, and remember how much had played. The cut
        reply's later frames and actions are dropped too, up to the next :meth:`begin`.
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
        """A new reply starts: it plays, and its count starts at zero."""
        self._cut = False
        self._sent_s = 0.0
        self.cut_ms = None

    def play(self, frame: T, seconds: float) -> bool:
        """Queue one frame holding ``seconds`` of audio; False when it was dropped (the
        reply was cut, or too much is queued)."""
        if self._cut or self._queued_s + seconds > self._max_queued_s:
            return False
        self._queue.append(_Frame(frame, seconds))
        self._queued_s += seconds
        self._wake.set()
        return True

    def after(self, action: Action) -> None:
        """Run ``action`` once the frames queued before it have gone out (dropped when
        the reply is cut first)."""
        if not self._cut:
            self._queue.append(action)
            self._wake.set()

    # ---------------------------------------------------------------- out

    async def next(self) -> Played[T]:
        """The next frame, when its time comes (the actions before it run first)."""
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            head = self._queue[0]
            if not isinstance(head, _Frame):
                self._queue.popleft()
                await head()
                continue
            now = self._clock()
            if self._ends_at < now - self._late_s:
                self._ends_at = now  # after a pause (or too late): a new schedule
            wait = self._ends_at - now - self._lead_s
            if wait > 0:
                await asyncio.sleep(wait)
                continue  # a barge-in may have emptied the queue meanwhile
            self._queue.popleft()
            self._queued_s -= head.seconds
            at = self._ends_at
            self._ends_at = at + head.seconds
            self._sent_s += head.seconds
            return Played(head.frame, head.seconds, at)

    def start(self, send: Callable[[T], Awaitable[None]]) -> None:
        """Send each frame with ``send`` when its time comes, in a task of its own."""
        if self._sender is None:
            self._sender = asyncio.ensure_future(self._send_all(send))

    async def _send_all(self, send: Callable[[T], Awaitable[None]]) -> None:
        while True:
            played = await self.next()
            await send(played.frame)

    async def close(self) -> None:
        """Stop sending; what is queued is dropped. Safe to call more than once."""
        self._queue.clear()
        self._queued_s = 0.0
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
