"""Enrollment: a person reads prompts; each take is checked and kept as a training set.

A take is accepted when it is not clipped, loud enough, clean enough (signal to
noise), holds speech (VAD, which also trims the silence around it), and Hearth's
own ASR hears the prompt in it (word error rate under ``voices.max_wer``).
Accepted takes form an LJSpeech-style dataset, the layout Piper's trainer reads:
``wavs/<id>.wav`` and ``metadata.csv`` (``id|text``), plus ``takes.json`` with each
take's measurements.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import re
import time
import wave
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from daemon.audio.pcm import RATE, decode_file, pcm_to_float, resample_pcm
from daemon.config import Config
from daemon.engines.access import SpeechCheckAccess
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.tts.voices import check_name
from daemon.engines.vad.base import Vad
from daemon.errors import InvalidAudio, InvalidRequest
from daemon.ops.jsonfile import read_json, write_atomic, write_json
from daemon.ops.locks import exclusive
from daemon.ops.storage import writing
from daemon.voices.prompts import current_prompts

_LOGGER = logging.getLogger(__name__)
TAKE_ID = re.compile(r"(free)?[0-9]{4,9}")
"""A take's id: a prompt index, or ``free`` and a number for a free recording."""
DATASET_RATE = 22050
"""Sample rate of the stored takes (Hz): Piper's medium quality."""
TAKES = "takes.json"
PAD_S = 0.25
"""Silence kept around the speech when a take is trimmed (s)."""
CLIP_LEVEL = 32700


@dataclass(frozen=True)
class TakeCheck:
    """What the checks measured in one take, and whether it is accepted."""

    accepted: bool
    problems: tuple[str, ...]
    seconds: float
    """Length of the trimmed speech (s)."""
    level_dbfs: float
    """RMS of the speech (dBFS)."""
    snr_db: float
    clipped_percent: float
    wer: float | None
    transcript: str
    check_ms: float
    """Time the checks took (ms)."""


@dataclass(frozen=True)
class Measures:
    """Signal measurements of a 16 kHz take; ``start``/``end`` bound the speech."""

    clipped_percent: float
    level_dbfs: float
    snr_db: float
    start: int
    end: int
    speech: bool = field(default=True)


def _db(rms: float) -> float:
    return 20 * math.log10(max(rms, 1e-5))


def measure(samples: np.ndarray, flags: list[bool], frame: int) -> Measures:
    """Clipping, speech level, signal to noise and the speech bounds of int16 audio."""
    audio = samples.astype(np.float32)
    clipped = float(np.mean(np.abs(audio) >= CLIP_LEVEL) * 100) if audio.size else 0.0
    frames = audio[: len(flags) * frame].reshape(-1, frame) if flags else audio[:0].reshape(0, 1)
    rms = np.sqrt(np.mean(frames**2, axis=1)) / 32768 if frames.size else np.zeros(0)
    speech = np.array(flags, dtype=bool)
    if not speech.any():
        return Measures(clipped, _db(float(np.sqrt(np.mean(audio**2)) / 32768)), 0.0, 0, 0, False)
    level = _db(float(np.sqrt(np.mean(rms[speech] ** 2))))
    quiet = rms[~speech]
    # The noise floor: non-speech frames, else the quietest tenth of all frames.
    floor = float(np.median(quiet)) if quiet.size >= 3 else float(np.percentile(rms, 10))
    snr = min(99.0, level - _db(floor))
    first = int(np.argmax(speech))
    last = len(speech) - int(np.argmax(speech[::-1]))
    pad = int(PAD_S * RATE)
    return Measures(
        clipped, level, snr, max(0, first * frame - pad), min(len(samples), last * frame + pad)
    )


def normalize_words(text: str) -> list[str]:
    """Lower-case words without punctuation, for comparing a transcript with a prompt."""
    return re.findall(r"[\w']+", text.lower().replace("-", " "))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level edit distance over the reference's length."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    row = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, other in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (word != other))
    return row[-1] / len(ref)


def _prepare(data: bytes | np.ndarray, max_s: float) -> tuple[np.ndarray, np.ndarray]:
    """A take (a file, or int16 at DATASET_RATE) at DATASET_RATE and at 16 kHz."""
    audio = decode_file(data, max_s, DATASET_RATE) if isinstance(data, bytes) else data
    pcm16 = resample_pcm(audio.tobytes(), DATASET_RATE, RATE)
    return audio, np.frombuffer(pcm16, dtype=np.int16)


def _speech_measures(vad: Vad, samples: np.ndarray) -> Measures:
    """VAD flags and the measurements of 16 kHz ``samples`` (runs in the VAD pool)."""
    return measure(samples, vad.speech_flags(samples), vad.frame_samples)


async def check_take(
    engines: SpeechCheckAccess,
    config: Config,
    audio: np.ndarray,
    samples: np.ndarray,
    prompt: str | None,
) -> tuple[TakeCheck, np.ndarray]:
    """Check a take (int16 at DATASET_RATE, and ``samples`` at 16 kHz); returns the
    result and the trimmed audio.

    With ``prompt`` None (a free recording), the transcript becomes the take's text.
    """
    started = time.perf_counter()
    voices = config.voices
    vad = engines.vad
    if vad is None:
        raise InvalidRequest("enrollment needs the VAD engine, which is not loaded")
    m = await engines.vad_pool.run(_speech_measures, vad, samples)
    problems = []
    if m.clipped_percent > voices.max_clipped_percent:
        problems.append(
            f"clipped: {m.clipped_percent:.2f}% of samples at full scale "
            f"(at most {voices.max_clipped_percent:g}%): move back or lower the input gain"
        )
    if not m.speech:
        problems.append("no speech heard")
    elif m.level_dbfs < voices.min_level_dbfs:
        problems.append(
            f"too quiet: {m.level_dbfs:.1f} dBFS (at least {voices.min_level_dbfs:g}): "
            "come closer or raise the input gain"
        )
    if m.speech and m.snr_db < voices.min_snr_db:
        problems.append(
            f"noisy: signal to noise {m.snr_db:.1f} dB (at least {voices.min_snr_db:g}): "
            "record somewhere quieter"
        )
    trimmed16 = samples[m.start : m.end] if m.speech else samples
    seconds = len(trimmed16) / RATE
    if m.speech and seconds > voices.max_take_s:
        problems.append(f"too long: {seconds:.1f} s (at most {voices.max_take_s:g} s)")
    transcript, wer = "", None
    if m.speech and not problems:
        model = engines.asr_model(None)
        language = voices.espeak_voice.split("-")[0] or None
        result = await engines.asr_pool.run(
            model.transcribe, pcm_to_float(trimmed16), TranscribeOptions(language=language)
        )
        transcript = result.text.strip()
        if prompt is not None:
            wer = word_error_rate(prompt, transcript)
            if wer > voices.max_wer:
                problems.append(
                    f'the words do not match the prompt: heard "{transcript}" '
                    f"(word error rate {wer:.0%}, at most {voices.max_wer:.0%})"
                )
        elif not normalize_words(transcript):
            problems.append("no words recognized")
    scale = DATASET_RATE / RATE
    trimmed = audio[int(m.start * scale) : int(m.end * scale)] if m.speech else audio
    check = TakeCheck(
        accepted=not problems,
        problems=tuple(problems),
        seconds=round(seconds, 2),
        level_dbfs=round(m.level_dbfs, 1),
        snr_db=round(m.snr_db, 1),
        clipped_percent=round(m.clipped_percent, 3),
        wer=None if wer is None else round(wer, 3),
        transcript=transcript,
        check_ms=round((time.perf_counter() - started) * 1000, 1),
    )
    return check, trimmed


class Enrollment:
    """One person's dataset under ``<enroll_dir>/<name>``.

    Creating one reads nothing (routes create one per request on the event loop); the
    prompts are read on first use, and the blocking methods run in a worker thread.
    """

    def __init__(self, config: Config, name: str) -> None:
        check_name(name)
        self.config = config
        self.name = name
        self.folder = config.enroll_path / name
        self._prompts: list[str] | None = None

    @property
    def prompts(self) -> list[str]:
        """The prompts to read (blocking on first use: ``voices.prompts_file`` is read)."""
        if self._prompts is None:
            self._prompts = current_prompts(self.config.voices.prompts_file)
        return self._prompts

    @property
    def wavs(self) -> Path:
        """Folder of the accepted takes."""
        return self.folder / "wavs"

    def takes(self) -> dict[str, dict[str, Any]]:
        """Accepted takes by id."""
        return read_json(self.folder / TAKES)

    def recordings(self, limit: int) -> list[Path]:
        """The accepted takes' files, at most ``limit``, for enrolling the person as a
        speaker without recording again (blocking; InvalidRequest when there are none)."""
        files = sorted(self.wavs.glob("*.wav"))
        if not files:
            raise InvalidRequest(f"voice {self.name!r} has no enrollment takes to verify from")
        return files[:limit]

    def prompt(self, index: int) -> str:
        """Prompt ``index``; InvalidRequest when out of range."""
        if not 0 <= index < len(self.prompts):
            raise InvalidRequest(f"prompt index must be 0-{len(self.prompts) - 1}, got {index}")
        return self.prompts[index]

    def status(self) -> dict[str, Any]:
        """Progress toward the target duration, the prompts and the takes."""
        takes = self.takes()
        seconds = sum(t["seconds"] for t in takes.values())
        target = self.config.voices.target_minutes * 60
        done = {t["prompt"] for t in takes.values() if t.get("prompt") is not None}
        pending = [i for i in range(len(self.prompts)) if i not in done]
        return {
            "name": self.name,
            "takes": len(takes),
            "seconds": round(seconds, 1),
            "target_seconds": target,
            "min_seconds": self.config.voices.min_minutes * 60,
            "progress": round(min(1.0, seconds / target), 4),
            "next_prompt": pending[0] if pending else None,
            "prompts": [
                {"index": i, "text": text, "done": i in done} for i, text in enumerate(self.prompts)
            ],
            "recorded": takes,
        }

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time: threads of this process and other processes (CLI)."""
        with writing(f"{self.name}'s recordings", self.folder), exclusive(self.folder / ".lock"):
            yield

    def save(self, take_id: str | None, entry: dict[str, Any], audio: np.ndarray) -> str:
        """Store an accepted take (replacing a redone one) and rewrite the metadata.

        ``take_id`` None is a free recording: it gets the next free id, chosen under
        the lock so that two at once never share one. Returns the id.
        """
        with self._locked():
            if take_id is None:
                numbers = [
                    int(k[4:]) for k in self.takes() if k.startswith("free") and k[4:].isdigit()
                ]
                take_id = f"free{max(numbers, default=-1) + 1:04d}"
            self.wavs.mkdir(parents=True, exist_ok=True)
            tmp = self.wavs / f".{take_id}.wav.tmp"
            with wave.open(str(tmp), "wb") as out:
                out.setnchannels(1)
                out.setsampwidth(2)
                out.setframerate(DATASET_RATE)
                out.writeframes(audio.astype(np.int16).tobytes())
            os.replace(tmp, self.wavs / f"{take_id}.wav")
            takes = self.takes()
            takes[take_id] = entry
            self._write(takes)
        return take_id

    def remove(self, take_id: str) -> None:
        """Drop a take (to redo it)."""
        if not TAKE_ID.fullmatch(take_id):
            raise InvalidRequest(f"invalid take id '{take_id[:32]}'")
        with self._locked():
            takes = self.takes()
            if takes.pop(take_id, None) is None:
                raise InvalidRequest(f"no take '{take_id[:32]}' in {self.name}'s recordings")
            self._write(takes)
            (self.wavs / f"{take_id}.wav").unlink(missing_ok=True)

    def _write(self, takes: dict[str, dict[str, Any]]) -> None:
        write_json(self.folder / TAKES, takes)
        metadata = "".join(f"{i}|{t['text']}\n" for i, t in sorted(takes.items()))
        write_atomic(self.folder / "metadata.csv", metadata.encode("utf-8"))

    async def add_take(
        self, engines: SpeechCheckAccess, data: bytes | np.ndarray, index: int | None
    ) -> TakeCheck:
        """Check a take of prompt ``index`` (None: a free recording) and keep it if good.

        ``data`` is a file in any format PyAV reads, or int16 samples at DATASET_RATE.
        """
        prompt = None if index is None else await asyncio.to_thread(self.prompt, index)
        max_s = self.config.voices.max_take_s + 30
        audio, samples = await asyncio.to_thread(_prepare, data, max_s)
        if audio.size < DATASET_RATE // 4:
            raise InvalidAudio("the take is shorter than a quarter of a second")
        check, trimmed = await check_take(engines, self.config, audio, samples, prompt)
        _LOGGER.info(
            "Take %s/%s %s in %.0f ms%s",
            self.name,
            "free" if index is None else index,
            "accepted" if check.accepted else "refused",
            check.check_ms,
            # Only the kind of each problem: what was heard is the person's words,
            # which are never logged.
            "" if check.accepted else ": " + "; ".join(p.split(":")[0] for p in check.problems),
        )
        if check.accepted:
            take_id: str | None
            if index is None:
                take_id, text = None, check.transcript
            else:
                take_id, text = f"{index:04d}", prompt or ""
            entry = {"prompt": index, "text": text} | asdict(check)
            await asyncio.to_thread(self.save, take_id, entry, trimmed)
        return check
