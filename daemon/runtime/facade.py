"""The narrow door the protocol adapters see Hearth through.

:class:`Hearth` wraps one loaded :class:`~daemon.runtime.engines.Engines` and offers
what an adapter asks of the core: open a conversation, or a spoken request (one turn a
client sends and waits on), heard as a named :class:`~daemon.runtime.profiles.Profile`
says; transcribe a file; open a wake-word stream; resolve a voice; speak; chat; and a
few read-only views (limits, the models and voices to advertise). Adapters never open
a speech session, wait for a speaker or arm a deadline: the profile's values do.
It is the shared services a protocol's handler factory is given, made explicit; the
engines container itself stays behind it. Adapters receive a ``Callable[[], Hearth]``
(built by :mod:`daemon.service`) and call it per request, so that a reload swaps
the engines under them; a request keeps the facade it started with.

Methods that need an engine that is not loaded raise
:class:`~daemon.errors.ModelUnavailable`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from daemon.config import Config
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.errors import InvalidRequest
from daemon.house.commands import CommandBook
from daemon.house.store import NameStore
from daemon.ops.deadline import Deadline
from daemon.ops.mdns import instance_name
from daemon.runtime.engines import Engines
from daemon.runtime.profiles import Profile, Sensitivity, session_profiles
from daemon.runtime.reply_door import ReplyDoor
from daemon.runtime.speakers_door import SpeakersDoor
from daemon.runtime.speech_door import SpeechDoor
from daemon.speakers.service import SpeakerService
from daemon.speakers.store import Speaker
from daemon.speech.chat import ChatOptions
from daemon.speech.conversation import Conversation, Hearing, Mode, Playback
from daemon.speech.finals import Identify
from daemon.speech.recording import Recording
from daemon.speech.request import SpeechRequest
from daemon.speech.session import SpeechSession

__all__ = ["Deadline", "Hearth", "ModelView", "Speaker"]


@dataclass(frozen=True)
class ModelView:
    """A loaded model as clients are told of it (Wyoming ``info``, ``/v1/models``)."""

    name: str
    device: str
    """Where it runs: ``cpu``, ``cuda``, ``remote``..."""
    languages: tuple[str, ...] = ()
    """Languages it speaks (ASR models; empty for the LLM)."""


class Hearth(SpeechDoor, ReplyDoor, SpeakersDoor):
    """One loaded set of engines, seen through the methods the adapters need (speech
    in and wake words: :class:`SpeechDoor`; voices, speech out and chat:
    :class:`ReplyDoor`; the people known by voice: :class:`SpeakersDoor`; views,
    conversations and requests here)."""

    def __init__(
        self,
        engines: Engines,
        config: Config | None = None,
        house: NameStore | None = None,
        commands: CommandBook | None = None,
    ) -> None:
        self._engines = engines
        self.config = config or engines.config
        """The configuration in force: a reload that swaps no engines (``willow.*``,
        ``speakers.require``, limits read per request) gives a new facade over the
        same engines."""
        self._profiles = session_profiles(self.config)
        self._house = house
        """The household's names, which every speech session's second reading looks for."""
        self._commands = commands
        """The household's commands, which a home's speech sessions are read against."""

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

    @property
    def home_control(self) -> bool:
        """Whether a conversation may carry out home commands (Home Assistant's agent
        does them: ``homeassistant`` configured with ``commands`` on)."""
        chat = self._engines.chat
        return chat is not None and chat.home is not None

    @property
    def can_end_turns(self) -> bool:
        """Whether the turn model is on (``vad.turn``): a session can tell a finished turn
        from a pause. Without it a client's own segmenter ends turns as well as a fixed
        silence here would, so a client is better left to end them."""
        return self.config.vad.turn != "off"

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
    def verifies(self) -> bool:
        """Whether speaker verification is on (``speakers.enabled`` and its model loaded)."""
        return self._engines.speakers is not None

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
        identify: Identify = Identify.NAME,
        translate: bool = False,
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
            identify: what the client wants to know of who spoke.
            translate: each final carries its English translation too.

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
            return hearth()._session(
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
            speaker_wait_s=self._profiles[chosen].speaker_wait_s,
            identify=identify,
            translate=translate,
        )

    async def open_request(
        self,
        hearth: Callable[[], Hearth],
        profile: Profile,
        *,
        model: str | None = None,
        transcribe: TranscribeOptions | None = None,
        sensitivity: Sensitivity = Sensitivity.DEFAULT,
        identify: Identify = Identify.NAME,
        translate: bool = False,
        reply: bool = False,
        tts_options: SynthesisOptions | None = None,
        conversation_id: str = "",
        stream: bool = False,
        record_to: Path | None = None,
    ) -> SpeechRequest:
        """One utterance a client sends and waits on: a push-to-talk turn of a new
        conversation, heard as ``profile`` says (who ends it, the audio cap, the deadline).

        Args:
            hearth: the current facade.
            profile: the client's timing and bounds.
            model: ASR model name (None: the default).
            transcribe: language, beam size and prompt for its decodes.
            sensitivity: how soon the client wants its turn ended.
            identify: what the client wants to know of who spoke.
            translate: the final carries its English translation too.
            reply: answer the utterance through the LLM (and speak it).
            tts_options: the reply's voice.
            conversation_id: whose history a reply uses and extends ("": a new one).
            stream: the caller reads :meth:`SpeechRequest.events` (else only the final).
            record_to: keep the audio as a WAV file in this folder once answered.

        Raises:
            UnknownModel, InvalidRequest: as :meth:`hearing`.
        """
        hearing = await self.hearing(
            hearth,
            Mode.PUSH_TO_TALK,
            model=model,
            transcribe=transcribe,
            reply=reply,
            tts_options=tts_options,
            profile=profile,
            sensitivity=sensitivity,
            identify=identify,
            translate=translate,
        )
        conversation = self.open_conversation(conversation_id or uuid.uuid4().hex, hearth)
        try:
            await conversation.listen(hearing)
            recording = Recording(record_to, "upload") if record_to is not None else None
            return SpeechRequest(
                conversation,
                self._limits(profile),
                stream=stream,
                replies=reply,
                recording=recording,
            )
        except BaseException:
            await conversation.close()
            raise


_MODE_PROFILES = {
    Mode.PUSH_TO_TALK: Profile.PUSH_TO_TALK,
    Mode.HANDS_FREE: Profile.HANDS_FREE,
    Mode.WAKE: Profile.WAKE,
}
