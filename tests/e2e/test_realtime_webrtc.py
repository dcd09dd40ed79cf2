"""The OpenAI Realtime API's WebRTC variant against a real daemon, with an aiortc client.

As OpenAI's WebRTC clients do: the offer goes to ``POST /v1/realtime/calls`` as
``application/sdp``, events travel on the ``oai-events`` data channel, Piper's speech
goes up the microphone track at real time, and the reply comes back on the server's
audio track, which Whisper hears back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from aiortc import RTCSessionDescription

from daemon.audio.pcm import resample_pcm
from daemon.speech.player import LEAD_S
from protocols.webrtc import ice
from protocols.webrtc.rtcp import pace_reports
from tests.daemon import Daemon
from tests.helpers import assert_heard, hear, silence, words
from tests.webrtc_client import LOOPBACK, RtcClient

pytestmark = pytest.mark.e2e
TURN_S = 180.0
"""One turn on a loaded 2-core machine: decode, LLM and speech, with room to spare."""
CUT_SLACK_S = 0.3
"""Reply audio the track may carry past what the daemon counted as played at a cut (a
frame handed out at the cut, the track's own schedule): less than the LEAD_S of audio
the daemon keeps queued in the track ahead of playback, which a cut must drop."""


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
        self.location = ""

    async def connect(self, timeout: float = 20) -> CallClient:
        ice.install(asyncio.get_running_loop())
        self.channel = self.pc.createDataChannel("oai-events", ordered=True)
        opened = asyncio.Event()
        self.channel.on("open", opened.set)

        self.channel.on("message", self._on_message)

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

    def heard_when(self, predicate: Any) -> float:
        """Seconds of reply audio received when the first event matching ``predicate``
        arrived."""
        i = next(i for i, m in enumerate(self.received) if predicate(m))
        return self.heard_at[i] / 2 / self.reply_rate


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
    await call.settled()  # its last packets may still be on their way (a loaded machine)
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
    # The person listens to a second of the reply, then cuts in. The daemon sends reply
    # audio at most LEAD_S ahead of what it counts as played: that much more heard
    # means at least a second played, however late this machine hears it.
    await call.hear_reply(1.0 + LEAD_S)
    await call.speak(np.concatenate([speak("Stop."), silence(1.5)]))
    done = await call.until("response.done")
    assert done["response"]["id"] == opening["response_id"]
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    cleared = await call.until("output_audio_buffer.cleared")
    assert cleared["response_id"] == opening["response_id"]
    truncated = [m for m in call.received if m["type"] == "conversation.item.truncated"]
    assert truncated and truncated[0]["audio_end_ms"] >= 500
    # The track went quiet at the cut: up to the next turn's reply (or its end, if it has
    # no audio) it carried what had played by the daemon's count, which paces the track,
    # and not the audio queued in the track beyond it. Counted in audio, not in time:
    # frames on their way at the cut land late on a loaded machine, but land all the same.
    await call.until("response.done")

    def next_turn(m: dict[str, Any]) -> bool:
        if m["type"] == "output_audio_buffer.started":
            return m["response_id"] != opening["response_id"]
        return m["type"] == "response.done" and m["response"]["id"] != opening["response_id"]

    carried_s = call.heard_when(next_turn)
    played_s = truncated[0]["audio_end_ms"] / 1000
    assert carried_s <= played_s + CUT_SLACK_S, (carried_s, played_s)


async def test_the_call_ends_when_the_client_hangs_up(daemon):
    await daemon.no_sessions_left("webrtc")
    client = await CallClient(daemon.url).connect()
    await client.until("session.created")
    call_id = client.location.rsplit("/", 1)[-1]
    await client.close()
    await asyncio.to_thread(daemon.wait_for_log, f"WebRTC session {call_id} closed", 60)
    log = await asyncio.to_thread(daemon.wait_for_log, f"Realtime call {call_id} ended", 60)
    assert "Traceback" not in log
