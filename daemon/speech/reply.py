"""A conversation's reply: the one under way, how it plays, and how it stops.

:class:`ReplySlot` holds at most one reply (an answer's or an announcement's event
stream) and passes its events on; cancelling it stops the task and the client's
player, and reports what had been written. :class:`SayBudget` bounds how often a
client may make announcements. :func:`said` turns an announcement into reply events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Protocol

from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.errors import Busy, HearthError
from daemon.ops.tasks import OwnedTasks
from daemon.speech import events as ev

_LOGGER = logging.getLogger(__name__)
SAY_BURST = 4
"""Announcements a conversation may make at once; then one per SAY_INTERVAL_S."""
SAY_INTERVAL_S = 2.0


class Playback(Protocol):
    """The client's player of reply audio (a WebRTC track, a socket's buffer)."""

    @property
    def playing(self) -> bool:
        """Whether reply audio is still queued or playing."""
        ...

    def clear(self) -> None:
        """Drop what is queued: the reply was interrupted."""
        ...


class SayBudget:
    """A token bucket for announcements: a burst, then one per interval.

    A cancelled synthesis still finishes its sentence in a worker, so a client that
    sends ``say`` in a loop must not keep every TTS worker busy.
    """

    def __init__(self, burst: int = SAY_BURST, interval_s: float = SAY_INTERVAL_S) -> None:
        self.burst = burst
        self.interval_s = interval_s
        self._tokens = float(burst)
        self._at = time.monotonic()

    def take(self) -> None:
        """Spend one announcement; :class:`Busy` when none is left."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) / self.interval_s)
        self._at = now
        if self._tokens < 1:
            raise Busy(f"too many 'say' requests: one per {self.interval_s:g} s after a burst")
        self._tokens -= 1


Emit = Callable[[ev.PipelineEvent | ev.ConversationNote], Awaitable[None]]
Notify = Callable[[], Awaitable[None]]


class ReplySlot:
    """The reply under way (at most one), and the client's player of its audio.

    Cutting a reply stops its task, clears the player, and drops its audio that was
    emitted and not yet read, so a client's adapter never plays a cut reply's audio and
    never clears its player itself."""

    def __init__(
        self,
        tasks: OwnedTasks,
        emit: Emit,
        playback: Playback | None,
        unsent: Callable[[], None] = lambda: None,
    ) -> None:
        self._tasks = tasks
        self._emit = emit
        self._playback = playback
        self._unsent = unsent
        """Drops the reply audio emitted and not yet read by the client's adapter."""
        self._task: asyncio.Task[None] | None = None
        self._text: list[str] = []

    @property
    def running(self) -> bool:
        """Whether a reply is being written or spoken."""
        return self._task is not None and not self._task.done()

    @property
    def playing(self) -> bool:
        """Whether the client still plays reply audio (written before it is heard)."""
        return self._playback is not None and self._playback.playing

    def start(
        self,
        events: AsyncGenerator[ev.PipelineEvent, None],
        on_audio: Notify,
        on_over: Notify,
        name: str = "reply",
    ) -> None:
        """Play ``events`` as the reply: ``on_audio`` at its first audio, ``on_over``
        when it ends by itself (not when it is cancelled or replaced)."""
        self._text = []
        self._task = self._tasks.spawn(self._play(events, on_audio, on_over), name)

    async def _play(
        self, events: AsyncGenerator[ev.PipelineEvent, None], on_audio: Notify, on_over: Notify
    ) -> None:
        try:
            async for event in events:
                if isinstance(event, ev.ReplyChunk):
                    self._text.append(event.text)
                elif isinstance(event, ev.SpeechAudioStart):
                    await on_audio()
                await self._emit(event)
        except HearthError as exc:
            await self._emit(ev.RunError(exc.code, exc.message))
        except Exception:  # noqa: BLE001 - the conversation lives on; the client hears why
            _LOGGER.exception("[%s] reply failed", self._tasks.owner)
            await self._emit(ev.RunError("internal-error", "internal error"))
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()
        if self._task is asyncio.current_task():
            self._task = None
            await on_over()

    async def cancel(self, report: bool) -> None:
        """Stop the reply and its audio; with ``report``, tell the client what was cut
        (:class:`~daemon.speech.events.ReplyInterrupted`) when anything was under way."""
        task, self._task = self._task, None
        running = task is not None and not task.done()
        playing = self.playing
        if task is not None:
            task.cancel()
        if self._playback is not None:
            self._playback.clear()
        # Audio of the cut reply still waiting in the event stream must not reach the
        # player after the clear: it is dropped with the reply.
        self._unsent()
        if report and (running or playing):
            await self._emit(ev.ReplyInterrupted("".join(self._text).strip()))


async def said(
    tts: TtsService, text: str, options: SynthesisOptions, conversation_id: str
) -> AsyncGenerator[ev.PipelineEvent, None]:
    """An announcement as reply events: its audio, then the text as the whole reply."""
    rate: int | None = None
    async for block in tts.stream_cached(text, options):
        if rate != block.rate:
            rate = block.rate
            yield ev.SpeechAudioStart(block.rate)
        yield ev.SpeechAudio(block.pcm, block.sentence)
    if rate is not None:
        yield ev.SpeechAudioStop()
    yield ev.ReplyDone(text, conversation_id)
    yield ev.RunEnded()
