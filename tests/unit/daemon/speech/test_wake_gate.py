"""The wake gate with a fake wake model: only audio after the word reaches the session."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from daemon.audio.pcm import AudioFormat
from daemon.engines.wake.base import Detector, WakeModelInfo, WakeStream
from daemon.speech.events import FinalTranscript, VoiceStarted
from daemon.speech.session import SessionOptions
from daemon.speech.wake_gate import GateState, WakeDetected, WakeGate, WakeListener, WakeWaiting
from tests.fakes import fake_config, fake_engines, silence, tone

MARK = 20000
"""The fake model 'hears the word' at a sample this loud (tones stay below 10000)."""
INFO = WakeModelInfo("okay_fake", "Okay Fake", ("en",), "micro", "builtin", 0.5, 1)
FMT = AudioFormat(16000, 2, 1)


class MarkDetector(Detector):
    """Fires at every MARK sample; records everything it was fed."""

    name = "okay_fake"

    def __init__(self) -> None:
        self.fed = 0
        self.resets = 0
        self.closed = False

    def process(self, pcm: bytes) -> list[tuple[int, float]]:
        samples = np.frombuffer(pcm, "<i2")
        self.fed += len(samples)
        return [(int(i) + 1, 1.0) for i in np.flatnonzero(samples >= MARK - 100)]

    def reset(self) -> None:
        self.resets += 1

    def close(self) -> None:
        self.closed = True


def word() -> np.ndarray:
    """A 'wake word': 0.3 s of a loud tone the fake ASR would hear, ending in MARK."""
    w = tone(0.3, 700.0).copy()
    w[-1] = MARK
    return w


@pytest.fixture
def setup(tmp_path):
    fakes = fake_engines(fake_config(tmp_path))
    engines = fakes.engines
    detector = MarkDetector()
    listener = WakeListener(WakeStream([detector], 2.0), engines.wake_pool, batch_ms=20)
    speech = engines.new_session("fake", SessionOptions(hands_free=True, partials=False))
    gate = WakeGate(listener, speech, INFO, command_timeout_s=2.0)
    yield gate, detector, fakes
    fakes.close()


async def feed(gate: WakeGate, audio: np.ndarray, notes: list) -> None:
    data = audio.astype("<i2").tobytes()
    for i in range(0, len(data), 640):  # 20 ms frames, like WebRTC
        notes.extend(await asyncio.wait_for(gate.feed(FMT, data[i : i + 640]), 10))


async def events(speech, timeout: float = 5) -> list:
    out = []

    async def read() -> None:
        async for event in speech.events():
            out.append(event)
            if isinstance(event, FinalTranscript):
                return

    await asyncio.wait_for(read(), timeout)
    return out


async def test_speech_before_the_word_never_reaches_the_session(setup):
    gate, detector, fakes = setup
    notes: list = []
    await feed(gate, np.concatenate([silence(0.3), tone(1.2), silence(0.8)]), notes)
    assert notes == [] and gate.state is GateState.WAITING
    assert gate.speech.samples == 0  # the session heard nothing
    assert detector.fed > 0
    assert fakes.asr["fake"].calls == []


async def test_word_then_command_then_back_to_waiting(setup):
    gate, detector, fakes = setup
    notes: list = []
    reader = asyncio.ensure_future(events(gate.speech))
    await feed(gate, np.concatenate([silence(0.2), word(), tone(1.0), silence(0.8)]), notes)
    got = await reader
    assert isinstance(notes[0], WakeDetected) and notes[0].name == "okay_fake"
    assert isinstance(notes[-1], WakeWaiting) and notes[-1].reason == "utterance"
    assert gate.state is GateState.WAITING and detector.resets == 1
    assert any(isinstance(e, VoiceStarted) for e in got)
    # Whisper heard the command only: not the 700 Hz word before the detection.
    (call,) = fakes.asr["fake"].calls
    heard_s = call.samples / 16000
    assert heard_s < 1.0 + 0.8 + 0.3
    session_samples = gate.speech.samples
    # After the utterance: more speech without the word is dropped again.
    await feed(gate, np.concatenate([tone(1.0), silence(0.5)]), notes)
    assert gate.speech.samples == session_samples
    assert len(fakes.asr["fake"].calls) == 1


async def test_word_without_a_command_times_out(setup):
    gate, _, fakes = setup
    notes: list = []
    await feed(gate, np.concatenate([word(), silence(2.5)]), notes)
    assert [type(n) for n in notes] == [WakeDetected, WakeWaiting]
    assert notes[1].reason == "timeout"
    assert fakes.asr["fake"].calls == []


async def test_close_frees_the_stream(setup):
    gate, detector, _ = setup
    await gate.close()
    await gate.close()
    assert detector.closed
