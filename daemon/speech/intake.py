"""A speech session's intake: audio in any format, kept as the one internal format.

:class:`AudioIntake` converts each chunk (any rate, width and channel count) to 16 kHz
mono s16, keeps it in one buffer addressed by stream position (samples since the
stream began), hands out the frames the VAD has not classified yet, and forgets old
audio on request so a hands-free stream stays bounded for days. It knows nothing of
speech: the session decides what to keep.

Chunks are held unconverted until the VAD can use them (:meth:`hold`): a whole VAD
frame, or when the audio runs ahead of the clock (a recording sent at once, a
backlog) a batch of :data:`BATCH_S`. Home Assistant's 10 ms chunks then cost one
worker call per 32 ms frame, and a recording sent at once four per second, instead
of one per chunk; a live speaker's audio is classified as soon as a frame is whole, as before.

Not thread-safe: the session calls :meth:`add` and :meth:`frames` in its VAD worker
and everything else on the loop, never at the same time (its lock).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from enum import Enum

import numpy as np

from daemon.audio.pcm import RATE, AudioFormat, PcmConverter, pcm_to_float
from daemon.errors import AudioTooLong, InvalidAudio

RECORDING_AHEAD_S = 2.0
"""Audio this far ahead of the clock is a recording sent at once, or a backlog, not a
live speaker (a network hiccup's burst is well under it): it is classified in batches,
and the turn model is not asked about it."""
RECORDING_SHARE = 0.5
"""A stream also counts as a recording while more than this share of the audio it sent
over :data:`CLOCK_WINDOW_S` came ahead of the clock (sent at more than twice real time):
a short file sent at once is never :data:`RECORDING_AHEAD_S` long."""
BATCH_S = 0.25
"""Audio held before classifying it, when it runs ahead of the clock (seconds)."""
CLOCK_WINDOW_S = 30.0
"""How far back :meth:`AudioIntake.ahead_s` compares the audio with the clock."""
CLOCK_MARK_S = 1.0
"""How often it notes where the stream is."""
BATCH_WAIT_S = 0.02
"""Longest a batch waits for more audio: a sender that stops is not kept waiting."""


class Held(Enum):
    """What :meth:`AudioIntake.hold` advises."""

    NOW = "now"
    """Classify what is held now."""
    PART_FRAME = "part-frame"
    """Less than a VAD frame: the VAD decides nothing sooner, wait for more."""
    BATCH = "batch"
    """Ahead of the clock: wait for a batch, or :data:`BATCH_WAIT_S`."""


class AudioIntake:
    """The converted audio of one stream (see the module docstring)."""

    def __init__(self, max_audio_s: float, max_sample_rate: int, max_channels: int) -> None:
        self.max_audio_s = max_audio_s
        self.max_sample_rate = max_sample_rate
        self.max_channels = max_channels
        self.fmt: AudioFormat | None = None
        self._converter: PcmConverter | None = None
        self._buf = bytearray()
        self._offset = 0
        """Samples dropped from the buffer's front."""
        self._classified = 0
        """Buffered samples the VAD has seen (from the buffer's front)."""
        self._marks: deque[tuple[float, int]] = deque()
        """(clock, samples received) now and then: the base of :meth:`ahead_s`."""
        self._held = bytearray()
        """Input bytes not converted yet (see :meth:`hold`)."""

    def start(self, fmt: AudioFormat) -> None:
        """Declare the input format; validates it (InvalidAudio when absurd).

        Declaring the same format again is harmless (Wyoming repeats it on every
        chunk); a different format once audio has arrived is refused.
        """
        if fmt == self.fmt:
            return
        fmt.validate(self.max_sample_rate, self.max_channels)
        if self.fmt is not None and self.samples > 0:
            raise InvalidAudio(
                f"audio format changed mid-stream ({self.fmt.rate} Hz/{self.fmt.width} B/"
                f"{self.fmt.channels} ch to {fmt.rate} Hz/{fmt.width} B/{fmt.channels} ch)"
            )
        self.fmt = fmt
        self._converter = PcmConverter(fmt)
        if not self._marks:
            self._marks.append((time.monotonic(), 0))

    def ahead_s(self) -> float:
        """How far the audio is ahead of the clock (seconds), over the last
        :data:`CLOCK_WINDOW_S` or so (since the format came, in a younger stream).

        About 0 for a live speaker; a client sending a recording faster than it was
        spoken is seconds ahead; a paused stream falls behind. Measured over a window,
        not since the start: a microphone whose clock runs 100 ppm fast gains 9 s a day,
        and must not pass for a recording after a day of streaming.
        """
        if not self._marks:
            return 0.0
        now, received = self._mark()
        since, base = self._marks[0]
        return (received - base) / RATE - (now - since)

    def recording(self) -> bool:
        """Whether the stream is a recording sent faster than it was spoken, not a live
        speaker: its audio runs more than :data:`RECORDING_AHEAD_S` ahead of the clock,
        or more than :data:`RECORDING_SHARE` of what it sent lately came ahead of it.

        A live speaker (Home Assistant's 10 ms chunks at real time, a network burst
        after a stall) stays near the clock; a file sent at once is all ahead of it.
        """
        if not self._marks:
            return False
        now, received = self._mark()
        since, base = self._marks[0]
        sent_s = (received - base) / RATE
        ahead = sent_s - (now - since)
        return ahead > min(RECORDING_AHEAD_S, RECORDING_SHARE * sent_s)

    def _mark(self) -> tuple[float, int]:
        """Note where the stream is now and then; forget notes past the window."""
        now, received = time.monotonic(), self.received
        marks = self._marks
        if marks and now - marks[-1][0] >= CLOCK_MARK_S:
            marks.append((now, received))
        while len(marks) > 1 and now - marks[1][0] >= CLOCK_WINDOW_S:
            marks.popleft()
        return now, received

    @property
    def started(self) -> bool:
        """Whether the format is known (audio may arrive)."""
        return self._converter is not None

    @property
    def samples(self) -> int:
        """Internal samples received so far (whole stream)."""
        return self._offset + len(self._buf) // 2

    @property
    def received(self) -> int:
        """Internal samples received so far, held ones included (about, when resampled)."""
        return self.samples + self._held_samples()

    def _held_samples(self) -> int:
        fmt = self.fmt
        return 0 if fmt is None else len(self._held) // fmt.frame_bytes * RATE // fmt.rate

    def hold(self, data: bytes, frame: int) -> Held:
        """Keep ``data`` unconverted, and say when what is held should be classified.

        Now, once the held audio completes a VAD frame of ``frame`` samples; but while
        the audio is more than :data:`RECORDING_AHEAD_S` ahead of the clock, once it makes a
        batch of :data:`BATCH_S`.
        """
        self._held += data
        held = self._held_samples()
        if held + self.buffered - self._classified < frame:
            return Held.PART_FRAME
        if held >= BATCH_S * RATE or self.ahead_s() <= RECORDING_AHEAD_S:
            return Held.NOW
        return Held.BATCH

    @property
    def holding(self) -> bool:
        """Whether input bytes wait to be converted."""
        return bool(self._held)

    def take_held(self) -> bytes:
        """The bytes held so far, for :meth:`add`; none are held afterwards."""
        data, self._held = bytes(self._held), bytearray()
        return data

    @property
    def first(self) -> int:
        """The stream position of the oldest sample still kept."""
        return self._offset

    @property
    def buffered(self) -> int:
        """Samples kept now."""
        return len(self._buf) // 2

    def _limit(self, adding: int, slack: int = 0) -> None:
        if self.buffered + adding > int(self.max_audio_s * RATE) + slack:
            raise AudioTooLong(f"audio is longer than the {self.max_audio_s:g} s limit")

    def add(self, data: bytes, last: bool = False) -> None:
        """Convert a chunk and keep it (``last``: the stream ends; flush the converter).

        Raises AudioTooLong past ``max_audio_s`` kept: an oversized chunk is refused
        before it is converted, so memory stays bounded.
        """
        assert self._converter is not None and self.fmt is not None
        self._limit(len(data) // self.fmt.frame_bytes * RATE // self.fmt.rate, RATE)
        samples = self._converter.convert(data)
        if last:
            samples = np.concatenate([samples, self._converter.flush()])
        self._limit(samples.size)
        self._buf += samples.astype("<i2").tobytes()
        self._mark()

    def frames(self, size: int) -> Iterator[np.ndarray]:
        """Every whole frame of ``size`` samples not classified yet, oldest first."""
        while self._classified + size <= self.buffered:
            a = self._classified * 2
            # A copy, so no view keeps the buffer from being resized.
            yield np.frombuffer(self._buf[a : a + size * 2], "<i2")
            self._classified += size

    def keep_last(self, count: int) -> None:
        """Forget all but the last ``count`` samples (classified ones only)."""
        self.forget(self.buffered - count)

    def forget_before(self, position: int) -> None:
        """Forget the samples before stream ``position`` (classified ones only)."""
        self.forget(position - self._offset)

    def forget(self, count: int) -> None:
        """Forget the oldest ``count`` samples (classified ones only)."""
        count = min(count, self._classified)
        if count > 0:
            del self._buf[: count * 2]
            self._offset += count
            self._classified -= count

    def pcm(self, start: int, end: int) -> np.ndarray:
        """An int16 copy of stream samples [start, end) (clipped to what is kept)."""
        a = (max(start, self._offset) - self._offset) * 2
        b = (end - self._offset) * 2
        return np.frombuffer(bytes(self._buf[a:b]), dtype="<i2")

    def audio(self, start: int, end: int) -> np.ndarray:
        """A float32 copy of stream samples [start, end), for a decode."""
        return pcm_to_float(self.pcm(start, end))
