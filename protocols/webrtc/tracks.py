"""Media helpers: decoded browser audio in, the spoken reply out.

The reply track sends nothing while there is nothing to say (so an idle session
costs no RTP), and paces reply audio in real time, 20 ms per frame. New speech
from the person clears what is queued (barge-in).

It hands the sender Opus packets it encoded itself, not raw frames: the RTP
timestamp must jump over each pause by the time that passed, or the browser's
jitter buffer takes the first packet of the next reply for one that is seconds
late and grows its delay with every reply (about 1.7 s after a few replies in
Chromium). The stock encoder's resampler gives that first packet the old,
continuous timestamp; our own packets carry ours.
"""

from __future__ import annotations

import asyncio
import fractions
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import av
import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from daemon.audio.pcm import AudioFormat, resample_pcm
from protocols.patches.aiortc import ignore_bye

RATE = 48000
TIME_BASE = fractions.Fraction(1, RATE)
FRAME_SAMPLES = 960
"""20 ms at 48 kHz: one Opus frame."""
MAX_QUEUED_S = 120.0
"""Reply audio held at most (seconds): a longer reply is cut."""


def keep_through_bye(pc: Any, track: MediaStreamTrack, session_id: str) -> None:
    """Keep the client's microphone ``track`` open when the client sends an RTCP BYE
    between utterances (a paused track, not a hang-up): the track, ICE and NAT
    pinholes stay up for the session's life."""
    for transceiver in pc.getTransceivers():
        if transceiver.receiver.track is track:
            ignore_bye(transceiver.receiver, session_id)


async def microphone(track: MediaStreamTrack) -> AsyncIterator[tuple[AudioFormat, bytes]]:
    """A microphone track's audio, frame by frame, until its peer connection closes."""
    while True:
        try:
            frame = await track.recv()
        except MediaStreamError:
            return  # the peer connection closed
        yield frame_pcm(frame)  # type: ignore[arg-type]


def frame_pcm(frame: av.AudioFrame) -> tuple[AudioFormat, bytes]:
    """Format and interleaved s16 bytes of a decoded frame."""
    if frame.format.name != "s16":  # aiortc's Opus decoder gives s16 already
        resampler = av.AudioResampler(
            format="s16", layout=frame.layout.name, rate=frame.sample_rate
        )
        frame = resampler.resample(frame)[0]
    channels = len(frame.layout.channels)
    data = frame.to_ndarray().astype(np.int16, copy=False).tobytes()
    return AudioFormat(frame.sample_rate, 2, channels), data[: frame.samples * channels * 2]


class ReplyTrack(MediaStreamTrack):
    """Server → browser audio: queued reply speech, paced in real time.

    ``opus``: hand the sender Opus packets (the negotiated codec must be Opus);
    otherwise raw frames for the sender to encode.
    """

    kind = "audio"

    def __init__(self, opus: bool = True) -> None:
        super().__init__()
        self._encoder: av.AudioCodecContext | None = None
        self._encoding = threading.Lock()
        self._opus = opus
        self._frames: deque[bytes] = deque()
        self._rest = b""
        self._ready = asyncio.Event()
        self._next_at = 0.0
        self._pts = 0

    @property
    def playing(self) -> bool:
        """Audio is queued or going out."""
        return bool(self._frames or self._rest)

    def play(self, pcm: bytes, rate: int) -> None:
        """Queue 16-bit mono PCM at ``rate`` for playback.

        Hearth's own replies are synthesized at :data:`RATE` already (the TTS
        worker resamples), so the resampling here is a no-op for them.
        """
        data = self._rest + resample_pcm(pcm, rate, RATE)
        step = FRAME_SAMPLES * 2
        whole = len(data) // step * step
        for offset in range(0, whole, step):
            if len(self._frames) * FRAME_SAMPLES >= MAX_QUEUED_S * RATE:
                break
            self._frames.append(data[offset : offset + step])
        self._rest = data[whole:]
        if self._frames:
            self._ready.set()

    def flush(self) -> None:
        """The reply is complete: pad and queue the last partial frame."""
        if self._rest:
            self._frames.append(self._rest.ljust(FRAME_SAMPLES * 2, b"\x00"))
            self._rest = b""
            self._ready.set()

    def clear(self) -> None:
        """Stop playback at once (barge-in)."""
        self._frames.clear()
        self._rest = b""
        self._ready.clear()

    async def recv(self) -> av.AudioFrame | av.Packet:
        """The next 20 ms of audio; waits (sending nothing) while there is nothing to say."""
        frame = await self._next_frame()
        if not self._opus:
            return frame
        # libopus takes about a millisecond of CPU per frame, fifty times a second per
        # session: a worker thread does it, so other sessions' audio stays on time.
        packets = await asyncio.to_thread(self._encode, frame)
        if not packets:  # libopus gives one packet per 20 ms frame; never seen otherwise
            return frame
        # The packet's pts would follow the encoder's own sample count: it gets the
        # frame's, which jumps over pauses.
        packet = packets[0]
        packet.pts = frame.pts
        packet.time_base = TIME_BASE
        return packet

    def _encode(self, frame: av.AudioFrame) -> list[av.Packet]:
        """Opus packets for ``frame`` (blocking; in a worker thread)."""
        # A recv cancelled mid-encode leaves its thread running: the next one waits for
        # it, since the codec context is not thread-safe.
        with self._encoding:
            if self._encoder is None:
                self._encoder = _opus_encoder()
            return list(self._encoder.encode(frame))

    async def _next_frame(self) -> av.AudioFrame:
        while not self._frames:
            self._ready.clear()
            await self._ready.wait()
        now = time.monotonic()
        if self._next_at < now - 0.1:  # first frame after a pause: restart the clock
            self._pts += int(max(0.0, now - self._next_at) * RATE) if self._next_at else 0
            self._next_at = now
        else:
            await asyncio.sleep(max(0.0, self._next_at - now))
        pcm = self._frames.popleft() if self._frames else b"\x00" * FRAME_SAMPLES * 2
        frame = av.AudioFrame(format="s16", layout="mono", samples=FRAME_SAMPLES)
        frame.planes[0].update(pcm)
        frame.sample_rate = RATE
        frame.pts = self._pts
        frame.time_base = TIME_BASE
        self._pts += FRAME_SAMPLES
        self._next_at += FRAME_SAMPLES / RATE
        return frame


def _opus_encoder() -> av.AudioCodecContext:
    encoder = av.CodecContext.create("libopus", "w")
    assert isinstance(encoder, av.AudioCodecContext)
    encoder.sample_rate = RATE
    encoder.layout = "mono"
    encoder.format = "s16"
    encoder.bit_rate = 32000  # plenty for speech
    encoder.time_base = TIME_BASE
    encoder.options = {"application": "audio", "frame_duration": "20"}
    encoder.open()
    return encoder
