"""WebRTC adapter logic without a network: messages, RTCP pacing, the reply track."""

import asyncio
import time

import av
import numpy as np
import pytest
from aiortc.rtp import RtcpByePacket, RtcpRrPacket, RtcpSrPacket

from daemon.errors import InvalidRequest
from protocols.webrtc import messages
from protocols.webrtc.rtcp import pace_reports
from protocols.webrtc.tracks import FRAME_SAMPLES, RATE, TIME_BASE, ReplyTrack


class Endpoint:
    def __init__(self) -> None:
        self.sent: list[object] = []

    async def _send_rtcp(self, packets: object) -> None:
        self.sent.append(packets)


async def test_reports_are_paced_but_bye_is_not():
    endpoint = Endpoint()
    pace_reports(endpoint, interval_s=60)
    report = RtcpRrPacket(ssrc=1)
    await endpoint._send_rtcp(report)  # a receiver passes one packet
    await endpoint._send_rtcp(report)
    await endpoint._send_rtcp([RtcpSrPacket(ssrc=1, sender_info=None)])  # a sender, a list
    await endpoint._send_rtcp([RtcpByePacket(sources=[1])])
    assert endpoint.sent[0] is report
    assert len(endpoint.sent) == 2 and isinstance(endpoint.sent[1][0], RtcpByePacket)


def test_messages_parse_and_name_problems():
    command = messages.parse('{"type": "start", "obj": {"beam_size": 2, "reply": true}}')
    assert (command.type, command.beam_size, command.reply) == ("start", 2, True)
    assert messages.parse('{"type": "stop", "obj": {"detect_language": true}}').language == "auto"
    for raw, problem in [
        ("nope", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"type": 5}', "string 'type'"),
        ('{"type": "jump"}', "unknown message type 'jump'"),
        ('{"type": "start", "obj": []}', "'obj' must be"),
        ('{"type": "start", "obj": {"partials": "yes"}}', "obj.partials"),
        (b"\xff", "UTF-8"),
        ("x" * 20000, "over"),
    ]:
        with pytest.raises(InvalidRequest, match=problem):
            messages.parse(raw)


async def test_the_reply_track_sends_nothing_until_there_is_audio_then_paces_it():
    track = ReplyTrack(opus=False)
    pending = asyncio.ensure_future(track.recv())
    await asyncio.sleep(0.1)
    assert not pending.done()  # idle: no frames, so no RTP
    track.play(np.zeros(16000 // 10, np.int16).tobytes(), 16000)  # 100 ms
    track.flush()
    first = await asyncio.wait_for(pending, 1)
    loop = asyncio.get_running_loop()
    began = loop.time()
    frames = [first] + [await track.recv() for _ in range(4)]
    assert loop.time() - began >= 0.06  # 4 more frames of 20 ms, paced in real time
    assert all(f.samples == FRAME_SAMPLES and f.sample_rate == RATE for f in frames)
    assert not track.playing
    track.play(np.zeros(16000, np.int16).tobytes(), 16000)
    track.clear()  # barge-in
    assert not track.playing


async def test_reply_packets_timestamps_jump_over_a_pause_by_the_time_that_passed():
    """The first packet after a pause must not carry the old, continuous timestamp:
    the browser's jitter buffer would take it for one that is seconds late."""
    track = ReplyTrack()
    track.play(np.zeros(16000 // 10, np.int16).tobytes(), 16000)  # 5 frames
    track.flush()
    first = [await track.recv() for _ in range(5)]
    assert all(isinstance(p, av.Packet) and p.time_base == TIME_BASE for p in first)
    assert [p.pts for p in first] == [i * FRAME_SAMPLES for i in range(5)]
    paused = time.monotonic()
    await asyncio.sleep(0.5)
    track.play(np.zeros(16000 // 10, np.int16).tobytes(), 16000)
    track.flush()
    after = [await track.recv() for _ in range(2)]
    passed = time.monotonic() - paused  # a loaded loop oversleeps
    gap = (after[0].pts - first[-1].pts) / RATE
    assert 0.45 <= gap <= passed + 0.2, (gap, passed)
    assert after[1].pts - after[0].pts == FRAME_SAMPLES
