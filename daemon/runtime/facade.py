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

from collections.abc import Callable
from dataclasses import dataclass

from daemon.config import Config
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.errors import InvalidRequest
from daemon.house.store import NameStore
from daemon.ops.mdns import instance_name
from daemon.runtime.engines import Engines
from daemon.runtime.profiles import Profile, Sensitivity, session_profiles
from daemon.runtime.reply_door import ReplyDoor
from daemon.runtime.speech_door import SpeechDoor
from daemon.speakers.service import SpeakerService
from daemon.speech.chat import ChatOptions
from daemon.speech.conversation import Conversation, Hearing, Mode, Playback
from daemon.speech.session import SpeechSession


@dataclass(frozen=True)
class ModelView:
    """A loaded model as clients are told of it (Wyoming ``info``, ``/v1/models``)."""

    name: str
    device: str
    """Where it runs: ``cpu``, ``cuda``, ``remote``..."""
    languages: tuple[str, ...] = ()
    """Languages it speaks (ASR models; empty for the LLM)."""


class Hearth(SpeechDoor, ReplyDoor):
    """One loaded set of engines, seen through the methods the adapters need (speech
    in and wake words: :class:`SpeechDoor`; voices, speech out and chat:
    :class:`ReplyDoor`; views and conversations here)."""

    def __init__(
        self, engines: Engines, config: Config | None = None, house: NameStore | None = None
    ) -> None:
        self._engines = engines
        self.config = config or engines.config
        """The configuration in force: a reload that swaps no engines (``willow.*``,
        ``speakers.require``, limits read per request) gives a new facade over the
        same engines."""
        self._profiles = session_profiles(self.config)
        self._house = house
        """The household's names, which every speech session's prompt ends with."""

    def wraps(self, engines: Engines, config: Config) -> bool:
        """Whether this facade is over ``engines`` under ``config`` (the service makes
        a new one after a reload)."""
        return self._engines is engines and self.config is config

    # ---------------------------------------------------------------- views

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


_MODE_PROFILES = {
    Mode.PUSH_TO_TALK: Profile.PUSH_TO_TALK,
    Mode.HANDS_FREE: Profile.HANDS_FREE,
    Mode.WAKE: Profile.WAKE,
}
