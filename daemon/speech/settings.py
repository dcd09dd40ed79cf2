"""A speech session's settings: the daemon's (from configuration, per profile) and a
request's own choices."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.asr.commands import CommandReader
from daemon.engines.asr.hints import Hinter
from daemon.speech.endpoint import EndpointConfig
from daemon.speech.turn_text import TurnPolicy


@dataclass(frozen=True)
class SessionSettings:
    """Daemon-wide session behaviour (from config)."""

    endpoint: EndpointConfig = EndpointConfig()
    padding_s: float = 0.12
    """Audio kept before speech onset and after speech end when trimming."""
    speculative_padding_s: float | None = None
    """Trailing audio a speculative decode waits for (None: all of ``padding_s``). A
    client that ends the audio itself (push-to-talk) may speculate on less: the decode
    is kept as long as no more speech follows, whatever silence arrives after it."""
    partial_interval_s: float = 0.6
    """New audio between two partial decodes."""
    turn: TurnPolicy = TurnPolicy()
    """How the turn model's answer and the speculative transcript decide a turn."""
    max_audio_s: float = 60.0
    max_sample_rate: int = 192000
    max_channels: int = 8

    def push_to_talk(self, silence_s: float) -> SessionSettings:
        """These settings for a client that ends the utterance itself (a button).

        The speculative decode starts after ``silence_s`` of silence, with that much
        trailing audio: the person still holds the button, so a wrong guess (speech
        goes on) costs one discarded decode, and a release finds the text ready.
        """
        return replace(
            self,
            endpoint=replace(self.endpoint, speculative_silence_s=silence_s),
            speculative_padding_s=min(silence_s, self.padding_s),
        )


@dataclass(frozen=True)
class SessionOptions:
    """Per-request choices."""

    transcribe: TranscribeOptions = TranscribeOptions()
    hints: Hinter | None = field(default=None, repr=False)
    commands: CommandReader | None = field(default=None, repr=False)
    """The household's commands: a speculative or final decode that is no command may
    become the command the audio supports (partials never)."""
    """Names a second reading may look for (the household's): speculative and final
    decodes read again with those resembling what they heard (partials never)."""
    partials: bool = True
    speculative: bool = True
    hands_free: bool = False
    """Many utterances in one stream: idle audio is dropped as it ages."""
    ends_turn: bool = False
    """The session ends the utterance itself: when the endpoint does, the final
    transcript is decoded and the stream ends; audio after it is dropped, and a later
    :meth:`SpeechSession.finish` changes nothing (Wyoming with ``requires_external_vad``
    false)."""
