"""The narrow door the protocol adapters see Hearth through.

:class:`Hearth` wraps one loaded :class:`~daemon.runtime.engines.Engines` and offers
what an adapter asks of the core: open a speech session from a named
:class:`~daemon.runtime.profiles.Profile`, open a wake-word stream, resolve a voice,
speak, chat, and a few read-only views (limits, the models and voices to advertise).
It is the shared services a protocol's handler factory is given, made explicit; the
engines container itself stays behind it. Adapters receive a ``Callable[[], Hearth]``
(built by :mod:`daemon.service`) and call it per request, so that a reload swaps
the engines under them; a request keeps the facade it started with.

Methods that need an engine that is not loaded raise
:class:`~daemon.errors.ModelUnavailable`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

import numpy as np

from daemon.audio.stream import OutputFormat
from daemon.config import Config, LimitsConfig
from daemon.engines.asr.base import Segment, TranscribeOptions, Transcript
from daemon.engines.llm.base import ChatMessage, ReplyPiece, Sampling, ToolSet
from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.engines.wake import WakeLibrary
from daemon.engines.wake.base import WakeModelInfo
from daemon.errors import InvalidRequest, ModelUnavailable, UnknownVoice
from daemon.ops.mdns import instance_name
from daemon.runtime.engines import Engines
from daemon.runtime.profiles import Profile, Sensitivity, session_profiles, with_sensitivity
from daemon.speakers.service import SpeakerService
from daemon.speech.chat import ChatOptions, ChatService
from daemon.speech.conversation import Conversation, Hearing, Mode, Playback
from daemon.speech.pipeline import PipelineRun, SpeculativeReplies, SpeechPipeline
from daemon.speech.session import SessionOptions, SpeechSession
from daemon.speech.speak import SpeechStream, open_speech
from daemon.speech.transcribe import (
    FileTranscript,
    stream_segments,
    transcribe_samples,
    translate_audio,
)
from daemon.speech.wake_gate import WakeListener
from daemon.voices.enroll import Enrollment, TakeCheck


@dataclass(frozen=True)
class ModelView:
    """A loaded model as clients are told of it (Wyoming ``info``, ``/v1/models``)."""

    name: str
    device: str
    """Where it runs: ``cpu``, ``cuda``, ``remote``..."""
    languages: tuple[str, ...] = ()
    """Languages it speaks (ASR models; empty for the LLM)."""


class Hearth:
    """One loaded set of engines, seen through the methods the adapters need."""

    def __init__(self, engines: Engines, config: Config | None = None) -> None:
        self._engines = engines
        self.config = config or engines.config
        """The configuration in force: a reload that swaps no engines (``willow.*``,
        ``speakers.require``, limits read per request) gives a new facade over the
        same engines."""
        self._profiles = session_profiles(self.config)

    def wraps(self, engines: Engines, config: Config) -> bool:
        """Whether this facade is over ``engines`` under ``config`` (the service makes
        a new one after a reload)."""
        return self._engines is engines and self.config is config

    # ---------------------------------------------------------------- views

    @property
    def limits(self) -> LimitsConfig:
        """The request limits in force."""
        return self.config.limits

    @property
    def display_name(self) -> str:
        """The name Hearth announces over mDNS (``mdns.name``)."""
        return instance_name(self.config.mdns)

    def asr_models(self) -> list[ModelView]:
        """Every configured ASR model, in configuration order."""
        return [
            ModelView(name, model.device, tuple(model.languages))
            for name, model in self._engines.asr.items()
        ]

    def has_asr_model(self, name: str) -> bool:
        """Whether an ASR model called ``name`` is configured."""
        return name in self._engines.asr

    def ends_turns(self, profile: Profile) -> bool:
        """Whether sessions of ``profile`` end the turn themselves (a Wyoming request
        with ``wyoming.end_of_turn`` server and the turn model on)."""
        return self._profiles[profile].ends_turn

    @property
    def llm(self) -> ModelView | None:
        """The LLM (None: not loaded)."""
        llm = self._engines.llm
        return ModelView(llm.name, llm.device) if llm is not None else None

    @property
    def speaks(self) -> bool:
        """Whether text-to-speech is loaded."""
        return self._engines.tts is not None

    @property
    def chats(self) -> bool:
        """Whether the LLM's chat service is loaded."""
        return self._engines.chat is not None

    @property
    def replies(self) -> bool:
        """Whether spoken replies can be made (the speech pipeline: LLM and TTS)."""
        return self._engines.pipeline is not None

    @property
    def voices(self) -> VoiceStore:
        """The voice store (listing, importing, changing voices)."""
        return self._engines.voices

    async def list_voices(self) -> list[VoiceInfo]:
        """Every voice in the store, read afresh in a worker thread."""
        return await self._engines.voices.list_async()

    @property
    def speakers(self) -> SpeakerService | None:
        """Speaker verification (None: ``speakers.enabled`` is off or its model did not load)."""
        return self._engines.speakers

    # ---------------------------------------------------------------- speech in

    def check_transcribe(self, model: str | None, options: TranscribeOptions) -> None:
        """Fail now on an unknown model, or options it cannot honour (a language it
        does not speak), before a request starts."""
        self._engines.asr_model(model, options.language).check_options(options)

    def open_session(
        self,
        profile: Profile,
        model: str | None = None,
        transcribe: TranscribeOptions | None = None,
        *,
        partials: bool | None = None,
        ends_turn: bool | None = None,
        sensitivity: Sensitivity = Sensitivity.DEFAULT,
    ) -> SpeechSession:
        """A speech session for one utterance (or, hands-free, a stream of them).

        Args:
            profile: the client's timing (see :mod:`daemon.runtime.profiles`).
            model: ASR model name (None: the default); UnknownModel otherwise.
            transcribe: language, beam size and prompt for its decodes.
            partials: decode partial transcripts (None: as the profile and
                ``asr.partials`` say).
            ends_turn: the session ends the utterance itself, and its final
                transcript comes while audio still arrives (None: as the profile
                says; see :meth:`ends_turns`).
            sensitivity: how soon the client wants its turn ended.

        Returns:
            The session; the caller starts, feeds, finishes and closes it.
        """
        engines = self._engines
        chosen = self._profiles[profile]
        if partials is None:
            partials = chosen.partials and engines.partials
        settings = with_sensitivity(chosen.settings, sensitivity, self.config.vad.turn_threshold)
        options = SessionOptions(
            transcribe=transcribe or TranscribeOptions(),
            partials=partials,
            hands_free=chosen.hands_free,
            ends_turn=chosen.ends_turn if ends_turn is None else ends_turn,
        )
        return engines.new_session(model, options, settings)

    async def transcribe_file(
        self,
        samples: np.ndarray,
        model: str | None,
        options: TranscribeOptions,
        translate: bool = False,
    ) -> FileTranscript:
        """Decode a whole file's 16 kHz int16 samples (and translate them when asked)."""
        return await transcribe_samples(self._engines, samples, model, options, translate)

    def stream_file(
        self, samples: np.ndarray, model: str | None, options: TranscribeOptions
    ) -> AsyncIterator[Segment | Transcript]:
        """A whole file's segments as they are decoded, then its Transcript."""
        return stream_segments(self._engines, samples, model, options)

    async def translate(
        self, session: SpeechSession, audio: np.ndarray, options: TranscribeOptions, text: str
    ) -> str:
        """English text of a session's utterance ``audio`` whose transcript is ``text``."""
        return await translate_audio(self._engines, session.asr, audio, options, text)

    async def add_take(
        self, enrollment: Enrollment, data: bytes | np.ndarray, index: int | None
    ) -> TakeCheck:
        """Check a recorded take with ASR and VAD, and keep it in ``enrollment`` if good."""
        return await enrollment.add_take(self._engines, data, index)

    # ---------------------------------------------------------------- wake

    @property
    def wakes(self) -> bool:
        """Whether wake-word detection is on (``wake.enabled``)."""
        return self._engines.wake is not None

    def _wake(self) -> WakeLibrary:
        wake = self._engines.wake
        if wake is None:
            raise InvalidRequest("wake-word detection is not enabled (wake.enabled)")
        return wake

    async def wake_models(self) -> list[WakeModelInfo]:
        """Every wake model, with custom ones just dropped into the folder; none when off."""
        wake = self._engines.wake
        if wake is None:
            return []
        await self._engines.wake_pool.run(wake.refresh)
        return list(wake.models.values())

    def wake_model(self, name: str) -> WakeModelInfo:
        """The wake model called ``name`` (InvalidRequest when unknown or wake is off)."""
        wake = self._wake()
        wake.check_names([name])
        return wake.models[name]

    @property
    def wake_command_timeout_s(self) -> float:
        """How long after the wake word a command may take to begin (s)."""
        return self.config.wake.command_timeout_s

    async def open_wake(self, names: list[str] | None) -> WakeListener:
        """A wake-word listener for ``names`` (None: every model); the caller closes it.

        The model folder is looked at first, so a custom model dropped in since counts.
        Raises InvalidRequest when wake is off or a name is unknown.
        """
        wake = self._wake()
        pool = self._engines.wake_pool
        await pool.run(wake.refresh)
        wake.check_names(names)
        stream = await pool.run(wake.stream, names)
        limits = self.limits
        return WakeListener(stream, pool, limits.max_sample_rate, limits.max_channels)

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

    def check_speech(self, text: str, options: SynthesisOptions) -> None:
        """Fail now on text that cannot be spoken (empty, too long) or an unknown voice."""
        self._tts().prepare(text, options)

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
        """Synthesized audio of ``text``, sentence by sentence, through the TTS cache."""
        return self._tts().stream_cached(text, options)

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

    def chat(self, conversation_id: str, text: str) -> AsyncIterator[str]:
        """The LLM's reply to ``text``, streamed; the conversation's history is used and
        extended ("" keeps none)."""
        return self._chat().chat(conversation_id, text)

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str]:
        """The LLM's reply to a client's whole message list (no stored history), with
        the configured sampling where a value is None."""
        chat = self._chat()
        return chat.complete(messages, _sampling(chat, temperature, top_p, max_tokens))

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
        earlier calls and their results (``tool`` turns)."""
        chat = self._chat()
        sampling = _sampling(chat, temperature, top_p, max_tokens)
        return chat.complete_tools(messages, tools, sampling)

    async def count_tokens(self, messages: list[ChatMessage], reply: str) -> tuple[int, int]:
        """Tokens of a prompt and of its reply (a local model tokenizes, off the loop)."""
        llm = self._chat().llm

        def count() -> tuple[int, int]:
            return llm.count_tokens(messages), llm.count_tokens([ChatMessage("assistant", reply)])

        return await asyncio.to_thread(count)

    def _pipeline(self) -> SpeechPipeline:
        pipeline = self._engines.pipeline
        if pipeline is None:
            raise ModelUnavailable("the speech pipeline engine is not loaded")
        return pipeline

    def start_reply(
        self,
        session: SpeechSession,
        conversation_id: str,
        *,
        speak: bool = True,
        tts_options: SynthesisOptions | None = None,
    ) -> PipelineRun:
        """Transcript → LLM → speech for one utterance of ``session``; read the run's
        events from now on, while its audio still arrives."""
        return self._pipeline().start(
            session=session, conversation_id=conversation_id, speak=speak, tts_options=tts_options
        )

    def reply_to_each(
        self, conversation_id: str, speak: bool, tts_options: SynthesisOptions | None = None
    ) -> SpeculativeReplies:
        """Replies to each utterance of a hands-free stream, started speculatively."""
        return self._pipeline().replies(conversation_id, speak, tts_options)

    # ---------------------------------------------------------------- conversations

    def open_conversation(
        self,
        conversation_id: str,
        hearth: Callable[[], Hearth],
        playback: Playback | None = None,
    ) -> Conversation:
        """A conversation for one client (a WebRTC peer, a streamed upload).

        It reads its engines through ``hearth`` whenever it starts something, so it
        moves to new engines after a reload; ``playback`` is the client's player of
        reply audio (barge-in stops it). The caller closes it.
        """
        return Conversation(conversation_id, lambda: hearth()._engines, playback)

    def check_chat_options(self, options: ChatOptions) -> None:
        """Refuse a client's own instructions or limits before a reply uses them (too
        long a system prompt); ModelUnavailable without the LLM."""
        self._chat().check_options(options)

    async def hearing(
        self,
        hearth: Callable[[], Hearth],
        mode: Mode,
        *,
        model: str | None = None,
        transcribe: TranscribeOptions | None = None,
        partials: bool | None = None,
        reply: bool = False,
        speak: bool = True,
        tts_options: SynthesisOptions | None = None,
        wake_word: str | None = None,
        profile: Profile | None = None,
        sensitivity: Sensitivity = Sensitivity.DEFAULT,
    ) -> Hearing:
        """How a conversation is to hear, checked before anything stops.

        Args:
            hearth: the current facade (the speech session is opened from it again
                when the conversation renews itself after a reload).
            mode: push-to-talk, hands-free or wake.
            model: ASR model name (None: the default).
            transcribe: language and beam size for its decodes.
            partials: decode partial transcripts (None: as the profile says).
            reply: answer each utterance through the LLM.
            speak: speak the answer (else its text only).
            tts_options: the reply's voice.
            wake_word: the wake model (wake mode only).
            profile: the session timing (None: the mode's own profile).
            sensitivity: how soon the client wants its turn ended (hands-free).

        Raises:
            UnknownModel, InvalidRequest: an unknown model, language, voice or wake
                word, a wake word outside wake mode, or replies without the LLM.
        """
        engines = self._engines
        transcribe = transcribe or TranscribeOptions()
        tts_options = tts_options or SynthesisOptions()
        engines.asr_model(model, transcribe.language).check_options(transcribe)
        if reply:
            if engines.pipeline is None:
                raise InvalidRequest("spoken replies need the LLM, which is not enabled")
            if engines.tts is not None and speak:
                engines.tts.check_voice(tts_options)
        if (wake_word is not None) != (mode is Mode.WAKE):
            raise InvalidRequest("a wake word goes with hands-free listening ('listen')")
        wake = wake_model = None
        if wake_word is not None:
            wake_model = self.wake_model(wake_word)
            wake = await self.open_wake([wake_word])
        chosen = profile or _MODE_PROFILES[mode]

        def open_session() -> SpeechSession:
            return hearth().open_session(
                chosen, model, transcribe, partials=partials, sensitivity=sensitivity
            )

        continuous = mode is not Mode.PUSH_TO_TALK
        return Hearing(
            mode=mode,
            open_session=open_session,
            reply=reply,
            speak=speak,
            tts_options=tts_options,
            require_known=continuous and self.config.speakers.require == "known",
            wake=wake,
            wake_model=wake_model,
            command_timeout_s=self.config.wake.command_timeout_s,
        )


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


_MODE_PROFILES = {
    Mode.PUSH_TO_TALK: Profile.PUSH_TO_TALK,
    Mode.HANDS_FREE: Profile.HANDS_FREE,
    Mode.WAKE: Profile.WAKE,
}
