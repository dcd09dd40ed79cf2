"""A WebRTC session with fake engines: reload re-pointing and intake failures."""

import asyncio
import json

import av
import numpy as np
from aiortc.mediastreams import MediaStreamError

from daemon.audio.pcm import RATE
from daemon.config import parse_config
from daemon.engines.workers import WorkerPool
from daemon.runtime.context import Core
from daemon.runtime.profiles import session_profiles
from daemon.runtime.services import Services
from daemon.speech.endpoint import EndpointConfig
from daemon.speech.session import SessionSettings, SpeechSession
from protocols.webrtc.messages import Command
from protocols.webrtc.session import RtcSession
from tests.helpers import EnergyVad, FakeAsr, eventually, silence, tone

FRAME = 320  # 20 ms at 16 kHz


class FakeEngines:
    """Just what an RtcSession asks of the Engines container, through the services."""

    partials = False
    pipeline = None
    tts = None
    speakers = None
    wake = None
    config = parse_config("")
    profiles = session_profiles(config)

    def __init__(self) -> None:
        self.asr = {"fake": FakeAsr()}
        self.sessions: list[SpeechSession] = []

    def asr_model(self, name, language=None):
        return self.asr["fake"]

    def new_session(self, model=None, options=None, settings=None):
        session = SpeechSession(
            self.asr["fake"],
            WorkerPool("asr", 1, 8),
            EnergyVad(),
            WorkerPool("vad", 1, 8),
            SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6), max_audio_s=10),
            options,
        )
        self.sessions.append(session)
        return session


class FakePc:
    def getTransceivers(self):
        return []

    async def close(self):
        pass


class FakeChannel:
    readyState = "open"

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def on(self, _name):
        return lambda handler: handler

    def send(self, text):
        self.sent.append(json.loads(text))


class FakeTrack:
    """A microphone whose 20 ms frames the test pushes."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue = asyncio.Queue()

    def push(self, samples: np.ndarray) -> None:
        for i in range(0, len(samples) - FRAME + 1, FRAME):
            frame = av.AudioFrame.from_ndarray(
                samples[i : i + FRAME].reshape(1, -1), format="s16", layout="mono"
            )
            frame.sample_rate = RATE
            self.frames.put_nowait(frame)

    async def recv(self):
        frame = await self.frames.get()
        if frame is None:
            raise MediaStreamError
        return frame


def setup(engines_ref: list):
    session = RtcSession("t", FakePc(), Services(lambda: Core(engines_ref[0])))
    channel = FakeChannel()
    session.attach_channel(channel)
    track = FakeTrack()
    session.attach_track(track)
    return session, channel, track


def infers(channel: FakeChannel) -> list[dict]:
    return [m for m in channel.sent if m["type"] == "infer"]


async def test_hands_free_moves_to_new_engines_at_the_next_utterance_boundary():
    old, new = FakeEngines(), FakeEngines()
    current = [old]
    session, channel, track = setup(current)
    await asyncio.wait_for(session._handle(Command(type="listen")), 5)
    track.push(tone(0.5))
    assert await eventually(lambda: track.frames.empty() and session.speech.in_utterance)
    current[0] = new
    session.on_engines_changed()
    track.push(np.concatenate([tone(0.3), silence(0.9)]))
    assert await eventually(lambda: len(infers(channel)) == 1)
    # The utterance under way was finished by the engines it started with.
    assert len(old.asr["fake"].calls) == 1 and new.asr["fake"].calls == []
    track.push(np.concatenate([silence(0.2), tone(0.5), silence(0.9)]))
    assert await eventually(lambda: len(infers(channel)) == 2)
    assert len(new.sessions) == 1 and session.speech is new.sessions[0]
    assert len(new.asr["fake"].calls) == 1 and len(old.asr["fake"].calls) == 1
    track.frames.put_nowait(None)
    await asyncio.wait_for(session.close(), 5)


async def test_an_unexpected_intake_failure_is_reported_and_listening_can_restart():
    engines = FakeEngines()
    session, channel, track = setup([engines])
    await asyncio.wait_for(session._handle(Command(type="listen")), 5)

    async def broken(pcm):
        raise RuntimeError("converter exploded")

    session.speech.feed = broken
    track.push(tone(0.1))
    assert await eventually(lambda: any(m["type"] == "error" for m in channel.sent))
    error = next(m for m in channel.sent if m["type"] == "error")
    assert error["obj"]["code"] == "internal-error"
    assert await eventually(lambda: {"type": "state", "obj": {"mode": "idle"}} in channel.sent)
    assert session.speech is None and session.mode == "idle"
    # The intake task lives on: a new 'listen' hears the next utterance.
    await asyncio.wait_for(session._handle(Command(type="listen")), 5)
    track.push(np.concatenate([tone(0.5), silence(0.9)]))
    assert await eventually(lambda: len(infers(channel)) == 1)
    track.frames.put_nowait(None)
    await asyncio.wait_for(session.close(), 5)


async def test_only_an_utterance_under_way_holds_a_hands_free_session_busy():
    # A reload waits for busy sessions before it closes the old engines; an idle
    # hands-free session must not hold it (it moves over at its next frame).
    engines = FakeEngines()
    session, channel, track = setup([engines])
    assert not session.busy
    await asyncio.wait_for(session._handle(Command(type="listen")), 5)
    assert session.speech is not None and not session.busy
    track.push(tone(0.5))
    assert await eventually(lambda: session.busy)
    track.push(silence(0.9))
    assert await eventually(lambda: len(infers(channel)) == 1)
    assert await eventually(lambda: not session.busy)
    await asyncio.wait_for(session._handle(Command(type="start")), 5)
    assert session.busy  # push-to-talk: held from start to the transcript
    track.frames.put_nowait(None)
    await asyncio.wait_for(session.close(), 5)
