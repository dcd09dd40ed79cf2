"""faster-whisper (CTranslate2) speech-to-text."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..audio import RATE
from .base import AsrModel, Segment, TranscribeOptions, Transcript

_LOGGER = logging.getLogger(__name__)

# Languages Whisper's multilingual models know (ISO 639-1 where one exists).
MULTILINGUAL = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu "
    "ta no th ur hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn "
    "bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn "
    "mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
).split()


class WhisperAsr(AsrModel):
    """A loaded faster-whisper model."""

    def __init__(
        self,
        name: str,
        path: Path,
        device: str = "cpu",
        device_index: int = 0,
        compute_type: str = "int8",
        cpu_threads: int = 0,
        workers: int = 1,
        beam_size: int = 1,
        language: str = "",
    ) -> None:
        from faster_whisper import WhisperModel

        self.name = name
        self.path = path
        self.device = "cpu" if device == "cpu" else f"cuda:{device_index}"
        self.compute_type = compute_type
        self.default_beam = beam_size
        self._model = WhisperModel(
            str(path),
            device=device,
            device_index=device_index,
            compute_type=compute_type,
            # CTranslate2 defaults to 4 threads; more than the cores only slows it.
            cpu_threads=cpu_threads or min(4, os.cpu_count() or 1),
            num_workers=workers,
        )
        self.multilingual = bool(self._model.model.is_multilingual)
        self.default_language = language or ("" if self.multilingual else "en")
        self.languages = tuple(MULTILINGUAL) if self.multilingual else ("en",)

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        """Decode 16 kHz mono float32 audio.

        Args:
            audio: samples in [-1, 1] at 16 kHz.
            options: beam size, language (None: default, "auto": detect), task, prompt,
                timestamps.

        Returns:
            The joined text of every segment, the segments, and the language used or
            detected.
        """
        result = None
        for item in self.transcribe_segments(audio, options):
            if isinstance(item, Transcript):
                result = item
        assert result is not None
        return result

    def transcribe_segments(
        self, audio: np.ndarray, options: TranscribeOptions
    ) -> Iterator[Segment | Transcript]:
        """Yield each segment as faster-whisper decodes it, then the Transcript."""
        language = options.language
        if language is None:
            language = self.default_language or None
        if language == "auto":
            language = None
        if not self.multilingual:
            language = "en"
        task = options.task if self.multilingual else "transcribe"
        segments, info = self._model.transcribe(
            audio.astype(np.float32, copy=False),
            beam_size=options.beam_size or self.default_beam,
            language=language,
            task=task,
            initial_prompt=options.initial_prompt,
            condition_on_previous_text=False,
            without_timestamps=not options.timestamps,
            vad_filter=False,
        )
        # The generator decodes lazily: consume it here, inside the worker.
        parts: list[Segment] = []
        for segment in segments:
            piece = Segment(float(segment.start), float(segment.end), segment.text.strip())
            parts.append(piece)
            yield piece
        yield Transcript(
            text=" ".join(p.text for p in parts if p.text),
            language=info.language,
            audio_s=len(audio) / RATE,
            language_probability=float(info.language_probability or 1.0),
            segments=tuple(parts),
        )
