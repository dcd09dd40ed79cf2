"""An aiortc client that behaves like a browser talking to Hearth's /api/rtc/asr.

Media stays on loopback: the client's host candidates and the daemon's (via
``webrtc.addresses``) are 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import numpy as np
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from aiortc.rtp import RtcpByePacket

from protocols.webrtc import ice
from protocols.webrtc.rtcp import pace_reports
from protocols.webrtc.tracks import ReplyTrack, frame_pcm

LOOPBACK = ice.IcePolicy(20000, 20999, ("127.0.0.1",))


class RtcClient:
    """One session: a microphone track fed from PCM, the data channel, reply audio."""

    def __init__(self, url: str, api_key: str = "") -> None:
        self.url = url
        self.api_key = api_key
        self.pc = RTCPeerConnection()
        self.mic = ReplyTrack()  # queued PCM paced in real time, silent when empty
        self.sender: Any = None
        self.channel: Any = None
        self.messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.received: list[dict[str, Any]] = []
        self.received_at: list[float] = []
        """When each of ``received`` came (time.monotonic())."""
        self.reply_pcm = bytearray()
        self.reply_rate = 48000
        self.reply_frames_at: list[float] = []
        self.session = ""
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self, timeout: float = 20) -> RtcClient:
        ice.install(asyncio.get_running_loop())
        self.channel = self.pc.createDataChannel("chat", ordered=True)
        opened = asyncio.Event()
        self.channel.on("open", opened.set)

        @self.channel.on("message")
        def on_message(raw: str) -> None:
            message = json.loads(raw)
            self.received.append(message)
            self.received_at.append(time.monotonic())
            self.messages.put_nowait(message)

        @self.pc.on("track")
        def on_track(track: Any) -> None:
            self._tasks.append(asyncio.create_task(self._record(track)))

        self.sender = self.pc.addTrack(self.mic)
        with ice.applied(LOOPBACK):
            await self.pc.setLocalDescription(await self.pc.createOffer())
        headers = {"X-API-Key": self.api_key} if self.api_key else {}
        async with httpx.AsyncClient(timeout=30) as http:
            resp = await http.post(
                f"{self.url}/api/rtc/asr",
                json={"sdp": self.pc.localDescription.sdp, "type": "offer"},
                headers=headers,
            )
        resp.raise_for_status()
        answer = resp.json()
        self.session = answer["session"]
        await self.pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        for transceiver in self.pc.getTransceivers():  # as browsers do for audio
            pace_reports(transceiver.sender)
            pace_reports(transceiver.receiver)
        await asyncio.wait_for(opened.wait(), timeout)
        return self

    async def _record(self, track: Any) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            fmt, pcm = frame_pcm(frame)
            samples = np.frombuffer(pcm, dtype=np.int16).reshape(-1, fmt.channels)[:, 0]
            self.reply_rate = fmt.rate
            self.reply_pcm += samples.tobytes()
            self.reply_frames_at.append(time.monotonic())

    def send(self, kind: str, **obj: Any) -> None:
        message: dict[str, Any] = {"type": kind}
        if obj:
            message["obj"] = obj
        self.channel.send(json.dumps(message))

    def send_raw(self, text: str) -> None:
        self.channel.send(text)

    async def expect(self, kind: str, timeout: float = 60) -> dict[str, Any]:
        """The next message of type ``kind`` (others are skipped, kept in .received)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {kind!r} message; got {self.received[-10:]}")
            try:
                message = await asyncio.wait_for(self.messages.get(), remaining)
            except TimeoutError:
                continue
            if message["type"] == kind:
                return message

    async def speak(self, pcm16k: np.ndarray) -> None:
        """Send 16 kHz audio through the microphone track at real time."""
        self.mic.play(pcm16k.astype(np.int16).tobytes(), 16000)
        self.mic.flush()
        while self.mic.playing:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.06)  # the last frames are in flight

    def pause(self) -> None:
        """What a browser does between utterances: no track on the sender."""
        self.sender.replaceTrack(None)

    def resume(self) -> None:
        self.sender.replaceTrack(self.mic)

    async def send_bye(self) -> None:
        """The RTCP BYE some browsers send when the track is paused."""
        await self.sender._send_rtcp([RtcpByePacket(sources=[self.sender._ssrc])])

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.pc.close()
