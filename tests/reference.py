"""The same model's own decode, in the test process: what a daemon's words are held to.

Quantized inference (CTranslate2 int8) gives different words on different CPUs (AVX2
only, AVX-512, AVX-512 with VNNI): eSpeak NG's German "Licht" is "licht" on one and
"Schaltermaslich" on another. A test that compares a daemon's transcript with stored
words then fails on some machines for no fault of the daemon. A :class:`Reference`
loads the daemon's own configuration (its ASR models, on this CPU) and decodes the same
audio with the same options through the same code as the request under test, so the
daemon's words can be required to be exactly these.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from daemon.config import load_config
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.hardware import probe
from daemon.runtime.engines import Engines
from daemon.runtime.loading import load_engines
from daemon.speech.transcribe import FileTranscript, transcribe_samples
from tests.daemon import Daemon


class Reference:
    """The ASR models of a daemon's configuration, loaded here (no TTS, no LLM)."""

    def __init__(self, engines: Engines) -> None:
        self.engines = engines

    def file(
        self, samples: np.ndarray, model: str | None, options: TranscribeOptions
    ) -> FileTranscript:
        """What a whole-file request (OpenAI transcription, WIS ``/api/asr``) decodes of
        16 kHz int16 ``samples`` with ``options``."""
        return asyncio.run(transcribe_samples(self.engines, samples, model, options))


@contextmanager
def reference_of(daemon: Daemon) -> Iterator[Reference]:
    """A :class:`Reference` for ``daemon``'s configuration; its models are closed after."""
    engines = load_engines(load_config(daemon.config_path), probe(), tts=False, llm=False)
    try:
        yield Reference(engines)
    finally:
        engines.close()
