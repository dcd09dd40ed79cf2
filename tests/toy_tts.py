"""A toy TTS engine that plugs in (``tts.backend: tests.toy_tts``): eSpeak NG speaks.

It is what a new engine takes: this one module, whose ``BACKEND`` says how the engine
loads and which voices it brings, and the one config key. The end-to-end test hears
it speak over Wyoming.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Iterator

from daemon.engines.tts.base import SynthesisOptions, TtsEngine
from daemon.engines.tts.registry import EngineSettings, TtsBackend, engine_voice
from daemon.engines.tts.voices import VoiceInfo
from daemon.errors import ModelUnavailable

VOICES = {"toy-espeak": "en-us", "toy-espeak-gb": "en-gb"}
"""The toy's voices: eSpeak NG's own voices under Hearth names."""
RATE = 22050
"""eSpeak NG's output rate."""


class EspeakTts(TtsEngine):
    """eSpeak NG as a synthesizer (blocking calls, in Hearth's TTS worker)."""

    device = "cpu"

    def __init__(self) -> None:
        self.calls = 0

    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        self.calls += 1
        wpm = str(round(175 * options.speed * voice.speed))
        command = ["espeak-ng", "-v", VOICES[voice.name], "-s", wpm, "--stdout", sentence]
        wav = subprocess.run(command, check=True, capture_output=True, timeout=30).stdout
        rate = struct.unpack("<I", wav[24:28])[0]
        if rate != RATE:
            raise ModelUnavailable(f"eSpeak NG spoke at {rate} Hz, not {RATE}")
        yield wav[44 : 44 + (len(wav) - 44) // 2 * 2]

    def preload(self, voice: VoiceInfo) -> None:
        if shutil.which("espeak-ng") is None:
            raise ModelUnavailable("the toy TTS engine needs espeak-ng")


def _voices() -> list[VoiceInfo]:
    return [
        engine_voice(name, lang.replace("-", "_"), RATE, "eSpeak NG")
        for name, lang in VOICES.items()
    ]


def _load(settings: EngineSettings) -> TtsEngine:
    return EspeakTts()


BACKEND = TtsBackend("espeak-toy", _load, _voices)
