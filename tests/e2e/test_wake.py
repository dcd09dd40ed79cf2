"""Wake words end to end: a real daemon, the ``wyoming`` client and an aiortc client."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.wake import Detect, Detection, NotDetected

from tests.daemon import Daemon
from tests.helpers import assert_heard, eventually, silence
from tests.webrtc_client import RtcClient

pytestmark = pytest.mark.e2e

CHUNK = 320
"""10 ms of 16 kHz s16 mono, as Home Assistant sends it."""
COMMAND = "Turn on the kitchen lights."
SECRET = "The garage code is four four seven one."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    extra = (
        "llm:\n  temperature: 0.0\n  max_tokens: 20\n"
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 21200\n  port_max: 21299\n"
        "log:\n  level: debug\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("wake"), extra).serve()


def client(daemon: Daemon) -> AsyncTcpClient:
    return AsyncTcpClient("127.0.0.1", daemon.wyoming_port)


async def stream(c: AsyncTcpClient, pcm: np.ndarray) -> None:
    data = pcm.astype("<i2").tobytes()
    for i in range(0, len(data), CHUNK):
        await c.write_event(
            AudioChunk(rate=16000, width=2, channels=1, audio=data[i : i + CHUNK]).event()
        )


async def next_event(c: AsyncTcpClient, timeout: float = 30) -> Event:
    event = await asyncio.wait_for(c.read_event(), timeout)
    assert event is not None, "connection closed"
    return event


async def test_describe_lists_wake_models(daemon):
    async with client(daemon) as c:
        await c.write_event(Describe().event())
        info = Info.from_event(await next_event(c))
    models = {m.name: m for m in info.wake[0].models}
    assert {"okay_nabu", "hey_jarvis", "hey_mycroft", "alexa", "hey_rhasspy"} <= set(models)
    assert models["okay_nabu"].phrase == "Okay Nabu"
    assert "en" in models["okay_nabu"].languages


async def test_detection_then_not_detected(daemon, speak):
    word = speak("Okay Nabu.")
    async with client(daemon) as c:
        await c.write_event(Detect(names=["okay_nabu"]).event())
        await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await stream(c, np.concatenate([silence(0.5), word, silence(0.5)]))
        detection = Detection.from_event(await next_event(c))
        assert detection.name == "okay_nabu"
        # The word ends about 0.5 s + its length in; the timestamp is audio time.
        assert 500 < detection.timestamp < 500 + len(word) // 16 + 400
        await c.write_event(AudioStop().event())
        # A second run on the same connection, without the word: not-detected.
        await c.write_event(Detect(names=["okay_nabu"]).event())
        await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await stream(c, np.concatenate([silence(0.3), speak(COMMAND), silence(0.3)]))
        await c.write_event(AudioStop().event())
        assert NotDetected.is_type((await next_event(c)).type)


async def test_satellite_detects_again_on_one_connection(daemon, speak):
    """Like wyoming-satellite: one connection, detect + audio-start after each detection."""
    word = np.concatenate([silence(0.4), speak("Okay Nabu."), silence(0.6)])
    async with client(daemon) as c:
        for _ in range(3):
            await c.write_event(Detect(names=["okay_nabu"]).event())
            await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            await stream(c, np.concatenate([speak(COMMAND), word]))
            event = await next_event(c)
            assert Detection.is_type(event.type), event
        # Without a new detect, the open run keeps listening: the word again, later.
        await stream(c, np.concatenate([silence(2.5), word]))
        assert Detection.is_type((await next_event(c)).type)


async def test_detect_without_names_hears_any_model(daemon, speak):
    async with client(daemon) as c:
        await c.write_event(Detect().event())
        await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await stream(c, np.concatenate([silence(0.3), speak("Hey Jarvis."), silence(0.6)]))
        assert Detection.from_event(await next_event(c)).name == "hey_jarvis"


async def test_unknown_model_and_detect_without_audio(daemon):
    async with client(daemon) as c:
        await c.write_event(Detect(names=["okay_nabu"]).event())
        await c.write_event(AudioStop().event())
        assert NotDetected.is_type((await next_event(c)).type)
        await c.write_event(Detect(names=["hey_kitchen"]).event())
        error = await next_event(c)
        assert error.type == "error" and error.data["code"] == "unknown-model"
        assert "hey_kitchen" in error.data["text"]


async def test_custom_model_file_that_is_not_a_model(daemon):
    folder = daemon.workdir / "state" / "wake"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hey_toaster.tflite").write_bytes(b"definitely not a model" * 10)
    meta = {"type": "micro", "wake_word": "Hey Toaster", "model": "hey_toaster.tflite"}
    meta["micro"] = {"probability_cutoff": 0.9, "sliding_window_size": 5}
    (folder / "hey_toaster.json").write_text(json.dumps(meta))
    async with client(daemon) as c:
        await c.write_event(Describe().event())
        info = Info.from_event(await next_event(c))
        assert "hey_toaster" not in {m.name for m in info.wake[0].models}
        await c.write_event(Detect(names=["hey_toaster"]).event())
        error = await next_event(c)
    assert error.data["code"] == "unknown-model"
    assert "not a TFLite model" in error.data["text"]

    def logged() -> bool:
        return any("hey_toaster" in line and "refused" in line for line in daemon.log.splitlines())

    assert await eventually(logged, 30), daemon.log[-2000:]


async def test_custom_model_appears_without_restart(daemon, speak):
    import importlib.resources
    import shutil

    folder = daemon.workdir / "state" / "wake"
    folder.mkdir(parents=True, exist_ok=True)
    models = importlib.resources.files("pymicro_wakeword") / "models"
    shutil.copy(str(models / "okay_nabu.tflite"), folder / "my_nabu.tflite")
    meta = json.loads((models / "okay_nabu.json").read_text())
    meta["model"] = "my_nabu.tflite"
    (folder / "my_nabu.json").write_text(json.dumps(meta))
    async with client(daemon) as c:
        await c.write_event(Detect(names=["my_nabu"]).event())
        await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await stream(c, np.concatenate([silence(0.3), speak("Okay Nabu."), silence(0.6)]))
        assert Detection.from_event(await next_event(c)).name == "my_nabu"


# --------------------------------------------------------------------------- WebRTC


async def test_webrtc_wake_mode(daemon, speak):
    rtc = await RtcClient(daemon.url).connect()
    try:
        rtc.send("listen", wake_word="okay_nabu")
        state = await rtc.expect("state")
        assert state["obj"]["mode"] == "wake"
        assert state["obj"]["wake"]["phrase"] == "Okay Nabu"
        # Speech without the word: nothing is transcribed, nothing logged.
        await rtc.speak(np.concatenate([silence(0.3), speak(SECRET), silence(1.2)]))
        assert not [m for m in rtc.received if m["type"] in ("infer", "vad", "partial")]
        # The word, then the command: one transcript, without the word.
        said = speak("Okay Nabu, turn on the kitchen lights.")
        await rtc.speak(np.concatenate([silence(0.3), said, silence(1.8)]))
        wake = await rtc.expect("wake", timeout=30)
        assert wake["obj"] == {"event": "detected", "name": "okay_nabu", "phrase": "Okay Nabu"}
        infer = await rtc.expect("infer", timeout=60)
        text = infer["obj"]["text"]
        assert_heard(text, COMMAND, "kitchen")
        assert "nabu" not in text.lower()
        waiting = await rtc.expect("wake", timeout=30)
        assert waiting["obj"]["event"] == "waiting"
        # Back to waiting: more speech without the word is not heard.
        await rtc.speak(np.concatenate([speak(SECRET), silence(1.2)]))
        assert len([m for m in rtc.received if m["type"] == "infer"]) == 1
    finally:
        await rtc.close()
    log = daemon.log.lower()
    # Words only: digits would also match the RTP timestamps in aiortc's debug lines.
    for word in ("garage", "four four", "seven one"):
        assert word not in log


async def test_webrtc_unknown_wake_word(daemon):
    rtc = await RtcClient(daemon.url).connect()
    try:
        rtc.send("listen", wake_word="hey_kitchen")
        error = await rtc.expect("error", timeout=20)
        assert error["obj"]["code"] == "unknown-model"
    finally:
        await rtc.close()
