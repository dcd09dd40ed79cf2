"""The narrow interface the speech session needs from an ASR model."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from daemon.engines.asr.commands import (
    CommandReader,
    Scored,
    choose,
    near_enough,
    spoken,
    written,
)
from daemon.engines.asr.hints import Hinter, keeps
from daemon.errors import InvalidRequest, UnsupportedLanguage

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class TranscribeOptions:
    """Per-request decoding options; None means the model's configured default."""

    beam_size: int | None = None
    language: str | None = None
    """ISO code; None uses the model default, "auto" detects."""
    task: Literal["transcribe", "translate"] = "transcribe"
    initial_prompt: str | None = None
    timestamps: bool = False
    """Decode segment timestamps (subtitles); off is faster."""
    speech_end_s: float | None = None
    """Where the speech the VAD heard ends in this audio (s; None: unknown). A model
    that can place its words in time then says which of them start after it:
    Whisper writes words into the silence after an unfinished sentence ("Set a timer
    for it."), and :attr:`Transcript.heard` leaves them out."""

    def __post_init__(self) -> None:
        if self.beam_size is not None and not 1 <= self.beam_size <= 10:
            raise InvalidRequest(f"beam_size must be between 1 and 10, got {self.beam_size}")
        if self.task not in ("transcribe", "translate"):
            raise InvalidRequest(f"task must be transcribe or translate, got {self.task!r}")
        if self.language is not None and (
            len(self.language) > 16 or not self.language.replace("_", "").isalpha()
        ):
            raise InvalidRequest(f"language must be an ISO code, got {self.language!r}")
        if self.initial_prompt is not None and len(self.initial_prompt) > 1000:
            raise InvalidRequest("initial_prompt must be at most 1000 characters")


@dataclass(frozen=True)
class Segment:
    """A piece of a transcript with its place in the audio."""

    start_s: float
    """Start (s from the beginning of the audio)."""
    end_s: float
    """End (s)."""
    text: str


@dataclass(frozen=True)
class Transcript:
    """A finished transcription."""

    text: str
    language: str
    audio_s: float
    """Seconds of audio decoded."""
    language_probability: float = 1.0
    segments: tuple[Segment, ...] = ()
    """Timed pieces, where the model reports them."""
    heard_text: str | None = None
    """The words that start before the end of speech (``speech_end_s``), where the
    model placed its words after it; None: every word of ``text`` was heard."""

    @property
    def heard(self) -> str:
        """The text without words written after the end of speech (see
        :attr:`TranscribeOptions.speech_end_s`)."""
        return self.text if self.heard_text is None else self.heard_text


class AsrModel(ABC):
    """One loaded speech-to-text model, shared by all sessions; calls are blocking."""

    name: str
    languages: tuple[str, ...]
    device: str
    max_prompt_tokens: int | None = None
    """Prompt tokens the model takes without harm (None: the prompt's character cap alone)."""

    def token_counter(self) -> Callable[[str], int] | None:
        """How many tokens a text takes in this model's prompt (None: unknown, e.g. a
        remote model)."""
        return None

    def check_options(self, options: TranscribeOptions) -> None:
        """Refuse what this model cannot do (UnsupportedLanguage), before any audio.

        The one language check every protocol meets: without it an English-only model
        asked for German answers in English, as if it had understood.
        """
        language = options.language
        if language is None or language == "auto":
            return
        if language.lower() not in self.languages:
            shown = ", ".join(self.languages[:20]) + (" ..." if len(self.languages) > 20 else "")
            raise UnsupportedLanguage(
                f"model '{self.name}' does not support language '{language}'; "
                f"it supports: {shown} (or 'auto')"
            )

    def window_counts(self) -> dict[tuple[str, str], int]:
        """Decodes in a cut window so far, by (window seconds, guard verdict); {}: none."""
        return {}

    @abstractmethod
    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        """Decode 16 kHz mono float32 audio (blocking; call from a worker)."""

    def score_texts(
        self, audio: np.ndarray, options: TranscribeOptions, texts: Sequence[str]
    ) -> list[float] | None:
        """Each text's mean token log-probability on ``audio`` (blocking); None: this
        model cannot tell (a remote one), and no command-aware reading is made."""
        return None

    def read_command(
        self,
        audio: np.ndarray,
        options: TranscribeOptions,
        first: Transcript,
        reader: CommandReader,
    ) -> Transcript:
        """``first``, or the command sentence ``reader`` names that the audio supports
        about as well (:mod:`daemon.engines.asr.commands`). Blocking; a failure leaves
        the first reading."""
        try:
            found = [c for c in reader.candidates(first.text) if near_enough(first.text, c)]
            if not found:
                return first
            texts = [first.text, *(spoken(c) for c in found)]
            scores = self.score_texts(audio, options, texts)
        except Exception as exc:  # noqa: BLE001 - the first reading stands
            _LOGGER.warning("The command reading failed (%s)", type(exc).__name__)
            return first
        if scores is None:
            return first
        own = Scored(first.text, scores[0])
        rest = [Scored(written(c), s) for c, s in zip(found, scores[1:], strict=True)]
        chosen = choose(own, rest)
        return first if chosen is None else replace(first, text=chosen.text, heard_text=None)

    def transcribe_hinted(
        self,
        audio: np.ndarray,
        options: TranscribeOptions,
        hinter: Hinter | None,
        commands: CommandReader | None = None,
    ) -> Transcript:
        """Decode, then read again with the prompt ``hinter`` gives for what was heard,
        keeping the second reading only when it writes a name the first did not (see
        :mod:`daemon.engines.asr.hints`); with ``commands``, a first reading that is no
        command may become the command the audio supports (:meth:`read_command`), and
        then no second reading is made. Blocking. The default decodes twice; a model
        that can reuse the first reading's work overrides it."""
        first = self.transcribe(audio, options)
        if commands is not None:
            command = self.read_command(audio, options, first, commands)
            if command is not first:
                return command
        hint = None if hinter is None else hinter.hint(first.text)
        if hint is None:
            return first
        try:
            second = self.transcribe(audio, replace(options, initial_prompt=hint.prompt))
        except Exception as exc:  # noqa: BLE001 - the first reading stands
            _LOGGER.warning("The second reading failed (%s); the first stands", type(exc).__name__)
            return first
        return second if keeps(first.text, second.text, hint.names) else first

    def transcribe_segments(
        self, audio: np.ndarray, options: TranscribeOptions
    ) -> Iterator[Segment | Transcript]:
        """Yield segments as they are decoded, then the whole Transcript (blocking).

        The default decodes everything at once; models that decode lazily override it.
        """
        result = self.transcribe(audio, options)
        yield from result.segments or (Segment(0.0, result.audio_s, result.text),)
        yield result
