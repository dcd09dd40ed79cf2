"""One Realtime session: client events in, the conversation's events out.

The session translates, and decides nothing. Input audio goes to the conversation
in order (through the :class:`~protocols.realtime.lane.Lane`); ``turn_detection``
picks how it hears (hands-free with the fixed silence or the turn model, or
push-to-talk committed by the client); ``response.create`` asks it a question made
of the user items not yet answered; ``response.cancel`` interrupts its reply. A
response that offers function tools goes the tool path
(:mod:`~protocols.realtime.tools`); with tools and ``create_response``, the session
asks for each heard turn's response itself. The conversation's events become server
events through the :class:`~protocols.realtime.responses.Book`, and reply audio goes
out paced by the core's :class:`~daemon.speech.player.ReplyPlayer`.

Bounds: a client message is at most :data:`MAX_MESSAGE_BYTES`; the events waiting
their turn at most :data:`MAX_QUEUED_BYTES`; a response must end within
``limits.request_timeout_s``. A message that cannot be used gets an ``error`` event
in OpenAI's shape, and the session goes on.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from daemon.errors import HearthError
from daemon.runtime.api import Decoding, Listening, Mode, Replies, Sensitivity, Services
from protocols.realtime import config as cfg
from protocols.realtime import items, tools
from protocols.realtime.audio import WireFormat, received
from protocols.realtime.lane import Lane, Step
from protocols.realtime.state import SessionState
from protocols.realtime.wire import Refused, beta_event, error, event, hearth_error

_LOGGER = logging.getLogger(__name__)
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The largest client event (about 65 s of 24 kHz PCM in base64)."""
MAX_QUEUED_BYTES = 8 * 1024 * 1024
"""Client events waiting their turn (about 130 s of 24 kHz audio); then reading waits."""
MIN_COMMIT_MS = 100
"""The least audio a commit may hold (OpenAI's own minimum)."""


class Socket(Protocol):
    """The WebSocket, as the session uses it (the HTTP room adapts Starlette's)."""

    async def receive(self) -> str | bytes | None:
        """The next message; None once the client has gone."""
        ...

    async def send(self, text: str) -> None:
        """Send one text message."""
        ...


class RealtimeSession(SessionState):
    """One client's Realtime session (see the module docstring)."""

    def __init__(
        self,
        socket: Socket,
        services: Services,
        *,
        model: str = "",
        beta: bool = False,
        voice_aliases: frozenset[str] = frozenset(),
        asr_aliases: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(
            services, model=model, beta=beta, voice_aliases=voice_aliases, asr_aliases=asr_aliases
        )
        self._socket = socket
        self.book.called = functools.partial(tools.called, self)
        self._lane = Lane(MAX_QUEUED_BYTES)
        self._input_ms = 0.0
        """Input audio received so far (ms): the session's audio clock."""
        self._buffered_ms = 0.0
        """Push-to-talk: audio since the last commit (ms)."""
        self._heard_by: object = None

    # ---------------------------------------------------------------- life

    async def run(self) -> None:
        """Serve the client until it goes (or the session is closed)."""
        self._tasks.spawn(self._write(), "write")
        self._tasks.spawn(self._forward_conversation_events(), "events")
        self._tasks.spawn(self._hear(), "hear")
        self.playback.start(self.send)
        await self.send(event("session.created", session=self._rendered()))
        try:
            while not self._closed and (raw := await self._socket.receive()) is not None:
                await self._receive(raw)
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop everything; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        for response in (self.book.response, self.book.requested, self.book.draining):
            if response is not None and response.deadline is not None:
                response.deadline.lift()
        await self.conversation.close()
        await self.playback.close()
        self._out.close()
        await self._tasks.cancel_all()

    @property
    def busy(self) -> bool:
        """Whether engines are in use now: an utterance heard, a response being
        written or played. An idle session moves to new engines with its next audio."""
        return self.conversation.busy or bool(self._answers) or self.playback.playing

    async def _write(self) -> None:
        async for message in self._out:
            wire = beta_event(message) if self.beta else message
            if wire is None:
                continue
            try:
                await self._socket.send(json.dumps(wire, ensure_ascii=False))
            except Exception:  # noqa: BLE001 - the client is gone: the reader ends the session
                _LOGGER.debug("[%s] the client went away while we wrote", self.id)
                self._out.close()
                return

    async def _forward_conversation_events(self) -> None:
        async for item in self.conversation.events():
            try:
                await self.book.on_event(item)
            except Exception:  # noqa: BLE001 - one bad event must not silence the rest
                _LOGGER.exception("[%s] event translation failed", self.id)

    # ---------------------------------------------------------------- client events

    async def _receive(self, raw: str | bytes) -> None:
        client_event: str | None = None
        try:
            data = _parse(raw)
            given = data.get("event_id")
            client_event = given if isinstance(given, str) else None
            kind = data["type"]
            handler = _HANDLERS.get(kind)
            if handler is None:
                raise Refused(f"unknown event type {kind[:64]!r}", "unknown_event", "type")
            if kind in URGENT:
                await handler(self, data, client_event)
            else:  # in order, after the audio and the events before it
                run = functools.partial(handler, self, data, client_event)
                await self._lane.put(Step(run, client_event, len(raw)))
        except HearthError as exc:
            await self.send(hearth_error(exc, client_event))
        except Exception:  # noqa: BLE001 - one bad event must not end the session
            _LOGGER.exception("[%s] a client event failed", self.id)
            await self.send(error("internal-error", "internal error", kind="server_error"))

    async def _session_update(self, data: dict[str, Any], client_event: str | None) -> None:
        new = cfg.updated(self.config, data.get("session"))
        offered = tools.offered(new.tools, new.tool_choice, "session.tools")
        services = self.services
        if new.speaks and not services.voices.speaks:
            raise Refused("spoken output needs TTS, which is not enabled", param="session.audio")
        if new.speaks:
            self.tts_options(new.voice, new)
        turn = new.turn_detection
        if turn is not None and turn.create_response and not services.chat.replies:
            raise Refused(
                "answering each turn needs the LLM and TTS; set create_response to false",
                param="session.audio.input.turn_detection.create_response",
            )
        services.speech.check_transcribe(self.asr_model(new), new.transcribe_options())
        chat = new.chat_options(self.system_items, self.defaults().instructions)
        if services.chat.chats:
            services.chat.check_options(chat)
        rehear = new.hearing_key() != self.config.hearing_key()
        rehear = rehear or (offered is None) != (self._tools is None)
        self.config = new
        self._tools = offered
        if rehear:
            await self.conversation.mute()  # the next audio is heard the new way
        self.conversation.chat_options = chat
        self.prime(chat)
        await self.send(event("session.updated", session=self._rendered()))

    async def _append(self, data: dict[str, Any], client_event: str | None) -> None:
        fmt = self.config.input_format
        pcm = await received(fmt, data.get("audio"), "audio")
        if pcm:
            await self._feed(pcm, fmt)

    async def _commit(self, data: dict[str, Any], client_event: str | None) -> None:
        if self.config.turn_detection is not None:
            raise Refused(
                "Hearth ends each turn itself while turn_detection is set; set it to null "
                "to commit turns",
                "invalid_value",
            )
        if self._buffered_ms < MIN_COMMIT_MS or self.conversation.speech is None:
            raise Refused(
                f"buffer too small: expected at least {MIN_COMMIT_MS} ms of audio, but the "
                f"buffer holds {self._buffered_ms:.0f} ms",
                "input_audio_buffer_commit_empty",
            )
        self._buffered_ms = 0.0
        await self.user.commit(items.spoken())
        await self.conversation.stop()  # the final follows as an event
        await self._listen()  # the next turn's audio is heard at once

    async def _clear(self, data: dict[str, Any], client_event: str | None) -> None:
        speech = self.conversation.speech
        if speech is not None and (self.config.turn_detection is None or speech.in_utterance):
            await self.conversation.mute()  # what was heard is dropped; the next audio listens
        self._buffered_ms = 0.0
        self.user.speaking = None
        await self.send(event("input_audio_buffer.cleared"))

    async def _item_create(self, data: dict[str, Any], client_event: str | None) -> None:
        await items.create(self, data.get("item"))

    async def _item_truncate(self, data: dict[str, Any], client_event: str | None) -> None:
        await items.truncate(self, data)

    async def _item_delete(self, data: dict[str, Any], client_event: str | None) -> None:
        await items.delete(self, data)

    async def _response_create(self, data: dict[str, Any], client_event: str | None) -> None:
        if self.book.active is not None:
            raise Refused(
                "Conversation already has an active response in progress",
                "conversation_already_has_active_response",
            )
        request = items.response_request(self, data.get("response"))
        response = request.response
        self.book.requested = response
        await self.book.created(response)
        self._deadline(response)
        pending, self.user.pending = self.user.pending, []
        task = self._tasks.spawn(items.answer(self, request, pending), "answer")
        self._answers[response.id] = task
        task.add_done_callback(lambda _: self._answers.pop(response.id, None))

    async def _respond_to_turn(self) -> None:
        """A heard turn, with tools offered: the session asks for its response."""
        if self.book.active is None and self.user.pending:
            try:
                await self._response_create({}, None)
            except HearthError as exc:  # the client hears why its turn went unanswered
                await self.send(hearth_error(exc, None))

    async def _response_cancel(self, data: dict[str, Any], client_event: str | None) -> None:
        response = self.book.active or self.book.draining
        wanted = data.get("response_id")
        if response is None or (wanted is not None and wanted != response.id):
            raise Refused("there is no active response to cancel", "response_cancel_not_active")
        await self.cancel(response, "client_cancelled")

    async def _output_clear(self, data: dict[str, Any], client_event: str | None) -> None:
        response = self.book.response
        if response is not None:
            await self.cancel(response, "client_cancelled")
            await self.send(event("output_audio_buffer.cleared", response_id=response.id))

    # ---------------------------------------------------------------- hearing

    async def _hear(self) -> None:
        """The lane's steps, in order (one failure is the client's event, not the end)."""
        while True:
            step = await self._lane.get()
            try:
                await step.run()
            except HearthError as exc:
                await self.send(hearth_error(exc, step.client_event))
            except Exception:  # noqa: BLE001 - the session must not go deaf
                _LOGGER.exception("[%s] input audio failed", self.id)
                await self.send(error("internal-error", "internal error", kind="server_error"))

    async def _feed(self, pcm: bytes, fmt: WireFormat) -> None:
        conversation = self.conversation  # it moves to new engines after a reload
        if conversation.speech is None:
            await self._listen()
        before = self._input_ms
        ms = len(pcm) / 2 / fmt.rate * 1000
        self._input_ms += ms
        self._buffered_ms += ms
        await conversation.feed(fmt.pcm, pcm)
        speech = conversation.speech
        if speech is not None and speech is not self._heard_by:  # renewed after a reload
            self._heard_by = speech
            self.user.audio_base_ms = round(before)

    async def _listen(self) -> None:
        """Hear as the session says: hands-free (the fixed silence or the turn model) or
        push-to-talk committed by the client."""
        config = self.config
        turn = config.turn_detection
        replies = Replies(
            on=turn is not None and turn.create_response and not self.replies_with_tools,
            speak=config.speaks,
            voice=self.tts_options(config.voice, config) if config.speaks else None,
        )
        listening = Listening(
            Mode.PUSH_TO_TALK if turn is None else Mode.HANDS_FREE,
            Decoding(self.asr_model(config), config.transcribe_options()),
            replies,
            profile=None if turn is None else turn.profile,
            sensitivity=Sensitivity.DEFAULT if turn is None else turn.sensitivity,
        )
        hearing = await self.services.speech.hearing(listening)
        await self.conversation.listen(hearing)
        self.user.vad = turn is not None
        auto = turn is not None and turn.create_response
        self.user.auto_reply = auto and not self.replies_with_tools
        self.user.respond = self._respond_to_turn if self.replies_with_tools else None
        self.user.audio_base_ms = round(self._input_ms)
        self._heard_by = self.conversation.speech
        self._buffered_ms = 0.0


def _parse(raw: str | bytes) -> dict[str, Any]:
    """One client event (Refused names what is wrong with it)."""
    if len(raw) > MAX_MESSAGE_BYTES:
        raise Refused(f"the event is larger than {MAX_MESSAGE_BYTES} bytes", "message_too_large")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise Refused("the event is not valid JSON", "invalid_json") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise Refused("an event is a JSON object with a string 'type'", "invalid_event", "type")
    return data


Handler = Callable[[RealtimeSession, dict[str, Any], str | None], Awaitable[None]]
_HANDLERS: dict[str, Handler] = {
    "session.update": RealtimeSession._session_update,
    "input_audio_buffer.append": RealtimeSession._append,
    "input_audio_buffer.commit": RealtimeSession._commit,
    "input_audio_buffer.clear": RealtimeSession._clear,
    "conversation.item.create": RealtimeSession._item_create,
    "conversation.item.truncate": RealtimeSession._item_truncate,
    "conversation.item.delete": RealtimeSession._item_delete,
    "response.create": RealtimeSession._response_create,
    "response.cancel": RealtimeSession._response_cancel,
    "output_audio_buffer.clear": RealtimeSession._output_clear,
}
"""The client events served; any other gets an ``unknown_event`` error."""
URGENT = frozenset({"response.cancel", "output_audio_buffer.clear", "conversation.item.truncate"})
"""Events acted on at once: they stop something, and must not wait behind the audio."""
