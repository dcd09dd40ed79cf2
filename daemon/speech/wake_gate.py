"""Wake-word gating: audio reaches a speech session only after the wake word.

:class:`WakeListener` is one listener's wake detection (any PCM in, detections
out, batched worker calls); the Wyoming wake service uses it alone. :class:`WakeGate`
puts it in front of a hands-free speech session (the WebRTC wake mode): while it
waits for the word, audio goes to the wake model and nowhere else, is never kept
beyond the batch being classified, and is never transcribed or logged. Once the word
is heard, the audio after it goes to the speech session (so Whisper never hears the
word); when that utterance has been decoded, or no speech began within
``command_timeout_s`` of audio, the gate waits for the word again.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass

import numpy as np

from daemon.audio.pcm import RATE, AudioFormat, PcmConverter
from daemon.engines.wake import WakeHit, WakeModelInfo, WakeStream
from daemon.engines.workers import WorkerPool
from daemon.errors import InvalidAudio
from daemon.speech.session import SpeechSession

BATCH_MS = 40
"""Audio gathered before one worker call: 10 ms chunks (Home Assistant) would cost a
worker hop each; 40 ms keeps detection latency low and the hops few."""
MAX_PENDING_BYTES = 1024 * 1024
"""Raw audio waiting for a batch; a single chunk larger than this is refused."""


@dataclass(frozen=True)
class WakeBatch:
    """One classified batch."""

    hits: list[WakeHit]
    audio: np.ndarray
    """The batch at 16 kHz, int16."""
    start: int
    """Stream sample (16 kHz) of ``audio[0]``."""


class WakeListener:
    """Converts any PCM to 16 kHz mono and runs a wake stream on it in a worker."""

    def __init__(
        self,
        stream: WakeStream,
        pool: WorkerPool,
        max_sample_rate: int = 192000,
        max_channels: int = 8,
        batch_ms: int = BATCH_MS,
    ) -> None:
        self.stream = stream
        self._pool = pool
        self._max_rate = max_sample_rate
        self._max_channels = max_channels
        self._batch_ms = batch_ms
        self._fmt: AudioFormat | None = None
        self._converter: PcmConverter | None = None
        self._pending = bytearray()
        self.samples = 0
        """16 kHz samples converted so far."""
        self.detecting = True
        """False: batches are only converted (the gate is passing audio through)."""

    @property
    def format(self) -> AudioFormat | None:
        """The declared input format."""
        return self._fmt

    def start(self, fmt: AudioFormat) -> None:
        """Declare the input format (validated); a new format drops pending audio."""
        if fmt == self._fmt:
            return
        fmt.validate(self._max_rate, self._max_channels)
        self._fmt = fmt
        self._converter = PcmConverter(fmt)
        self._pending.clear()

    async def feed(self, pcm: bytes) -> WakeBatch | None:
        """Add PCM in the declared format; a classified batch once enough has come."""
        fmt = self._fmt
        if fmt is None:
            raise InvalidAudio("audio arrived before its format (rate, width, channels)")
        if len(pcm) > MAX_PENDING_BYTES:
            raise InvalidAudio(f"audio chunk over {MAX_PENDING_BYTES} bytes")
        self._pending += pcm
        if len(self._pending) < fmt.frame_bytes * fmt.rate * self._batch_ms // 1000:
            return None
        return await self.flush()

    async def flush(self) -> WakeBatch | None:
        """Classify whatever is pending (None when nothing is)."""
        fmt = self._fmt
        if fmt is None or not self._pending:
            return None
        whole = len(self._pending) // fmt.frame_bytes * fmt.frame_bytes
        data = bytes(self._pending[:whole])
        del self._pending[:whole]
        return await self._pool.run(self._classify, data, self.detecting)

    def _classify(self, data: bytes, detecting: bool) -> WakeBatch:
        """Convert, then run the wake models (in a worker, one call at a time)."""
        assert self._converter is not None
        audio = self._converter.convert(data)
        start = self.samples
        self.samples += len(audio)
        if not detecting:
            self.stream.samples += len(audio)
            return WakeBatch([], audio, start)
        return WakeBatch(self.stream.process(audio), audio, start)

    async def reset(self) -> None:
        """Forget what the models heard (a new detection run)."""
        self._pending.clear()
        await self._pool.run(self.stream.reset)

    async def close(self) -> None:
        """Free the stream; safe to call more than once."""
        self._pending.clear()
        stream = self.stream
        try:
            await self._pool.run(stream.close)
        except asyncio.CancelledError:
            stream.close()  # tiny; the slot must not leak
            raise


class GateState(enum.Enum):
    """What a wake gate does with the audio now."""

    WAITING = "waiting"
    """Listening for the word only."""
    HEARING = "hearing"
    """The word was heard: audio goes to the speech session."""


@dataclass(frozen=True)
class WakeDetected:
    """The wake word was heard; what follows goes to the speech session."""

    name: str
    phrase: str
    at_ms: int
    """Audio time since the gate started (ms)."""


@dataclass(frozen=True)
class WakeWaiting:
    """The gate waits for the word again."""

    name: str
    phrase: str
    reason: str
    """``utterance`` (it was decoded) or ``timeout`` (no speech followed the word)."""


WakeNote = WakeDetected | WakeWaiting


class WakeGate:
    """Lets a hands-free speech session hear only what follows the wake word."""

    def __init__(
        self,
        listener: WakeListener,
        speech: SpeechSession,
        model: WakeModelInfo,
        command_timeout_s: float,
    ) -> None:
        self.listener = listener
        self.speech = speech
        """The session that hears commands (the adapter may swap it between them)."""
        self.model = model
        self.state = GateState.WAITING
        self._timeout = int(command_timeout_s * RATE)
        self._heard_from = 0
        self._utterance_seen = False

    async def feed(self, fmt: AudioFormat, pcm: bytes) -> list[WakeNote]:
        """One chunk of microphone audio; what the client should be told."""
        self.listener.start(fmt)
        self.listener.detecting = self.state is GateState.WAITING
        heard = await self.listener.feed(pcm)
        if heard is None:
            return []
        notes: list[WakeNote] = []
        audio = heard.audio
        if self.state is GateState.WAITING:
            if not heard.hits:
                return []  # audio before the word: dropped here, never kept
            hit = heard.hits[0]
            notes.append(WakeDetected(self.model.name, self.model.phrase, hit.end_sample // 16))
            self.state = GateState.HEARING
            self._heard_from = hit.end_sample
            self._utterance_seen = self.speech.in_utterance
            audio = audio[max(0, hit.end_sample - heard.start) :]
        if audio.size:
            self.speech.start(AudioFormat(RATE, 2, 1))
            await self.speech.feed(audio.astype("<i2").tobytes())
        notes.extend(await self._maybe_done(heard.start + len(heard.audio)))
        return notes

    async def _maybe_done(self, now: int) -> list[WakeNote]:
        if self.state is not GateState.HEARING:
            return []
        if self.speech.in_utterance:
            self._utterance_seen = True
            return []
        if self._utterance_seen:
            reason = "utterance"
        elif now - self._heard_from >= self._timeout:
            reason = "timeout"
        else:
            return []
        self.state = GateState.WAITING
        await self.listener.reset()
        return [WakeWaiting(self.model.name, self.model.phrase, reason)]

    async def close(self) -> None:
        """Free the wake stream (the speech session belongs to the caller)."""
        await self.listener.close()
