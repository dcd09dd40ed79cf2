"""Transcribing complete audio (uploaded files), with timing, segments and translation.

Streaming speech goes through :class:`daemon.speech.session.SpeechSession`; this module
serves the requests that arrive as a whole file, and the second decode that turns
an utterance into English when a client asks for a translation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import numpy as np

from daemon.audio.pcm import RATE, decode_file, pcm_to_float
from daemon.engines.access import AsrAccess
from daemon.engines.asr.base import AsrModel, Segment, TranscribeOptions, Transcript


@dataclass(frozen=True)
class FileTranscript:
    """A whole file's transcript and what it cost."""

    text: str
    language: str
    audio_ms: int
    """Length of the decoded audio (ms)."""
    infer_ms: float
    """Wall time of the decode (ms), queueing included."""
    segments: tuple[Segment, ...] = ()
    translation: str | None = None
    """English translation, when asked for."""
    speaker: str | None = None
    """The enrolled speaker whose voice it is (asked for, and found)."""
    identified: bool = False
    """Whether the voice was compared with enrolled ones (asked for, and anyone is
    enrolled): then ``speaker`` None means a voice nobody enrolled."""


async def decode_upload(data: bytes, max_seconds: float) -> np.ndarray:
    """Any file PyAV reads, as 16 kHz mono int16 (InvalidAudio, AudioTooLong)."""
    return await asyncio.to_thread(decode_file, data, max_seconds)


def _multilingual(model: AsrModel) -> bool:
    return tuple(model.languages) != ("en",)


async def transcribe_samples(
    engines: AsrAccess,
    samples: np.ndarray,
    model: str | None,
    options: TranscribeOptions,
    translate: bool = False,
) -> FileTranscript:
    """Decode 16 kHz int16 samples in the ASR pool; optionally translate to English.

    Args:
        engines: the loaded engines.
        samples: 16 kHz mono int16 audio.
        model: ASR model name (None: the default).
        options: beam size, language, prompt, timestamps (task is set here).
        translate: also decode with Whisper's translate task.

    Returns:
        Text, language, segments, timing and the translation when asked for.
    """
    asr = engines.asr_model(model, options.language)
    asr.check_options(options)
    audio = await asyncio.to_thread(pcm_to_float, samples)  # up to an hour: not on the loop
    began = time.perf_counter()
    options = dataclasses.replace(options, task="transcribe")
    result: Transcript = await engines.asr_pool.run(asr.transcribe, audio, options)
    translation = None
    if translate:
        translation = await translate_audio(engines, asr, audio, options, result.text)
    return FileTranscript(
        text=result.text,
        language=result.language,
        audio_ms=int(len(samples) * 1000 / RATE),
        infer_ms=(time.perf_counter() - began) * 1000.0,
        segments=result.segments,
        translation=translation,
    )


async def translate_audio(
    engines: AsrAccess,
    asr: AsrModel,
    audio: np.ndarray,
    options: TranscribeOptions,
    text: str,
) -> str:
    """English text of ``audio`` (float32, 16 kHz) whose transcript is ``text``.

    An English-only model can only hear English: its transcript is the translation,
    and no second decode is spent on it.
    """
    if not _multilingual(asr) or not text:
        return text
    result: Transcript = await engines.asr_pool.run(
        asr.transcribe, audio, dataclasses.replace(options, task="translate")
    )
    return result.text


async def stream_segments(
    engines: AsrAccess, samples: np.ndarray, model: str | None, options: TranscribeOptions
) -> AsyncIterator[Segment | Transcript]:
    """Segments as the model decodes them, then the whole Transcript."""
    asr = engines.asr_model(model, options.language)
    asr.check_options(options)
    audio = await asyncio.to_thread(pcm_to_float, samples)
    async for item in engines.asr_pool.stream(lambda: asr.transcribe_segments(audio, options)):
        yield item
