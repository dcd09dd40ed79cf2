"""What a Realtime session holds, and what its parts (items, tools, the book) read of it.

:class:`SessionState` is the session's state and settings: its configuration, the
conversation and its player, the book of items and responses, the function-call
exchange, and the responses being answered, with what they derive (the ASR model, the
reply voice, the chat options, Hearth's defaults). :mod:`~protocols.realtime.items`
and :mod:`~protocols.realtime.tools` act on it; :class:`~protocols.realtime.session.
RealtimeSession` adds the client's events and the audio, on top. Nothing here imports
those modules, so they import each other in one direction only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from typing import Any

from daemon.errors import HearthError, RequestTimeout
from daemon.ops.stream import EventStream
from daemon.ops.tasks import OwnedTasks
from daemon.runtime.api import (
    ChatOptions,
    ReplyPlayer,
    Services,
    SynthesisOptions,
    ToolSet,
    VoiceRequest,
)
from protocols.realtime import config as cfg
from protocols.realtime.objects import Response, ToolTurns
from protocols.realtime.responses import Book
from protocols.realtime.user_items import UserItems
from protocols.realtime.wire import Event, new_id

_LOGGER = logging.getLogger(__name__)
MAX_OUTBOX = 256
"""Server events not yet written to a slow client; then the session waits for it."""


class SessionState:
    """One Realtime session's state and settings (see the module docstring)."""

    def __init__(
        self,
        services: Services,
        *,
        model: str = "",
        beta: bool = False,
        voice_aliases: frozenset[str] = frozenset(),
        asr_aliases: frozenset[str] = frozenset(),
    ) -> None:
        self.id = new_id("sess")
        self.services = services
        """The core's services (each call reads the engines in use now)."""
        self.beta = beta
        self.voice_aliases = voice_aliases
        self.asr_aliases = asr_aliases
        self.config = self._initial(model)
        self.system_items: list[str] = []
        """System messages the client added: they follow the instructions."""
        self._out: EventStream[Event] = EventStream(MAX_OUTBOX)
        self.playback: ReplyPlayer[Event] = ReplyPlayer()
        """The core's player: each reply audio event goes out paced to the client's clock."""
        # The conversation follows a reload on its own: new engines at its next boundary.
        self.conversation = services.speech.open_conversation(self.id, self.playback, follow=True)
        self.user = UserItems(self.send)
        """The user's items and turns: ids, the turns awaiting words, unanswered items."""
        self.book = Book(self.id, self.send, self.playback, self._default_response, self.user)
        self._tasks = OwnedTasks(f"realtime-{self.id[-8:]}")
        self._answers: dict[str, asyncio.Task[None]] = {}
        """Requested responses still gathering their words, by id."""
        self._tools: ToolSet | None = None
        self.tool_turns = ToolTurns()
        """A question whose answer waits on function calls."""
        self._closed = False

    def _initial(self, model: str) -> cfg.SessionConfig:
        """The session before any ``session.update``: what this Hearth can do."""
        services = self.services
        config = cfg.SessionConfig(model=model or "hearth")
        if not services.voices.speaks:
            config = cfg.SessionConfig(model=config.model, output_modalities=("text",))
        if not services.chat.replies:
            turn = cfg.TurnDetection(create_response=False)
            config = cfg.SessionConfig(
                model=config.model, output_modalities=config.output_modalities, turn_detection=turn
            )
        return config

    async def send(self, message: Event) -> None:
        """Queue one server event for the client."""
        await self._out.put(message)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run ``coro`` beside the session (cancelled when it closes)."""
        return self._tasks.spawn(coro, name)

    # ---------------------------------------------------------------- responses

    async def cancel(self, response: Response, reason: str) -> None:
        """Stop a response: its reply is interrupted, or its question never asked."""
        self.book.cancel_reason = reason
        if response is self.book.requested and not response.asked:  # still gathering words
            answer = self._answers.pop(response.id, None)
            if answer is not None:
                answer.cancel()
            await self.book.finish(response, "cancelled")
        else:
            await self.conversation.interrupt()  # the book closes it on ReplyInterrupted

    def _deadline(self, response: Response) -> None:
        """The response fails unless it ends within the core's request deadline."""
        response.deadline = self.services.house.request_deadline()
        response.deadline.on_expiry(functools.partial(self._expire, response))

    def _expire(self, response: Response, exc: RequestTimeout) -> None:
        """A response ran past its deadline: it fails."""
        if response.finished or self._closed:
            return
        response.error = {"type": "server_error", "code": exc.code, "message": exc.message}
        self._tasks.spawn(self.cancel(response, self.book.cancel_reason), "expire")

    def _default_response(self) -> Response:
        config = self.config
        voice = config.voice or self.defaults().voice
        response = Response(
            new_id("resp"), config.speaks, config.output_format, voice, config.max_output_tokens
        )
        self._deadline(response)
        return response

    def prime(self, chat: ChatOptions) -> None:
        """Have the core evaluate ``chat``'s instructions now, in the background, so that
        the session's first reply evaluates only its own turn."""
        if chat.instructions is not None and self.services.chat.chats:
            self.spawn(self._prime(chat.instructions), "prime")

    async def _prime(self, instructions: str) -> None:
        try:
            await self.services.chat.prepare_instructions(instructions)
        except (HearthError, TimeoutError) as exc:  # the first reply evaluates them instead
            _LOGGER.debug("[%s] the instructions were not prepared: %r", self.id, exc)

    # ---------------------------------------------------------------- settings

    def asr_model(self, config: cfg.SessionConfig) -> str | None:
        """The ASR model the session names (OpenAI's names: the default)."""
        name = config.transcription.model
        if not name or self.services.house.has_asr_model(name):
            return name or None
        return None if name in self.asr_aliases else name

    def tts_options(self, voice: str | None, config: cfg.SessionConfig) -> SynthesisOptions:
        """The reply voice, synthesized at the output format's rate (the TTS worker
        resamples, not the event loop)."""
        rate = config.output_format.rate
        return self.services.voices.resolve_voice(
            VoiceRequest(voice, self.voice_aliases, speed=config.speed, sample_rate=rate)
        )

    def chat_options(
        self, instructions: str | None = None, speaks: bool | None = None, **limits: Any
    ) -> ChatOptions:
        """The session's instructions and limits, with a response's own over them
        (``speaks``: whether the reply is spoken; None: as the session says)."""
        configured = self.defaults().instructions
        speaks = self.config.speaks if speaks is None else speaks
        base = self.config.chat_options(self.system_items, configured)
        config = self.config
        own = (
            cfg.reply_instructions(config.instructions, self.system_items, configured, speaks)
            if instructions is None
            else cfg.reply_instructions(instructions, [], configured, speaks)
        )
        return ChatOptions(
            own,
            limits.get("temperature", base.temperature),
            limits.get("max_tokens", base.max_tokens),
        )

    @property
    def tools(self) -> ToolSet | None:
        """The tools the session offers its responses (None: none to call)."""
        return self._tools

    @property
    def replies_with_tools(self) -> bool:
        """Whether each turn's reply is a response the session makes itself, on the
        tool path (tools offered and ``create_response``), not the conversation's own."""
        turn = self.config.turn_detection
        return self._tools is not None and turn is not None and turn.create_response

    def defaults(self) -> cfg.Defaults:
        """Hearth's values for what the client leaves unset."""
        return cfg.Defaults.of(self.services.house.config)

    def _rendered(self) -> dict[str, Any]:
        return cfg.render(self.config, self.defaults(), self.id, self.beta)
