"""The Realtime bookkeeping: responses (beside the user's items,
:mod:`~protocols.realtime.user_items`, which the book holds), and the conversation's
events as server events.

The conversation speaks Hearth's vocabulary (voice started, partial and final
transcripts, a reply's text and audio, an interruption); a Realtime client expects
items with ids, a response wrapped around each reply, and transcripts keyed by item.
:class:`Book` keeps those ids and states and turns each conversation event into the
server events OpenAI sends for it, in OpenAI's order. It decides nothing about
hearing or replying.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from daemon.runtime.api import ConversationEvent, ReplyPlayer, ToolCall
from daemon.runtime.api import events as ev
from protocols.realtime.audio import encoded
from protocols.realtime.objects import (
    ITEM_STATUS,
    Response,
    content_place,
    message_item,
)
from protocols.realtime.user_items import UserItems
from protocols.realtime.wire import Event, error, event

_LOGGER = logging.getLogger(__name__)
CHUNK_S = 0.1
"""Reply audio per ``response.output_audio.delta`` (s)."""

Send = Callable[[Event], Awaitable[None]]
Called = Callable[[Response, str, list[ToolCall]], Awaitable[None]]


class Book:
    """Ids and states of one session's items and responses (see the module docstring)."""

    def __init__(
        self,
        conversation_id: str,
        send: Send,
        playback: ReplyPlayer[Event],
        new_response: Callable[[], Response],
        user: UserItems,
    ) -> None:
        self._send = send
        self.user = user
        """The user's items and turns (the speech events are theirs)."""
        self.conversation_id = conversation_id
        self.playback = playback
        self.new_response = new_response
        """A response with the session's settings (for a reply the client did not ask for)."""
        self.response: Response | None = None
        """The response whose reply is under way."""
        self.requested: Response | None = None
        """A response the client asked for, before its reply starts."""
        self.draining: Response | None = None
        """A response whose reply is written, while its audio still goes out."""
        self.called: Called | None = None
        """Turns the functions a reply called into items (the session's tool path)."""
        self.cancel_reason = "turn_detected"

    @property
    def active(self) -> Response | None:
        """The response under way or asked for (one at a time)."""
        return self.response or self.requested

    @property
    def replying(self) -> Response | None:
        """The response the conversation's reply events belong to now: the one under
        way, or a requested one whose reply was asked for and has not started."""
        requested = self.requested
        return self.response or (requested if requested is not None and requested.asked else None)

    # ---------------------------------------------------------------- conversation events

    async def on_event(self, item: ConversationEvent) -> None:
        """Translate one conversation event (in order)."""
        handler = _HANDLERS.get(type(item))
        if handler is not None:
            await handler(self, item)
        else:
            await self.user.on_event(item)

    async def _error(self, failed: ev.RunError) -> None:
        details = {"type": "server_error", "code": failed.code, "message": failed.message}
        target = self.replying
        if target is not None:
            target.error = details
        elif self.user.awaiting:
            item = self.user.awaiting.popleft()
            item.resolve("")
            await self._send(
                event(
                    "conversation.item.input_audio_transcription.failed",
                    item_id=item.id,
                    content_index=0,
                    error=details | {"param": None},
                )
            )
        else:
            await self._send(error(failed.code, failed.message, kind="server_error"))

    async def _reply_started(self, _: ev.ReplyStarted) -> None:
        if self.response is not None:  # never seen: a reply starts after the last one ended
            await self.finish(self.response, "incomplete")
        requested = self.requested
        response = requested if requested is not None and requested.asked else None
        response = response or self.new_response()
        if response is requested:
            self.requested = None
        self.response = response
        self.playback.begin()
        await self.created(response)

    async def _open_message(self, response: Response) -> None:
        """The reply's assistant message begins (at its first words or audio: a reply
        that only calls functions has none)."""
        if response.begun:
            return
        response.begun = True
        previous = self.user.last_item
        self.user.remember(response.item_id, "assistant")
        item = message_item(response.item_id, "assistant", "in_progress", [])
        where = {"response_id": response.id, "output_index": 0}
        await self._send(event("response.output_item.added", **where, item=item))
        await self._send(event("conversation.item.added", previous_item_id=previous, item=item))
        part = (
            {"type": "audio", "transcript": ""} if response.speak else {"type": "text", "text": ""}
        )
        await self._send(event("response.content_part.added", **content_place(response), part=part))

    async def _chunk(self, chunk: ev.ReplyChunk) -> None:
        response = self.response
        if response is None:
            return
        await self._open_message(response)
        response.text.append(chunk.text)
        kind = (
            "response.output_audio_transcript.delta"
            if response.speak
            else ("response.output_text.delta")
        )
        await self._send(event(kind, **content_place(response), delta=chunk.text))

    async def _reply_done(self, done: ev.ReplyDone) -> None:
        response = self.response
        if response is None:
            return
        response.done_text = done.text
        if not done.tool_calls:
            await self._open_message(response)  # a reply of no words still has its item
        elif self.called is not None:
            await self.called(response, done.text, list(done.tool_calls))

    async def _audio_start(self, start: ev.SpeechAudioStart) -> None:
        if self.response is not None:
            self.response.rate = start.rate
            await self._open_message(self.response)

    async def _audio(self, audio: ev.SpeechAudio) -> None:
        response = self.response
        if response is None or not response.speak:
            return
        step = int(response.rate * CHUNK_S) * 2
        for offset in range(0, len(audio.pcm), step):
            pcm = audio.pcm[offset : offset + step]
            seconds = len(pcm) / 2 / response.rate
            if response.rate != response.format.rate:  # a resample: off the loop
                data = await asyncio.to_thread(encoded, response.format, pcm, response.rate)
            else:
                data = encoded(response.format, pcm, response.rate)
            message = event("response.output_audio.delta", **content_place(response), delta=data)
            if self.playback.play(message, seconds):
                response.audio_sent = True

    async def _run_ended(self, _: ev.RunEnded) -> None:
        response = self.replying
        if response is None:
            return
        if response.deadline is not None:
            response.deadline.lift()
        if self.response is response:
            self.response = None
        self.draining = response
        status = "failed" if response.error is not None else "completed"

        async def finish() -> None:
            await self.finish(response, status)

        self.playback.after(finish)  # once its audio has gone out

    async def _interrupted(self, _: ev.ReplyInterrupted) -> None:
        response = self.replying or self.draining
        if response is not None:
            status = "failed" if response.error is not None else "cancelled"
            await self.finish(response, status, self.playback.cut_ms)
        self.cancel_reason = "turn_detected"

    # ---------------------------------------------------------------- responses

    async def created(self, response: Response) -> None:
        """Send ``response.created`` once."""
        if not response.created:
            response.created = True
            body = response.render("in_progress", None, self.conversation_id)
            await self._send(event("response.created", response=body))

    async def finish(self, response: Response, status: str, played_ms: int | None = None) -> None:
        """Close a response: its parts, its item, ``response.done`` (once)."""
        if response.finished:
            return
        response.finished = True
        if response.deadline is not None:
            response.deadline.lift()
        if self.response is response:
            self.response = None
        if self.requested is response:
            self.requested = None
        if self.draining is response:
            self.draining = None
        await self.created(response)
        if response.begun:
            await self._close_output(response, status, played_ms)
        details: dict[str, Any] | None = None
        if status == "cancelled":
            details = {"type": "cancelled", "reason": self.cancel_reason}
        elif status == "failed":
            details = {"type": "failed", "error": response.error}
        body = response.render(status, details, self.conversation_id)
        await self._send(event("response.done", response=body))

    async def _close_output(self, response: Response, status: str, played: int | None) -> None:
        where = content_place(response)
        if status == "cancelled" and response.audio_sent and played is not None:
            await self._send(
                event(
                    "conversation.item.truncated",
                    item_id=response.item_id,
                    content_index=0,
                    audio_end_ms=played,
                )
            )
        if response.speak:
            await self._send(event("response.output_audio.done", **where))
            await self._send(
                event(
                    "response.output_audio_transcript.done", **where, transcript=response.transcript
                )
            )
            part = {"type": "audio", "transcript": response.transcript}
        else:
            await self._send(event("response.output_text.done", **where, text=response.transcript))
            part = {"type": "text", "text": response.transcript}
        await self._send(event("response.content_part.done", **where, part=part))
        item = message_item(
            response.item_id, "assistant", ITEM_STATUS[status], [response.content()]
        )
        await self._send(
            event("response.output_item.done", response_id=response.id, output_index=0, item=item)
        )
        await self._send(event("conversation.item.done", item=item))


_HANDLERS: dict[type, Callable[[Book, Any], Awaitable[None]]] = {
    ev.RunError: Book._error,
    ev.ReplyStarted: Book._reply_started,
    ev.ReplyChunk: Book._chunk,
    ev.ReplyDone: Book._reply_done,
    ev.SpeechAudioStart: Book._audio_start,
    ev.SpeechAudio: Book._audio,
    ev.RunEnded: Book._run_ended,
    ev.ReplyInterrupted: Book._interrupted,
}
"""The conversation events of the replies; the speech events go to the user's items
(phases, wake notes and speculation mean nothing to a Realtime client)."""
