"""Hearth's one internal event vocabulary.

The speech session and the pipeline emit these; each protocol adapter only
translates them to its wire format (Wyoming events, JSON, data-channel messages).
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.engines.llm.base import ToolCall


@dataclass(frozen=True)
class VoiceStarted:
    """The VAD found the start of speech."""

    at_ms: int
    """Audio time of speech onset (ms since the stream began)."""


@dataclass(frozen=True)
class VoiceStopped:
    """The VAD found the end of the utterance (trailing silence reached)."""

    at_ms: int
    """Audio time where speech ended (ms)."""


@dataclass(frozen=True)
class PartialTranscript:
    """Text decoded so far while audio is still arriving."""

    text: str
    audio_ms: int
    """Audio decoded for this partial (ms)."""


@dataclass(frozen=True)
class SpeculativeTranscript:
    """A decode of the utterance so far, made when the speaker paused.

    The final transcript is usually the same text; a pipeline may start its reply on it.
    """

    text: str
    speech_ms: int
    """Length of the trimmed speech that was decoded (ms)."""


@dataclass(frozen=True)
class SpeculationDiscarded:
    """Speech resumed: the last speculative transcript no longer stands."""


@dataclass(frozen=True)
class FinalTranscript:
    """The utterance's transcript."""

    text: str
    language: str
    audio_ms: int
    """Length of the whole input (ms)."""
    speech_ms: int
    """Length of the trimmed speech that was decoded (ms); 0 when none."""
    decode_ms: float
    """Wall time spent decoding the final result (ms)."""
    speculative: bool = False
    """True when a speculative decode started before the end of input was used."""
    speaker: str | None = None
    """The enrolled speaker whose voice this is, when verification found one."""
    verified: tuple[tuple[str, float], ...] = ()
    """Verification asked: every enrolled speaker whose voice matched at or above the
    threshold, with its cosine similarity, best first."""
    translation: str | None = None
    """The utterance in English, when a translation was asked for."""


@dataclass(frozen=True)
class ReplyStarted:
    """The LLM began answering."""

    conversation_id: str


@dataclass(frozen=True)
class ReplyChunk:
    """A piece of the streamed LLM reply."""

    text: str


@dataclass(frozen=True)
class ReplyDone:
    """The whole LLM reply."""

    text: str
    conversation_id: str
    tool_calls: tuple[ToolCall, ...] = ()
    """The functions the reply called (tools were offered): the exchange goes on with
    their results, so it is not remembered yet."""


@dataclass(frozen=True)
class SpeechAudioStart:
    """Spoken reply audio begins (mono s16 PCM follows)."""

    rate: int
    """Sample rate (Hz)."""
    width: int = 2
    """Bytes per sample."""
    channels: int = 1


@dataclass(frozen=True)
class SpeechAudio:
    """A block of spoken reply audio (mono s16 PCM)."""

    pcm: bytes
    sentence: str
    """The sentence this audio speaks."""


@dataclass(frozen=True)
class SpeechAudioStop:
    """Spoken reply audio is complete."""


@dataclass(frozen=True)
class RunError:
    """A stage failed; ``code`` is the typed error's stable kebab-case code."""

    code: str
    message: str


@dataclass(frozen=True)
class ReplyInterrupted:
    """The person spoke again (or asked for something else): the reply stopped."""

    text: str
    """What the LLM had written of the reply when it stopped."""


@dataclass(frozen=True)
class UtteranceIgnored:
    """An utterance was heard and set aside: no reply follows it."""

    text: str
    reason: str
    """Stable kebab-case reason: ``unknown-speaker`` (the household gate)."""
    speaker: str | None = None


@dataclass(frozen=True)
class PhaseChanged:
    """A conversation moved to another phase (see ``conversation_state.Phase``)."""

    phase: str


@dataclass(frozen=True)
class RunEnded:
    """The pipeline run is over (always the last event)."""


SessionEvent = (
    VoiceStarted
    | VoiceStopped
    | PartialTranscript
    | SpeculativeTranscript
    | SpeculationDiscarded
    | FinalTranscript
)
PipelineEvent = (
    SessionEvent
    | ReplyStarted
    | ReplyChunk
    | ReplyDone
    | SpeechAudioStart
    | SpeechAudio
    | SpeechAudioStop
    | RunError
    | RunEnded
)
ConversationNote = ReplyInterrupted | UtteranceIgnored | PhaseChanged
"""What a conversation adds to the pipeline's events (see ``speech.conversation``)."""
