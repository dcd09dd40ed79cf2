"""Voices and speech out: resolving the voice a client names, synthesis, and a voice
for text a client streams (see :mod:`daemon.runtime.services`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from daemon.audio.stream import OutputFormat
from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.text import FIRST_WORDS
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.errors import ModelUnavailable, UnknownVoice
from daemon.ops.deadline import bounded
from daemon.runtime.context import CurrentCore
from daemon.runtime.requests import VoiceRequest
from daemon.speech.sentence_speaker import CLIENT_WAITING, SentenceSpeaker
from daemon.speech.speak import SpeechStream, open_speech


class SpeechOut:
    """The voices, and speech in them, on the engines in force at each call (what a
    call opens keeps the engines it started with)."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current

    def _tts(self) -> TtsService:
        tts = self._current().engines.tts
        if tts is None:
            raise ModelUnavailable("the TTS engine is not loaded")
        return tts

    @property
    def speaks(self) -> bool:
        """Whether text-to-speech is loaded."""
        return self._current().engines.tts is not None

    @property
    def store(self) -> VoiceStore:
        """The voice store (listing, importing, changing voices)."""
        return self._current().engines.voices

    async def list_voices(self) -> list[VoiceInfo]:
        """Every voice in the store, read afresh in a worker thread."""
        return await self._current().engines.voices.list_async()

    def check_voice(self, options: SynthesisOptions) -> VoiceInfo:
        """The voice ``options`` name (the default voice when none), from the store's
        memory; UnknownVoice otherwise."""
        return self._tts().check_voice(options)

    def resolve_voice(self, request: VoiceRequest) -> SynthesisOptions:
        """Options for a voice or speaker a client names.

        The name may be a voice in the store, a speaker of the default voice, or one of
        the request's aliases (case-insensitive) or empty for the default voice; anything
        else is UnknownVoice. For the event loop: voices come from the store's memory,
        and synthesis reads the voice afresh.
        """
        tts = self._tts()
        name, speed, rate = request.name, request.speed, request.sample_rate
        if not name or name.lower() in request.aliases:
            return SynthesisOptions(speed=speed, sample_rate=rate)
        store = self._current().engines.voices
        if store.recall(name) is not None:
            return SynthesisOptions(voice=name, speed=speed, sample_rate=rate)
        if name in tts.check_voice(SynthesisOptions()).speakers:
            return SynthesisOptions(speaker=name, speed=speed, sample_rate=rate)
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
            name = self._current().engines.voices.for_language(language, tts.default_voice)
        options = SynthesisOptions(voice=name, speaker=speaker)
        tts.check_voice(options)
        return options

    def speak(self, text: str, options: SynthesisOptions) -> AsyncIterator[SentenceAudio]:
        """Synthesized audio of ``text``, sentence by sentence, through the TTS cache,
        within the request deadline (RequestTimeout past it). The first sentence's
        opening phrase comes first, for earlier audio."""
        deadline = self._current().request_deadline()
        return bounded(deadline, self._tts().stream_cached(text, options, quick_start=True))

    def speak_stream(self, options: SynthesisOptions) -> SentenceSpeaker:
        """A voice for text a client streams in pieces (spoken sentence by sentence
        through the TTS cache); its audio is due within the request deadline from the
        end of the text. At most ``limits.max_text_chars`` in all, and
        :data:`~daemon.speech.sentence_speaker.CLIENT_WAITING` sentences waiting."""
        limits = self._current().limits
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
