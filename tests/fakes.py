"""Fake engines for adapter tests: the real protocol code over engines that load no model.

Each fake implements one narrow engine interface (AsrModel, Vad, TtsEngine, LlmEngine)
and behaves deterministically, so a test can script what the daemon hears and says:

- :class:`FakeVad` calls a frame speech when its RMS passes a threshold: tones are
  speech, zeros are silence.
- :class:`FakeAsr` "hears" a phrase per tone frequency (a 220 Hz tone says one thing,
  a 440 Hz tone another); a shorter piece of the tone hears a prefix of the phrase,
  so partial transcripts grow the way Whisper's do.
- :class:`FakeTts` speaks a sentence as :func:`fake_speech` of it, at the voice's rate.
- :class:`FakeLlm` streams scripted tokens and records every prompt.

:func:`fake_engines` puts them into the real :class:`~daemon.runtime.engines.Engines`
container, built from a parsed config the way ``load_engines`` builds it; adapters
see it through the real services, :attr:`FakeEngines.services`, over
:attr:`FakeEngines.core` (replace it to swap the engines or the config, as a reload does).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daemon.audio.pcm import RATE
from daemon.config import Config, parse_config
from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.llm.base import ChatMessage, LlmEngine, Sampling
from daemon.engines.tts.base import SynthesisOptions, TtsEngine
from daemon.engines.tts.voices import VoiceInfo
from daemon.engines.vad.base import Vad, VadStream
from daemon.errors import ModelUnavailable
from daemon.runtime.context import Core
from daemon.runtime.engines import Engines
from daemon.runtime.services import Services

KITCHEN = "Turn on the kitchen lights"
TIME = "What time is it"
PHRASES = {220.0: KITCHEN, 440.0: TIME}
"""What :class:`FakeAsr` hears in a tone of each frequency (Hz)."""

# --------------------------------------------------------------------------- audio


def tone(seconds: float, freq: float = 220.0, rate: int = RATE, level: float = 0.3) -> np.ndarray:
    """A sine tone as int16 samples: speech to :class:`FakeVad`."""
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * freq * t) * level * 32767).astype(np.int16)


def silence(seconds: float, rate: int = RATE) -> np.ndarray:
    """Digital silence as int16 samples."""
    return np.zeros(int(seconds * rate), dtype=np.int16)


def utterance(freq: float = 220.0, speech_s: float = 1.2, rate: int = RATE) -> np.ndarray:
    """Silence, a tone, then enough silence for the endpointer to end the utterance."""
    return np.concatenate([silence(0.3, rate), tone(speech_s, freq, rate), silence(0.6, rate)])


def rms(samples: np.ndarray) -> float:
    """Root mean square of int16 or float samples, relative to full scale."""
    x = samples.astype(np.float32)
    if samples.dtype == np.int16:
        x /= 32768.0
    return float(np.sqrt(np.mean(x**2))) if x.size else 0.0


def fake_speech(sentence: str, rate: int) -> bytes:
    """What :class:`FakeTts` says for ``sentence``: 5 ms per character of a quiet ramp."""
    samples = max(1, len(sentence)) * rate // 200
    return ((np.arange(samples) % 200 - 100) * 50).astype("<i2").tobytes()


# --------------------------------------------------------------------------- VAD


class FakeVad(Vad):
    """Speech is any frame whose RMS reaches ``threshold`` (of full scale)."""

    name = "fake-energy"

    def __init__(self, threshold: float = 0.02, frame_samples: int = 480) -> None:
        self.threshold = threshold
        self.frame_samples = frame_samples
        self.frames = 0
        """Frames classified so far (all streams)."""

    def stream(self) -> VadStream:
        return _EnergyStream(self)


class _EnergyStream(VadStream):
    def __init__(self, vad: FakeVad) -> None:
        self.vad = vad
        self.frame_samples = vad.frame_samples

    def is_speech(self, frame: np.ndarray) -> bool:
        self.vad.frames += 1
        return rms(frame) >= self.vad.threshold


# --------------------------------------------------------------------------- ASR


@dataclass(frozen=True)
class AsrCall:
    """One decode the fake ASR was asked for."""

    samples: int
    options: TranscribeOptions
    text: str


class FakeAsr(AsrModel):
    """Hears :data:`PHRASES` by tone frequency; records every call.

    The number of words heard grows with the voiced audio (``words_per_s``), so a
    partial decode of the first half of a tone hears the first words of its phrase.
    """

    device = "cpu"
    default_language = "en"

    def __init__(
        self,
        name: str = "fake",
        languages: tuple[str, ...] = ("en",),
        phrases: dict[float, str] | None = None,
        words_per_s: float = 5.0,
    ) -> None:
        self.name = name
        self.languages = languages
        self.phrases = dict(PHRASES if phrases is None else phrases)
        self.words_per_s = words_per_s
        self.calls: list[AsrCall] = []

    def hear(self, audio: np.ndarray) -> str:
        """The text this fake hears in 16 kHz float32 audio."""
        block = RATE // 100
        blocks = [audio[i : i + block] for i in range(0, len(audio) - block + 1, block)]
        voiced = [b for b in blocks if rms(b) >= 0.01]
        if not voiced:
            return ""
        spectrum = np.abs(np.fft.rfft(np.concatenate(voiced)))
        freq = float(np.argmax(spectrum)) * RATE / (len(voiced) * block)
        near = [f for f in self.phrases if abs(f - freq) <= 20.0]
        if not near:
            return ""
        words = self.phrases[near[0]].split()
        heard = min(len(words), math.ceil(len(voiced) / 100 * self.words_per_s))
        return " ".join(words[:heard])

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        text = self.hear(audio)
        self.calls.append(AsrCall(len(audio), options, text))
        language = options.language if options.language not in (None, "auto") else "en"
        return Transcript(text, language, len(audio) / RATE)


# --------------------------------------------------------------------------- TTS


@dataclass(frozen=True)
class Spoken:
    """One sentence the fake TTS was asked to speak."""

    voice: str
    sentence: str
    speaker: str | None


class FakeTts(TtsEngine):
    """Speaks :func:`fake_speech` of each sentence at the voice's native rate."""

    device = "cpu"

    def __init__(self) -> None:
        self.spoken: list[Spoken] = []
        self.preloaded: list[str] = []

    def preload(self, voice: VoiceInfo) -> None:
        self.preloaded.append(voice.name)

    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        self.spoken.append(Spoken(voice.name, sentence, options.speaker))
        pcm = fake_speech(sentence, voice.sample_rate)
        half = len(pcm) // 4 * 2
        yield pcm[:half]
        yield pcm[half:]


# --------------------------------------------------------------------------- LLM


class FakeLlm(LlmEngine):
    """Streams ``tokens`` as the reply to every prompt; records the prompts.

    ``script``: replies for the first prompts, in order (then ``tokens``); a reply may
    call tools in the Hermes way (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``),
    which the base class's ``stream_tools`` reads back.
    """

    device = "cpu"

    def __init__(
        self,
        tokens: list[str] | None = None,
        name: str = "fake-llm",
        context_tokens: int = 0,
        script: list[list[str]] | None = None,
    ) -> None:
        self.name = name
        self.context_tokens = context_tokens
        """0: unknown, as for a remote server."""
        self.tokens = list(tokens or ["The kitchen", " lights are", " on now."])
        self.script = [list(reply) for reply in script or []]
        self.prompts: list[list[ChatMessage]] = []

    @property
    def reply(self) -> str:
        """The whole scripted reply."""
        return "".join(self.tokens).strip()

    async def stream_chat(
        self, messages: list[ChatMessage], sampling: Sampling
    ) -> AsyncIterator[str]:
        self.prompts.append(list(messages))
        for token in self.script.pop(0) if self.script else self.tokens:
            await asyncio.sleep(0)
            yield token


# --------------------------------------------------------------------------- engines


TEST_CONFIG = """\
state_dir: {state_dir}
asr:
  default_model: fake
  models:
    fake: {{}}
    other: {{}}
  partials: "on"
  partial_interval_ms: 200
vad:
  speech_start_ms: 60
  speculative_silence_ms: 120
  trailing_silence_ms: 300
  padding_ms: 100
tts:
  sentence_silence_ms: 0
  cache:
    enabled: false
wyoming:
  max_event_bytes: 65536
limits:
  max_audio_s: 4
  max_text_chars: 300
"""
"""A small daemon: short silences, a 4 s audio limit, no TTS cache, no disk writes."""


def fake_config(state_dir: Path, extra: str = "") -> Config:
    """:data:`TEST_CONFIG` (plus ``extra`` top-level YAML) with state under ``state_dir``."""
    return parse_config(TEST_CONFIG.format(state_dir=state_dir) + extra, "test-config.yaml")


@dataclass
class FakeEngines:
    """The real Engines container and the fakes inside it."""

    engines: Engines
    asr: dict[str, FakeAsr]
    vad: FakeVad
    tts: FakeTts
    llm: FakeLlm

    def __post_init__(self) -> None:
        self.core = Core(self.engines)
        """The core in force (a test replaces it as a reload would)."""
        self.services = Services(lambda: self.core)
        """The services the adapters are given (they read :attr:`core` at each call)."""

    def close(self) -> None:
        """Stop the worker pools."""
        self.engines.close()


def fake_engines(
    config: Config,
    *,
    llm: FakeLlm | None = None,
    tts: bool = True,
    chat: bool = True,
) -> FakeEngines:
    """Engines for ``config`` with a FakeAsr per configured model and the other fakes.

    Assembled like ``load_engines``: the container's own pools, voice store and
    session settings; the TTS service, chat service and pipeline on top.
    """
    engines = Engines(config)
    asr = {name: FakeAsr(name) for name in config.asr.models}
    engines.asr = dict(asr)
    vad = FakeVad()
    engines.vad = vad
    fake_tts = FakeTts()
    fake_llm = llm or FakeLlm()
    if tts:
        fake_tts.preload(engines.voices.get(config.tts.default_voice))
        engines.attach_tts(fake_tts, None)
    if chat:
        engines.attach_llm(fake_llm)
    return FakeEngines(engines, asr, vad, fake_tts, fake_llm)


def add_user_voice(
    voices_dir: Path,
    name: str,
    language: str,
    sample_rate: int = 16000,
    speakers: tuple[str, ...] = (),
) -> None:
    """A user voice folder the store lists (the model file is empty: never loaded)."""
    folder = voices_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.onnx").write_bytes(b"")
    config = {
        "language": {"code": language},
        "audio": {"sample_rate": sample_rate},
        "speaker_id_map": {speaker: i for i, speaker in enumerate(speakers)},
    }
    (folder / f"{name}.onnx.json").write_text(json.dumps(config), encoding="utf-8")


class FakeService:
    """The running service as the HTTP app sees it, over fake engines."""

    def __init__(self, config: Config, engines: Engines) -> None:
        self.config = config
        self.engines = engines
        self.core: Core | None = Core(engines)
        """The core in force (None: still loading)."""
        self.services = Services(self.current_core)

    @property
    def loaded(self) -> bool:
        """Whether the engines are loaded (:attr:`core` is set)."""
        return self.core is not None

    def current_core(self) -> Core:
        """The core in force (ModelUnavailable while loading)."""
        if self.core is None:
            raise ModelUnavailable("the daemon is still loading its models")
        return self.core

    def health(self) -> tuple[bool, dict[str, object]]:
        """Always ready."""
        return True, {"status": "ok"}
