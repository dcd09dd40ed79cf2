"""Media helpers: decoded browser audio in, the spoken reply out.

The reply track sends nothing while there is nothing to say (so an idle session
costs no RTP); it cuts reply audio into 20 ms frames, which the core's player
(:mod:`daemon.speech.player`) hands back at their time and drops on a barge-in.

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
from collections.abc import AsyncIterator
from typing import Any

import av
import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from daemon.audio.pcm import AudioFormat, resample_pcm
from daemon.runtime.api import ReplyPlayer
from protocols.patches.aiortc import ignore_bye

RATE = 48000
TIME_BASE = fractions.Fraction(1, RATE)
FRAME_SAMPLES = 960
"""20 ms at 48 kHz: one Opus frame."""
FRAME_S = FRAME_SAMPLES / RATE
MAX_QUEUED_S = 120.0
"""Reply audio held at most (seconds): a longer reply is cut."""
LATE_S = 0.1
"""A frame this late still keeps the schedule (the next ones catch up); later, a new
schedule starts and the timestamp jumps over the gap."""


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
    """Server → browser audio: reply speech cut into 20 ms frames for the core's player,
    which paces them in real time and cuts them on barge-in.

    ``opus``: hand the sender Opus packets (the negotiated codec must be Opus);
    otherwise raw frames for the sender to encode.
    """

    kind = "audio"

    def __init__(self, opus: bool = True) -> None:
        super().__init__()
        self._encoder: av.AudioCodecContext | None = None
        self._encoding = threading.Lock()
        self._opus = opus
        self.player: ReplyPlayer[bytes] = ReplyPlayer(
            lead_s=0.0, max_queued_s=MAX_QUEUED_S, late_s=LATE_S
        )
        """The core's player: each 20 ms frame goes out at its time."""
        self._rest = b""
        self._end: float | None = None
        """When the last frame sent ends (the player's clock)."""
        self._pts = 0

    @property
    def playing(self) -> bool:
        """Audio is queued (the frame going out plays at once)."""
        return self.player.queued or bool(self._rest)

    def begin(self) -> None:
        """A new reply (or announcement) starts: its audio plays."""
        self.player.begin()

    def play(self, pcm: bytes, rate: int) -> None:
        """Queue 16-bit mono PCM at ``rate`` for playback.

        Hearth's own replies are synthesized at :data:`RATE` already (the TTS
        worker resamples), so the resampling here is a no-op for them.
        """
        data = self._rest + resample_pcm(pcm, rate, RATE)
        step = FRAME_SAMPLES * 2
        whole = len(data) // step * step
        for offset in range(0, whole, step):
            if not self.player.play(data[offset : offset + step], FRAME_S):
                break
        self._rest = data[whole:]

    def flush(self) -> None:
        """The reply is complete: pad and queue the last partial frame."""
        if self._rest:
            self.player.play(self._rest.ljust(FRAME_SAMPLES * 2, b"\x00"), FRAME_S)
            self._rest = b""

    def clear(self) -> None:
        """Stop playback at once (barge-in): the cut reply's audio is dropped until the
        next :meth:`begin`."""
        self.player.clear()
        self._rest = b""

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
        played = await self.player.next()
        if self._end is not None and played.at > self._end:
            # After a pause the timestamp jumps by the time that passed.
            self._pts += int((played.at - self._end) * RATE)
        self._end = played.at + played.seconds
        frame = av.AudioFrame(format="s16", layout="mono", samples=FRAME_SAMPLES)
        frame.planes[0].update(played.frame)
        frame.sample_rate = RATE
        frame.pts = self._pts
        frame.time_base = TIME_BASE
        self._pts += FRAME_SAMPLES
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
