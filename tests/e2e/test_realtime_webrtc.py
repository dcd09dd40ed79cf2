"""The OpenAI Realtime API's WebRTC variant against a real daemon, with an aiortc client.

As OpenAI's WebRTC clients do: the offer goes to ``POST /v1/realtime/calls`` as
``application/sdp``, events travel on the ``oai-events`` data channel, Piper's speech
goes up the microphone track at real time, and the reply comes back on the server's
audio track, which Whisper hears back.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from aiortc import RTCSessionDescription

from daemon.audio.pcm import resample_pcm
from protocols.webrtc import ice
from protocols.webrtc.rtcp import pace_reports
from tests.daemon import Daemon
from tests.helpers import assert_heard, hear, silence, words
from tests.webrtc_client import LOOPBACK, RtcClient

pytestmark = pytest.mark.e2e
TURN_S = 180.0
"""One turn on a loaded 2-core machine: decode, LLM and speech, with room to spare."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    extra = (
        "llm:\n  temperature: 0.0\n  max_tokens: 40\n"
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 21400\n  port_max: 21499\n"
        "  max_sessions: 2\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("realtime-webrtc"), extra).serve()


class CallClient(RtcClient):
    """A Realtime WebRTC client: SDP to /v1/realtime/calls, events on ``oai-events``."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.arrived: list[tuple[float, dict[str, Any]]] = []
        self.location = ""

    async def connect(self, timeout: float = 20) -> CallClient:
        ice.install(asyncio.get_running_loop())
        self.channel = self.pc.createDataChannel("oai-events", ordered=True)
        opened = asyncio.Event()
        self.channel.on("open", opened.set)

        @self.channel.on("message")
        def on_message(raw: str) -> None:
            message = json.loads(raw)
            self.received.append(message)
            self.arrived.append((time.monotonic(), message))
            self.messages.put_nowait(message)

        @self.pc.on("track")
        def on_track(track: Any) -> None:
            self._tasks.append(asyncio.create_task(self._record(track)))

        self.sender = self.pc.addTrack(self.mic)
        with ice.applied(LOOPBACK):
            await self.pc.setLocalDescription(await self.pc.createOffer())
        async with httpx.AsyncClient(timeout=30) as http:
            resp = await http.post(
                f"{self.url}/v1/realtime/calls?model=gpt-realtime",
                content=self.pc.localDescription.sdp,
                headers={"Content-Type": "application/sdp", "Authorization": "Bearer unused"},
            )
        assert resp.status_code == 201, resp.text
        assert resp.headers["content-type"].startswith("application/sdp")
        self.location = resp.headers["location"]
        await self.pc.setRemoteDescription(RTCSessionDescription(resp.text, "answer"))
        for transceiver in self.pc.getTransceivers():
            pace_reports(transceiver.sender)
            pace_reports(transceiver.receiver)
        await asyncio.wait_for(opened.wait(), timeout)
        return self

    def event(self, kind: str, **fields: Any) -> None:
        self.send_raw(json.dumps({"type": kind, **fields}))

    async def until(self, kind: str) -> dict[str, Any]:
        message = await self.expect(kind, TURN_S)
        errors = [m for m in self.received if m["type"] == "error"]
        assert not errors, errors
        return message

    def at(self, predicate: Any) -> float:
        """When the first event matching ``predicate`` arrived."""
        return next(t for t, m in self.arrived if predicate(m))


@pytest.fixture
async def call(daemon: Daemon) -> Any:
    await daemon.no_sessions_left("webrtc")  # the calls before this one hung up
    client = await CallClient(daemon.url).connect()
    try:
        yield client
    finally:
        await client.close()


def reply_16k(client: CallClient) -> bytes:
    return resample_pcm(bytes(client.reply_pcm), client.reply_rate, 16000)


async def test_a_spoken_conversation_over_webrtc(call, engines, speak):
    assert call.location.startswith("/v1/realtime/calls/")
    created = await call.until("session.created")
    assert created["session"]["audio"]["input"]["turn_detection"]["type"] == "server_vad"
    await call.speak(np.concatenate([speak("Say hello to me."), silence(1.5)]))
    completed = await call.until("conversation.item.input_audio_transcription.completed")
    assert_heard(completed["transcript"], "Say hello to me.", "hello")
    started = await call.until("output_audio_buffer.started")
    done = await call.until("response.done")
    assert done["response"]["id"] == started["response_id"]
    assert done["response"]["status"] == "completed"
    stopped = await call.until("output_audio_buffer.stopped")
    assert stopped["response_id"] == started["response_id"]
    kinds = [m["type"] for m in call.received]
    assert "response.output_audio.delta" not in kinds  # the audio came on the track
    reply = done["response"]["output"][0]["content"][0]["transcript"]
    assert reply
    audio = reply_16k(call)
    assert len(audio) > 16000  # over half a second of speech
    heard = hear(engines, audio)
    said, got = set(words(reply)), set(words(heard))
    assert len(said & got) / max(1, len(said)) >= 0.6, (reply, heard)


async def test_barge_in_clears_the_track(call, speak):
    await call.until("session.created")
    # Spoken replies keep Hearth's prompt (one or two short sentences) first: the
    # long reply a barge-in needs is spelled out, not asked for.
    instructions = (
        "You count. Your answer is always: one, two, three, four, five, six, seven, "
        "eight, nine, ten, eleven, twelve, thirteen, fourteen, fifteen, sixteen, "
        "seventeen, eighteen, nineteen, twenty."
    )
    call.event("session.update", session={"type": "realtime", "instructions": instructions})
    await call.until("session.updated")
    await call.speak(np.concatenate([speak("Please count for me."), silence(1.5)]))
    opening = await call.until("output_audio_buffer.started")
    await asyncio.sleep(1.0)  # the person listens for a moment, then cuts in
    assert call.reply_pcm  # the reply was playing
    await call.speak(np.concatenate([speak("Stop."), silence(1.5)]))
    done = await call.until("response.done")
    assert done["response"]["id"] == opening["response_id"]
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    cleared = await call.until("output_audio_buffer.cleared")
    assert cleared["response_id"] == opening["response_id"]
    truncated = [m for m in call.received if m["type"] == "conversation.item.truncated"]
    assert truncated and truncated[0]["audio_end_ms"] >= 500
    # The track went quiet at the cut, until the next turn's reply began.
    cut = call.at(lambda m: m["type"] == "response.done")
    await call.until("response.done")
    later = [
        t
        for t, m in call.arrived
        if m["type"] == "output_audio_buffer.started" and m["response_id"] != opening["response_id"]
    ]
    resumed = later[0] if later else time.monotonic()
    assert resumed - cut > 0.5
    # Frames already on their way at the cut may land a little later on a loaded machine.
    assert not [t for t in call.reply_frames_at if cut + 0.5 < t < resumed]


async def test_the_call_ends_when_the_client_hangs_up(daemon):
    await daemon.no_sessions_left("webrtc")
    client = await CallClient(daemon.url).connect()
    await client.until("session.created")
    call_id = client.location.rsplit("/", 1)[-1]
    await client.close()
    await asyncio.to_thread(daemon.wait_for_log, f"WebRTC session {call_id} closed", 60)
    log = await asyncio.to_thread(daemon.wait_for_log, f"Realtime call {call_id} ended", 60)
    assert "Traceback" not in log
