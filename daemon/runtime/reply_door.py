"""The facade's speech out and chat: voices, synthesis, and the LLM's replies (see
:mod:`daemon.runtime.facade`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TypeVar

from daemon.audio.stream import OutputFormat
from daemon.engines.llm.base import ChatMessage, ReplyPiece, Sampling, ToolSet
from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.text import FIRST_WORDS
from daemon.engines.tts.voices import VoiceInfo
from daemon.errors import ModelUnavailable, UnknownVoice
from daemon.ops.deadline import Deadline, bounded
from daemon.runtime.door import Door
from daemon.speech.chat import ChatService
from daemon.speech.sentence_speaker import CLIENT_WAITING, SentenceSpeaker
from daemon.speech.speak import SpeechStream, open_speech

T = TypeVar("T")


class ReplyDoor(Door):
    """Voices, speech out, and chat."""

    # ---------------------------------------------------------------- speech out

    def _tts(self) -> TtsService:
        tts = self._engines.tts
        if tts is None:
            raise ModelUnavailable("the TTS engine is not loaded")
        return tts

    def check_voice(self, options: SynthesisOptions) -> VoiceInfo:
        """The voice ``options`` name (the default voice when none), from the store's
        memory; UnknownVoice otherwise."""
        return self._tts().check_voice(options)

    def resolve_voice(
        self,
        name: str | None,
        aliases: frozenset[str] = frozenset(),
        *,
        speed: float = 1.0,
        sample_rate: int | None = None,
    ) -> SynthesisOptions:
        """Options for a voice or speaker a client names.

        ``name`` may be a voice in the store, a speaker of the default voice, or one of
        ``aliases`` (case-insensitive) or empty for the default voice; anything else is
        UnknownVoice. For the event loop: voices come from the store's memory, and
        synthesis reads the voice afresh.
        """
        tts = self._tts()
        if not name or name.lower() in aliases:
            return SynthesisOptions(speed=speed, sample_rate=sample_rate)
        store = self._engines.voices
        if store.recall(name) is not None:
            return SynthesisOptions(voice=name, speed=speed, sample_rate=sample_rate)
        if name in tts.check_voice(SynthesisOptions()).speakers:
            return SynthesisOptions(speaker=name, speed=speed, sample_rate=sample_rate)
        raise UnknownVoice(f"unknown voice or speaker '{name[:64]}' (voices: {store.names()})")

    def voice_for(
        self, name: str | None, *, language: str | None = None, speaker: str | None = None
    ) -> SynthesisOptions:
        """Options for a voice named exactly (Wyoming), checked.

        Without a name, the store's voice for ``language`` (the default voice when it
        speaks it), else the default voice.
        """
        tts = self._tts()
        if name is None and language:
            name = self._engines.voices.for_language(language, tts.default_voice)
        options = SynthesisOptions(voice=name, speaker=speaker)
        tts.check_voice(options)
        return options

    def speak(self, text: str, options: SynthesisOptions) -> AsyncIterator[SentenceAudio]:
        """Synthesized audio of ``text``, sentence by sentence, through the TTS cache,
        within the request deadline (RequestTimeout past it). The first sentence's
        opening phrase comes first, for earlier audio."""
        deadline = Deadline(self.limits.request_timeout_s)
        return bounded(deadline, self._tts().stream_cached(text, options, quick_start=True))

    def speak_stream(self, options: SynthesisOptions) -> SentenceSpeaker:
        """A voice for text a client streams in pieces (spoken sentence by sentence
        through the TTS cache); its audio is due within the request deadline from the
        end of the text. At most ``limits.max_text_chars`` in all, and
        :data:`~daemon.speech.sentence_speaker.CLIENT_WAITING` sentences waiting."""
        limits = self.limits
        return SentenceSpeaker(
            self._tts(),
            options,
            first_words=FIRST_WORDS,
            max_waiting=CLIENT_WAITING,
            max_chars=limits.max_text_chars,
            cached=True,
            deadline_s=limits.request_timeout_s,
        )

    async def open_speech(
        self, text: str, options: SynthesisOptions, fmt: OutputFormat, use_cache: bool = True
    ) -> SpeechStream:
        """``text`` checked, then encoded in ``fmt`` as it is spoken (HTTP speech routes)."""
        return await open_speech(self._tts(), text, options, fmt, use_cache)

    # ---------------------------------------------------------------- chat

    def _chat(self) -> ChatService:
        chat = self._engines.chat
        if chat is None:
            raise ModelUnavailable("the LLM engine is not loaded")
        return chat

    def _within_deadline(self, pieces: AsyncIterator[T]) -> AsyncIterator[T]:
        """``pieces``, each due within the request deadline from now (RequestTimeout)."""
        return bounded(Deadline(self.limits.request_timeout_s), pieces)

    def chat(self, conversation_id: str, text: str) -> AsyncIterator[str]:
        """The LLM's reply to ``text``, streamed; the conversation's history is used and
        extended ("" keeps none). The whole reply is due within the request deadline."""
        return self._within_deadline(self._chat().chat(conversation_id, text))

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str]:
        """The LLM's reply to a client's whole message list (no stored history), with
        the configured sampling where a value is None, within the request deadline."""
        chat = self._chat()
        sampling = _sampling(chat, temperature, top_p, max_tokens)
        return self._within_deadline(chat.complete(messages, sampling))

    async def prepare_instructions(self, instructions: str) -> None:
        """Have a client's own system prompt evaluated now, within the request deadline,
        so that its first reply starts sooner (a local model keeps the state)."""
        async with asyncio.timeout(self.limits.request_timeout_s):
            await self._chat().prepare(instructions)

    async def chat_messages(
        self, conversation_id: str, text: str, instructions: str | None = None
    ) -> list[ChatMessage]:
        """The system turn, the conversation's history that fits, and ``text`` as the
        user turn (``instructions``: a client's own system prompt), as :meth:`chat`
        would send them: the start of a reply that may call tools."""
        return await self._chat().prepare_messages(conversation_id, text, instructions=instructions)

    def complete_with_tools(
        self,
        messages: list[ChatMessage],
        tools: ToolSet | None,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ReplyPiece]:
        """Like :meth:`complete`, for a reply that may call ``tools`` (read them from
        OpenAI's JSON with :func:`~daemon.engines.llm.base.tool_set`): text pieces and
        :class:`~daemon.engines.llm.base.ToolCallDelta` pieces, which
        :class:`~daemon.engines.llm.base.Reply` puts together. ``messages`` may hold
        earlier calls and their results (``tool`` turns). Within the request deadline."""
        chat = self._chat()
        sampling = _sampling(chat, temperature, top_p, max_tokens)
        return self._within_deadline(chat.complete_tools(messages, tools, sampling))

    async def count_tokens(self, messages: list[ChatMessage], reply: str) -> tuple[int, int]:
        """Tokens of a prompt and of its reply (a local model tokenizes, off the loop)."""
        llm = self._chat().llm

        def count() -> tuple[int, int]:
            return llm.count_tokens(messages), llm.count_tokens([ChatMessage("assistant", reply)])

        return await asyncio.to_thread(count)


def _sampling(
    chat: ChatService, temperature: float | None, top_p: float | None, max_tokens: int | None
) -> Sampling:
    """The configured sampling with a client's values where it gave them."""
    base = chat.settings.sampling
    return replace(
        base,
        temperature=base.temperature if temperature is None else temperature,
        top_p=base.top_p if top_p is None else top_p,
        max_tokens=max_tokens or base.max_tokens,
    )
