"""A second look at an encoded window: where its words lie, and how well other texts fit.

After a decode in a cut window, the encoder's output is still at hand, and the decoder
alone answers two more questions cheaply: where each word of the reading lies in time
(:mod:`daemon.engines.asr.tail`: a word written into the silence after the speech), and
how well the household's command sentences fit the same audio
(:mod:`daemon.engines.asr.score`, :mod:`daemon.engines.asr.commands`). A
:class:`WindowReading` holds one utterance's window for both; so does
:meth:`WhisperAsr.score_texts <daemon.engines.asr.whisper.WhisperAsr.score_texts>`,
which encodes the audio first.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from daemon.audio.pcm import RATE
from daemon.engines.asr import score, tail
from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.asr.commands import CommandReader

_LOGGER = logging.getLogger(__name__)


@dataclass
class WindowReading:
    """One utterance's encoded window, and the model that encoded it."""

    model: Any
    """The faster-whisper model."""
    multilingual: bool
    encoded: Any
    """The encoder's output for this utterance alone (a batch of one)."""
    audio: np.ndarray
    options: TranscribeOptions
    language: str
    frames: int
    """Mel frames of real audio in the window."""

    def tokenizer(self) -> Any:
        """The tokenizer of this window's language and task."""
        from faster_whisper.tokenizer import Tokenizer

        task = self.options.task if self.multilingual else "transcribe"
        return Tokenizer(
            self.model.hf_tokenizer, self.multilingual, task=task, language=self.language
        )

    def heard(self, text: str) -> str | None:
        """``text`` without the words placed after the end of speech, when the options
        say where it is; None: every word was heard (or it could not be told)."""
        end_s = self.options.speech_end_s
        if end_s is None or not text:
            return None
        try:
            words = tail.align(self.model, self.tokenizer(), self.encoded, [text], [self.frames])
        except Exception as exc:  # noqa: BLE001 - the words stand as decoded
            _LOGGER.warning("Placing the words in time failed (%s)", type(exc).__name__)
            return None
        return tail.heard_text(words[0], end_s)

    def scores(self, texts: Sequence[str]) -> list[float]:
        """Each text's mean token log-probability on this window."""
        return score.score(self.model, self.tokenizer(), self.encoded, self.frames, texts)

    def command(self, text: str, reader: CommandReader) -> str | None:
        """The command sentence that replaces the reading ``text``, or None: it stays."""
        first = Transcript(text, self.language, len(self.audio) / RATE)
        chosen = _Scorer(self).read_command(self.audio, self.options, first, reader)
        return None if chosen is first else chosen.text


class _Scorer(AsrModel):
    """:meth:`AsrModel.read_command` over a window already encoded."""

    name = "window"
    languages = ()
    device = "cpu"

    def __init__(self, window: WindowReading) -> None:
        self._window = window

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        raise NotImplementedError("a window reading only scores")

    def score_texts(
        self, audio: np.ndarray, options: TranscribeOptions, texts: Sequence[str]
    ) -> list[float] | None:
        return self._window.scores(texts)
