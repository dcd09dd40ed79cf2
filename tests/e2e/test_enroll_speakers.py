"""The /enroll page enrolls a speaker: alone, or with a custom voice from the same takes.

Headless Chromium over HTTPS with a fake microphone playing the bundled Piper voice;
the enrolled speaker is then verified the way a Willow device asks (``voice_auth``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.browser import ARTIFACTS, chrome, chromium_or_skip, wait_for, write_wav
from tests.daemon import Daemon
from tests.helpers import PCM_HEADERS, paced, silence

pytestmark = pytest.mark.e2e

RESULT = (
    "const r = document.getElementById('{id}').textContent;return r && !r.startsWith('{busy}') && r"
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    chromium_or_skip()
    # tiny.en's exact words vary with the CPU: see test_rtc_browser.py.
    yield from Daemon(
        tmp_path_factory.mktemp("enroll-speakers"), "voices:\n  max_wer: 0.5\n"
    ).serve()


@pytest.fixture
def page(kitchen: np.ndarray, tmp_path: Path) -> Iterator[Any]:
    """A browser whose microphone says "Turn on the kitchen lights."."""
    wav = write_wav(tmp_path / "mic.wav", np.concatenate([silence(0.3), kitchen, silence(3.0)]))
    driver = chrome(wav)
    yield driver
    driver.quit()


def stored(daemon: Daemon) -> list[str]:
    """Names in the daemon's speaker store, read from its files."""
    folder = Path(daemon.workdir) / "state" / "speakers"
    return sorted(json.loads(p.read_text())["name"] for p in folder.glob("*.json"))


def verified_as(daemon: Daemon, samples: np.ndarray) -> str | None:
    """Whom a Willow upload with ``voice_auth=true`` is accepted as (None: 406)."""
    pcm = np.concatenate([samples, silence(0.3)]).astype("<i2").tobytes()
    resp = httpx.post(
        f"{daemon.url}/api/willow?voice_auth=true",
        content=paced(pcm),
        headers=PCM_HEADERS,
        timeout=60,
    )
    if resp.status_code == 406:
        return None
    assert resp.status_code == 200, resp.text
    (name,) = resp.json()["voice_auth"]
    return str(name)


def record(driver: Any, seconds: float = 2.6) -> None:
    """One recording with the page's Record/Stop button."""
    driver.execute_script("document.getElementById('record').click()")
    wait_for(driver, "return document.getElementById('record').textContent === 'Stop'")
    time.sleep(seconds)
    driver.execute_script("document.getElementById('record').click()")
    wait_for(driver, "return document.getElementById('record').textContent === 'Record'")


def click(driver: Any, selector: str) -> None:
    driver.execute_script(f"document.querySelector({json.dumps(selector)}).click()")


def test_the_page_enrolls_a_speaker_lists_renames_and_removes_them(daemon, page, kitchen):
    page.get(f"{daemon.https_url}/enroll?speaker=Ann")
    prompt = wait_for(page, "return document.getElementById('prompt').textContent")
    assert "Turn on the kitchen lights." in prompt
    assert page.execute_script("return document.getElementById('voice-part').hidden")
    for count in (1, 2):
        record(page)
        wait_for(page, f"return document.getElementById('result').textContent.includes('{count}')")
    click(page, "#enroll-speaker")
    result = wait_for(page, RESULT.format(id="speaker-result", busy="Enrolling"))
    assert result.startswith("Hearth knows Ann by voice now (from 2 recordings)"), result
    assert stored(daemon) == ["Ann"]
    assert verified_as(daemon, kitchen) == "Ann"
    wait_for(page, "return document.querySelector('#speakers li[data-name=\"Ann\"]')")
    ARTIFACTS.mkdir(exist_ok=True)
    page.save_screenshot(str(ARTIFACTS / "enroll-speaker-page.png"))

    click(page, '#speakers li[data-name="Ann"] .rename')
    page.execute_script("document.querySelector('#speakers .new-name').value = 'Annie'")
    page.execute_script(
        "document.querySelector('#speakers .new-name')"
        ".dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))"
    )
    wait_for(page, "return document.querySelector('#speakers li[data-name=\"Annie\"]')")
    assert stored(daemon) == ["Annie"]
    assert verified_as(daemon, kitchen) == "Annie"

    click(page, '#speakers li[data-name="Annie"] .remove')
    assert stored(daemon) == ["Annie"]  # the first click only asks
    click(page, '#speakers li[data-name="Annie"] .remove')
    wait_for(page, "return document.getElementById('speakers-note').textContent.includes('Nobody')")
    assert stored(daemon) == []
    assert verified_as(daemon, kitchen) is None


def test_one_take_makes_a_voice_and_a_speaker_at_once(daemon, page, kitchen):
    page.get(f"{daemon.https_url}/enroll?name=joe-voice&speaker=Joe")
    wait_for(page, "return document.getElementById('prompt').textContent")
    assert not page.execute_script("return document.getElementById('voice-part').hidden")
    assert page.execute_script("return document.getElementById('enroll-speaker').disabled")
    record(page)
    result = wait_for(page, RESULT.format(id="result", busy="Checking"))
    assert result.startswith("Accepted"), result
    takes = list((Path(daemon.workdir) / "state").rglob("joe-voice/wavs/*.wav"))
    assert len(takes) == 1
    # The speaker comes from the voice's accepted take: nothing recorded twice.
    click(page, "#enroll-speaker")
    result = wait_for(page, RESULT.format(id="speaker-result", busy="Enrolling"))
    assert result.startswith("Hearth knows Joe by voice now (from 1 recording)"), result
    assert stored(daemon) == ["Joe"]
    assert verified_as(daemon, kitchen) == "Joe"
    assert httpx.delete(f"{daemon.url}/api/speakers/Joe").status_code == 204


def test_a_voice_without_takes_enrolls_nobody(daemon):
    resp = httpx.post(f"{daemon.url}/api/speakers/Nobody/from-voice/no-such-voice", timeout=30)
    assert resp.status_code == 400
    assert "no enrollment takes" in resp.json()["error"]
    bad = httpx.post(f"{daemon.url}/api/speakers/Nobody/from-voice/..", timeout=30)
    assert bad.status_code in (400, 404)
    assert stored(daemon) == []
