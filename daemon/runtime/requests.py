"""What a client asks of the core's services, each as one small frozen value.

A protocol adapter fills one of these from its wire request and hands it to a service
of :mod:`daemon.runtime.services`, instead of passing a dozen keyword arguments: how a
conversation is to hear (:class:`Listening`), one spoken request (:class:`SpokenRequest`),
both with their :class:`Decoding` and :class:`Replies`; a whole file (:class:`FileRequest`),
a voice a client names (:class:`VoiceRequest`) and a client's own sampling
(:class:`ClientSampling`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.tts.base import SynthesisOptions
from daemon.runtime.profiles import Profile, Sensitivity
from daemon.speech.conversation import Mode
from daemon.speech.finals import Identify


@dataclass(frozen=True)
class Decoding:
    """Which ASR model decodes a client's speech, and how."""

    model: str | None = None
    """ASR model name (None: the default)."""
    transcribe: TranscribeOptions | None = None
    """Language, beam size and prompt for its decodes."""
    partials: bool | None = None
    """Decode partial transcripts (None: as the profile says)."""


@dataclass(frozen=True)
class Replies:
    """Whether what a client says is answered through the LLM, and how."""

    on: bool = False
    """Answer each utterance through the LLM."""
    speak: bool = True
    """Speak the answer (else its text only)."""
    voice: SynthesisOptions | None = None
    """The reply's voice (None: the default voice)."""


@dataclass(frozen=True)
class Listening:
    """How a conversation is to hear (see :meth:`SpeechIn.hearing`)."""

    mode: Mode
    """Push-to-talk, hands-free or wake."""
    decoding: Decoding = Decoding()
    replies: Replies = Replies()
    wake_word: str | None = None
    """The wake model (wake mode only)."""
    profile: Profile | None = None
    """The session timing (None: the mode's own profile)."""
    sensitivity: Sensitivity = Sensitivity.DEFAULT
    """How soon the client wants its turn ended (hands-free)."""
    identify: Identify = Identify.NAME
    """What the client wants to know of who spoke."""
    translate: bool = False
    """Each final carries its English translation too."""


@dataclass(frozen=True)
class SpokenRequest:
    """One utterance a client sends and waits on (see :meth:`SpeechIn.open_request`)."""

    profile: Profile
    """The client's timing and bounds (who ends it, the audio cap, the deadline)."""
    decoding: Decoding = Decoding()
    sensitivity: Sensitivity = Sensitivity.DEFAULT
    """How soon the client wants its turn ended."""
    identify: Identify = Identify.NAME
    """What the client wants to know of who spoke."""
    translate: bool = False
    """The final carries its English translation too."""
    replies: Replies = Replies()
    """Whether the utterance is answered through the LLM (and spoken)."""
    conversation_id: str = ""
    """Whose history a reply uses and extends ("": a new one)."""
    stream: bool = False
    """The caller reads :meth:`SpeechRequest.events` (else only the final)."""
    record_to: Path | None = None
    """Keep the audio as a WAV file in this folder once answered."""

    def listening(self) -> Listening:
        """How its conversation hears: push-to-talk, as the profile says."""
        return Listening(
            Mode.PUSH_TO_TALK,
            decoding=self.decoding,
            replies=self.replies,
            profile=self.profile,
            sensitivity=self.sensitivity,
            identify=self.identify,
            translate=self.translate,
        )


@dataclass(frozen=True)
class FileRequest:
    """A whole file to transcribe (any format PyAV reads)."""

    data: bytes
    model: str | None = None
    """ASR model name (None: the default)."""
    transcribe: TranscribeOptions = TranscribeOptions()
    """Language, beam size and prompt for its decodes."""
    translate: bool = False
    """The transcript carries its English translation too."""
    identify: Identify = Identify.NONE
    """Who speaks in it, if the client wants to know."""


@dataclass(frozen=True)
class VoiceRequest:
    """A voice or speaker a client names, and how it is to sound."""

    name: str | None
    """A voice in the store, a speaker of the default voice, one of :attr:`aliases`, or
    empty for the default voice."""
    aliases: frozenset[str] = frozenset()
    """Names (lower case) that mean the default voice (``alloy``...)."""
    speed: float = 1.0
    sample_rate: int | None = None
    """Hz (None: the voice's own)."""


@dataclass(frozen=True)
class ClientSampling:
    """A client's own sampling; None keeps the configured value."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
