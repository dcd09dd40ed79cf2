"""Shared test helpers: audio generation, fakes and free ports."""

from __future__ import annotations

import asyncio
import difflib
import re
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from daemon.audio.pcm import RATE, encode, pcm_to_float, resample_pcm
from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.vad.base import Vad, VadStream


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def words(text: str) -> list[str]:
    """Lower-case words without punctuation, for comparing transcripts."""
    return re.findall(r"[a-z0-9']+", text.lower())


_NUMBERS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()


def spoken_words(text: str) -> list[str]:
    """:func:`words`, with small numbers spelled out: Whisper writes "10" for "ten"."""
    return [_NUMBERS[int(w)] if w.isdigit() and int(w) < len(_NUMBERS) else w for w in words(text)]


def word_edits(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance (substitutions, insertions, deletions)."""
    row = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, other in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (word != other))
    return row[-1]


def word_error_rate(spoken: str, heard: str) -> float:
    """Word edits over the number of words spoken."""
    ref = spoken_words(spoken)
    return word_edits(ref, spoken_words(heard)) / max(1, len(ref))


def _spelled_like(key: str, word: str) -> bool:
    """``word`` holds ``key`` (a joined word), or spells it by ear past its first four letters.

    One CPU's tiny.en writes "garash" for "garage": the same word, spelled by ear.
    "hole" for "hall", "garden" for "garage" or "nights" for "lights" is another
    word, and does not count.
    """
    if key in word:
        return True
    return len(key) >= 5 and word[:4] == key[:4] and abs(len(word) - len(key)) <= 2


def assert_heard(
    heard: str, spoken: str, *keys: str, max_wer: float = 0.35, min_letters: float = 0.9
) -> None:
    """Assert that Whisper heard the sentence ``spoken`` in ``heard``, give or take a word.

    tiny.en's exact words vary with the CPU (its int8 kernels differ): one machine
    hears "Place at a timer" for "Please set a timer". So a transcript passes when
    its word error rate against the spoken text is at most ``max_wer``, or when its
    letters match at least ``min_letters`` (a word split or joined: "good night",
    "goodnight"); and every one of ``keys``, content words of ``spoken``, must be
    heard (alone, inside a joined word, or spelled by ear: "garash" for "garage").
    Empty text, or another sentence, fails.
    """
    if not keys:
        raise ValueError("name at least one key word of the spoken text")
    said, got = spoken_words(spoken), spoken_words(heard)
    unknown = [k for k in keys if k not in said]
    if unknown:
        raise ValueError(f"key words {unknown} are not in {spoken!r}")
    wer = word_error_rate(spoken, heard)
    letters = difflib.SequenceMatcher(None, "".join(got), "".join(said)).ratio()
    missing = [k for k in keys if not any(_spelled_like(k, w) for w in got)]
    assert got and not missing and (wer <= max_wer or letters >= min_letters), (
        f"heard {heard!r} for {spoken!r}: word error rate {wer:.2f}, "
        f"letters alike {letters:.2f}, key words missing {missing}"
    )


def heard_as(heard: str, spoken: str, *keys: str) -> bool:
    """:func:`assert_heard` as a yes or no, for picking one transcript of several."""
    try:
        assert_heard(heard, spoken, *keys)
    except AssertionError:
        return False
    return True


def sounds_like(heard: str, said: str, at_least: float = 0.85) -> bool:
    """Whisper heard ``said`` in speech the daemon synthesized.

    The daemon's voices keep Piper's noise scales, so each synthesis differs a
    little and Whisper may split a word ("pre eating"): compare the letters, not
    the exact words.
    """
    a, b = " ".join(words(heard)), " ".join(words(said))
    return difflib.SequenceMatcher(None, a, b).ratio() >= at_least


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; its last value.

    For what a worker thread or another task does "soon": a fixed sleep is too
    short on a loaded machine, and a test then fails by chance.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def silence(seconds: float) -> np.ndarray:
    """Digital silence, int16 at 16 kHz."""
    return np.zeros(int(seconds * RATE), dtype=np.int16)


def noise(seconds: float, level: float = 0.05, seed: int = 0) -> np.ndarray:
    """White noise at ``level`` RMS (of full scale), int16 at 16 kHz."""
    rng = np.random.default_rng(seed)
    return (rng.normal(0, level, int(seconds * RATE)) * 32767).clip(-32768, 32767).astype(np.int16)


def chunks(data: bytes, sizes: tuple[int, ...] = (1, 7, 320, 4093, 960)) -> Iterator[bytes]:
    """Split bytes into awkward, varying chunk sizes."""
    i = k = 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        yield data[i : i + n]
        i += n
        k += 1


class EnergyVad(Vad):
    """A deterministic fake VAD: a frame is speech when its RMS passes a threshold."""

    name = "energy"
    frame_samples = 480

    def __init__(self, threshold: float = 0.02) -> None:
        self.threshold = threshold

    def stream(self) -> VadStream:
        vad = self

        class _Stream(VadStream):
            frame_samples = 480

            def is_speech(self, frame: np.ndarray) -> bool:
                rms = float(np.sqrt(np.mean((frame.astype(np.float32) / 32768) ** 2)))
                return rms >= vad.threshold

        return _Stream()


class FakeAsr(AsrModel):
    """Records every decode; answers with the decoded length."""

    name = "fake"
    languages = ("en",)
    device = "cpu"
    default_language = "en"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        self.calls.append(len(audio))
        return Transcript(f"{len(audio)} samples", "en", len(audio) / RATE)


def tone(seconds: float, freq: float = 220.0, level: float = 0.3) -> np.ndarray:
    """A sine tone (loud enough for EnergyVad), int16 at 16 kHz."""
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * freq * t) * level * 32767).astype(np.int16)


def wav(samples: np.ndarray, rate: int = RATE) -> bytes:
    """int16 samples as a mono 16-bit WAV file."""
    return encode(samples.astype("<i2").tobytes(), rate, "wav")


def hear(engines: Any, pcm: bytes | np.ndarray) -> str:
    """What the default Whisper model hears in 16 kHz int16 audio (English)."""
    samples = pcm if isinstance(pcm, bytes) else pcm.astype("<i2")
    model = engines.asr[engines.config.asr.default_model]
    return model.transcribe(pcm_to_float(samples), TranscribeOptions(language="en")).text


PCM_HEADERS = {
    "x-audio-sample-rate": "16000",
    "x-audio-bits": "16",
    "x-audio-channel": "1",
    "x-audio-codec": "pcm",
    "user-agent": "Willow/0.1",
}
"""A Willow device's headers for 16 kHz s16 mono PCM."""
CHUNK_BYTES = 1024
"""What the firmware's HTTP stream writes at a time (32 ms of 16 kHz s16 mono)."""


def paced(pcm: bytes, chunk: int = CHUNK_BYTES, rate_bytes: int = RATE * 2) -> Iterator[bytes]:
    """Chunks at real time, as a Willow device's microphone produces them."""
    began = time.monotonic()
    for i in range(0, len(pcm), chunk):
        yield pcm[i : i + chunk]
        delay = began + (i + chunk) / rate_bytes - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def trimmed(pcm: np.ndarray) -> np.ndarray:
    """Speech without Piper's leading and trailing silence (10 ms frames under -40 dBFS)."""
    frames = pcm[: len(pcm) // 160 * 160].astype(np.float32).reshape(-1, 160) / 32768
    loud = np.flatnonzero(np.sqrt((frames**2).mean(axis=1)) > 0.01)
    return pcm[loud[0] * 160 : (loud[-1] + 1) * 160]


def espeak_pcm(voice: str, wpm: int, text: str) -> np.ndarray:
    """eSpeak NG (the Debian package) saying ``text``: 16 kHz int16, as it speaks it."""
    out = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(wpm), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    rate = struct.unpack("<I", out[24:28])[0]
    pcm = resample_pcm(out[44 : 44 + (len(out) - 44) // 2 * 2], rate, RATE)
    return np.frombuffer(pcm, "<i2")
