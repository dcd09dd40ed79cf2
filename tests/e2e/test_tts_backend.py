"""A TTS engine that plugs in: ``tts.backend`` names a module (``tests/toy_tts.py``, eSpeak
NG), and a real ``hearth serve`` offers its voices, speaks with it over Wyoming, and hears
what it said with its own Whisper."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe

from tests.daemon import Daemon, heard, synthesize
from tests.helpers import assert_heard

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed"),
]
ROOT = Path(__file__).resolve().parents[2]
TOY = "tts:\n  backend: tests.toy_tts\n  default_voice: toy-espeak\n  cache:\n    enabled: false\n"
SAID = "Turn on the kitchen lights."


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    env = {"PYTHONPATH": str(ROOT)}
    yield from Daemon(tmp_path_factory.mktemp("toy"), TOY, env=env).serve()


async def test_the_plugged_in_engines_voices_are_the_ones_offered(toy: Daemon) -> None:
    async with AsyncTcpClient("127.0.0.1", toy.wyoming_port) as client:
        await client.write_event(Describe().event())
        info = await asyncio.wait_for(client.read_event(), 30)
    assert info is not None and info.type == "info"
    voices = {v["name"] for program in info.data["tts"] for v in program["voices"]}
    assert voices == {"toy-espeak", "toy-espeak-gb"}  # Piper's voice files are not offered
    listed = httpx.get(f"{toy.url}/api/voices", timeout=10).json()
    assert listed["default"] == "toy-espeak"
    assert {v["source"] for v in listed["voices"]} == {"engine"}


@pytest.mark.parametrize("voice", [None, "toy-espeak-gb"])
async def test_the_plugged_in_engine_speaks_over_wyoming(toy: Daemon, voice: str | None) -> None:
    events, rate, audio = await synthesize(toy, SAID, voice)
    assert events[-1].type == "audio-stop", events[-1]
    assert rate == 22050 and len(audio) / (2 * rate) > 0.8
    assert_heard(heard(toy, audio, rate), SAID, "kitchen")


async def test_a_piper_voice_is_not_the_plugged_in_engines(toy: Daemon) -> None:
    events, _, _ = await synthesize(toy, SAID, "en_US-joe-medium")
    assert events[-1].type == "error"
    assert "toy-espeak" in events[-1].data["text"], events[-1].data  # the voices it has


def test_a_default_voice_the_engine_lacks_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\ntts:\n  backend: tests.toy_tts\n")
    check = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "--config", str(config), "check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    out = check.stdout + check.stderr
    assert "tts.default_voice 'en_US-joe-medium' is not a voice of tts.backend" in out, out
    assert "toy-espeak" in out


def test_a_backend_that_is_no_engine_is_a_config_error(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path, "tts:\n  backend: tests.helpers\n", env={"PYTHONPATH": str(ROOT)})
    daemon.start(wait=False)
    assert daemon.proc is not None
    daemon.proc.wait(timeout=300)  # it stops by itself: the engines cannot load
    out = daemon.stop()
    assert daemon.returncode == 78, out  # a config error: the unit does not restart
    assert "tts.backend 'tests.helpers' is not a TTS engine" in out, out
