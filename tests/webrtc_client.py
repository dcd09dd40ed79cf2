"""An aiortc client that behaves like a browser talking to Hearth's /api/rtc/asr.

Media stays on loopback: the client's host candidates and the daemon's (via
``webrtc.addresses``) are 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from aiortc.rtp import RtcpByePacket

from protocols.webrtc import ice
from protocols.webrtc.rtcp import pace_reports
from protocols.webrtc.tracks import ReplyTrack, frame_pcm

AUDIBLE = 32
"""A sample above this (about -60 dBFS) makes a frame sound, not a silent one."""
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
        self.heard_at: list[int] = []
        """Reply audio received (bytes of ``reply_pcm``) when each of ``received`` came:
        where a message falls in the reply, whatever the machine's speed."""
        self.reply_pcm = bytearray()
        self.reply_rate = 48000
        self.reply_frames_at: list[float] = []
        """When each reply frame that carries sound came (``time.monotonic()``): the benches'
        first reply audio (a track's silent frames are not counted)."""
        self.session = ""
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self, timeout: float = 20) -> RtcClient:
        ice.install(asyncio.get_running_loop())
        self.channel = self.pc.createDataChannel("chat", ordered=True)
        opened = asyncio.Event()
        self.channel.on("open", opened.set)

        self.channel.on("message", self._on_message)

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

    def _on_message(self, raw: str) -> None:
        message = json.loads(raw)
        self.received.append(message)
        self.heard_at.append(len(self.reply_pcm))
        self.messages.put_nowait(message)

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
            if samples.size and int(np.abs(samples.astype(np.int32)).max()) > AUDIBLE:
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

    def got(self, kind: str, since: int = 0, **obj: Any) -> bool:
        """Whether a ``kind`` message whose ``obj`` holds ``obj`` came after the first
        ``since`` messages."""
        return any(
            m["type"] == kind and all(m.get("obj", {}).get(k) == v for k, v in obj.items())
            for m in self.received[since:]
        )

    async def speak(
        self, pcm16k: np.ndarray, until: Callable[[], bool] | None = None, wait_s: float = 60
    ) -> None:
        """Send 16 kHz audio through the microphone track at real time.

        With ``until``, the microphone then goes on sending silence (a person still
        holding the button, an open microphone) until ``until()`` holds, for at most
        ``wait_s``: what the daemon says it heard ends the speaking, not a guess at how
        fast it hears. Without it holding, the audio simply ends (the test's assertions
        then find what is missing).
        """
        self.mic.play(pcm16k.astype(np.int16).tobytes(), 16000)
        self.mic.flush()
        deadline = time.monotonic() + wait_s
        while True:
            while self.mic.playing:
                await asyncio.sleep(0.01)
            if until is None or until() or time.monotonic() > deadline:
                break
            self.mic.play(bytes(3200), 16000)  # 100 ms more silence, on the same schedule
        await asyncio.sleep(0.06)  # the last frames are in flight

    def heard_s(self, since: int = 0) -> float:
        """Seconds of reply audio received after the first ``since`` bytes."""
        return (len(self.reply_pcm) - since) / 2 / self.reply_rate

    async def hear_reply(self, seconds: float, since: int = 0, timeout: float = 60) -> None:
        """Wait until ``seconds`` of reply audio came after the first ``since`` bytes: the
        person listens to that much of it (however long it takes to arrive)."""
        deadline = time.monotonic() + timeout
        while self.heard_s(since) < seconds:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.heard_s(since):.2f} s of reply audio, not {seconds}")
            await asyncio.sleep(0.01)

    async def settled(self, quiet_s: float = 1.0, timeout: float = 60) -> None:
        """Wait until reply audio has stopped arriving for ``quiet_s`` (within ``timeout``).

        Call it once the reply's audio is all on its way (the daemon said so): the
        track is then played out and idle, and what still comes is what was in flight.
        """
        deadline = time.monotonic() + timeout
        size, since = len(self.reply_pcm), time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            if len(self.reply_pcm) != size:
                size, since = len(self.reply_pcm), time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return

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
