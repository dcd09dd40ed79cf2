"""The user's side of a Realtime session's book: items, turns and their transcripts.

A spoken turn is announced by ``speech_started`` (the VAD heard it), committed by
``speech_stopped`` (or the client's commit), and completed by its final transcript; a
typed or audio item is added by the client. :class:`UserItems` keeps their ids, the
turns awaiting words and the items no response has answered, and turns the
conversation's speech events into the server events OpenAI sends for them.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Any

from daemon.runtime.api import events as ev
from protocols.realtime.objects import UserItem
from protocols.realtime.wire import Event, event, new_id

MAX_KNOWN_ITEMS = 512
"""Item ids remembered for ``truncate`` and ``delete`` (the oldest are forgotten)."""

Send = Callable[[Event], Awaitable[None]]


class UserItems:
    """The user's items and turns of one session (see the module docstring)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.vad = True
        """Hearth ends the turns (else the client commits them): speech events are sent."""
        self.auto_reply = True
        """The conversation answers each turn itself (else the turn waits in ``pending``)."""
        self.audio_base_ms = 0
        """Where the current speech session's time 0 is in the session's input audio."""
        self.speaking: UserItem | None = None
        """The user item being spoken now (announced by ``speech_started``)."""
        self.awaiting: deque[UserItem] = deque()
        """Committed spoken items, oldest first, whose final transcript is to come."""
        self.pending: list[UserItem] = []
        """User items no response has answered yet."""
        self.respond: Callable[[], Awaitable[None]] | None = None
        """Asks for a response to a heard turn (tools offered: the session answers it)."""
        self.last_item: str | None = None
        self.known: OrderedDict[str, str] = OrderedDict()
        """Item id → role, the newest last."""

    async def on_event(self, item: object) -> None:
        """Translate one of the conversation's speech events (others are not the
        user's side: the caller handles them)."""
        handler = _HANDLERS.get(type(item))
        if handler is not None:
            await handler(self, item)

    def remember(self, item_id: str, role: str) -> None:
        """A new item in the conversation."""
        self.known[item_id] = role
        while len(self.known) > MAX_KNOWN_ITEMS:
            self.known.popitem(last=False)
        self.last_item = item_id

    async def add_user(self, item: UserItem, text: str | None = None) -> None:
        """Announce a user item (``conversation.item.added``)."""
        previous = self.last_item
        self.remember(item.id, "user")
        await self._send(
            event("conversation.item.added", previous_item_id=previous, item=item.render(text))
        )

    async def commit(self, item: UserItem) -> None:
        """The input audio up to now is one user turn: committed, added, awaiting words."""
        await self._send(
            event("input_audio_buffer.committed", previous_item_id=self.last_item, item_id=item.id)
        )
        await self.add_user(item)
        self.awaiting.append(item)
        if not self.auto_reply:  # a response.create answers it, once its words are known
            self.pending.append(item)

    async def transcribed(self, item: UserItem, text: str, audio_ms: int) -> None:
        """An item's final words: the last delta, ``completed`` and ``item.done``."""
        if text.startswith(item.sent) and len(text) > len(item.sent):
            await self._delta(item, text[len(item.sent) :])
        await self._send(
            event(
                "conversation.item.input_audio_transcription.completed",
                item_id=item.id,
                content_index=0,
                transcript=text,
                usage={"type": "duration", "seconds": round(audio_ms / 1000, 3)},
            )
        )
        await self._send(event("conversation.item.done", item=item.render(text)))
        item.resolve(text)

    async def _delta(self, item: UserItem, delta: str) -> None:
        item.sent += delta
        await self._send(
            event(
                "conversation.item.input_audio_transcription.delta",
                item_id=item.id,
                content_index=0,
                delta=delta,
            )
        )

    # ---------------------------------------------------------------- speech events

    async def _voice_started(self, started: ev.VoiceStarted) -> None:
        if not self.vad:
            return
        self.speaking = self.speaking or UserItem(new_id("item"))
        await self._send(
            event(
                "input_audio_buffer.speech_started",
                audio_start_ms=self.audio_base_ms + started.at_ms,
                item_id=self.speaking.id,
            )
        )

    async def _partial(self, partial: ev.PartialTranscript) -> None:
        item = self.speaking
        if not self.vad or item is None:
            return
        # Deltas only grow: a partial that rewrote earlier words waits for the final.
        if partial.text.startswith(item.sent) and len(partial.text) > len(item.sent):
            await self._delta(item, partial.text[len(item.sent) :])

    async def _voice_stopped(self, stopped: ev.VoiceStopped) -> None:
        if not self.vad:
            return
        item, self.speaking = self.speaking or UserItem(new_id("item")), None
        await self._send(
            event(
                "input_audio_buffer.speech_stopped",
                audio_end_ms=self.audio_base_ms + stopped.at_ms,
                item_id=item.id,
            )
        )
        await self.commit(item)

    async def _final(self, final: ev.FinalTranscript) -> None:
        item = await self._heard_item()
        await self.transcribed(item, final.text, final.audio_ms)
        if self.respond is not None and final.text.strip():
            await self.respond()

    async def _ignored(self, ignored: ev.UtteranceIgnored) -> None:
        """The household gate set the turn aside: it leaves the conversation."""
        item = await self._heard_item()
        item.resolve("")
        self.known.pop(item.id, None)
        await self._send(event("conversation.item.deleted", item_id=item.id))

    async def _heard_item(self) -> UserItem:
        """The spoken item a final belongs to (committed now if it was not yet)."""
        if self.awaiting:
            return self.awaiting.popleft()
        item, self.speaking = self.speaking or UserItem(new_id("item")), None
        await self.commit(item)
        return self.awaiting.popleft()


_HANDLERS: dict[type, Callable[[UserItems, Any], Awaitable[None]]] = {
    ev.VoiceStarted: UserItems._voice_started,
    ev.PartialTranscript: UserItems._partial,
    ev.VoiceStopped: UserItems._voice_stopped,
    ev.FinalTranscript: UserItems._final,
    ev.UtteranceIgnored: UserItems._ignored,
}
"""The conversation's speech events, as the user's side of the book sees them."""
