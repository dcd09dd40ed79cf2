"""Headless Chromium opens /rtc over HTTPS and talks to Hearth with a fake microphone."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.browser import ARTIFACTS, chrome, chromium_or_skip, wait_for, write_wav
from tests.daemon import Daemon
from tests.helpers import heard_as, silence

pytestmark = pytest.mark.e2e
KITCHEN = "Turn on the kitchen lights."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    chromium_or_skip()
    extra = (
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 22000\n  port_max: 22099\n"
        # The enroll page's take passes Opus and tiny.en, whose exact words vary with the
        # CPU: a word misheard of the prompt's five is 0.2, against the default 0.25.
        "voices:\n  max_wer: 0.5\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("rtc-browser"), extra).serve()


def test_the_rtc_page_transcribes_the_microphone_over_https(daemon, kitchen, tmp_path):
    wav = write_wav(tmp_path / "mic.wav", np.concatenate([silence(0.8), kitchen, silence(1.5)]))
    driver = chrome(wav)
    try:
        driver.get(f"{daemon.https_url}/rtc?autoconnect=1&mode=hands-free")
        assert driver.execute_script("return window.isSecureContext")
        wait_for(driver, "return document.getElementById('state').dataset.state === 'connected'")
        # The fake microphone plays its file in a loop from getUserMedia on, before the
        # call is up: on a slow start the first final is the sentence's tail. A later
        # loop is heard whole.
        finals_script = (
            "return [...document.querySelectorAll('#finals li')].map(li => li.textContent)"
            ".filter(Boolean)"
        )
        deadline = time.monotonic() + 90
        while True:
            finals = wait_for(driver, finals_script)
            if any(heard_as(text, KITCHEN, "kitchen") for text in finals):
                break
            assert time.monotonic() < deadline, f"never heard {KITCHEN!r}: {finals}"
            time.sleep(0.5)
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / "rtc-page.png"))
    finally:
        driver.quit()


def test_the_page_explains_a_denied_microphone(daemon):
    driver = chrome(fake_ui=False)  # no fake permission UI: headless denies the prompt
    try:
        driver.get(f"{daemon.https_url}/rtc?autoconnect=1")
        notice = wait_for(
            driver,
            "const n = document.getElementById('notice'); return !n.hidden && n.textContent",
            timeout=30,
        )
        assert "Microphone access was denied" in notice
        assert driver.execute_script("return document.getElementById('state').dataset.state") == (
            "error"
        )
    finally:
        driver.quit()


def test_the_enroll_page_records_a_take_and_shows_its_check(daemon, kitchen, tmp_path):
    """The first prompt is "Turn on the kitchen lights."; the fake microphone says it."""
    wav = write_wav(tmp_path / "take.wav", np.concatenate([silence(0.3), kitchen, silence(3.0)]))
    driver = chrome(wav)
    try:
        driver.get(f"{daemon.https_url}/enroll?name=browser-voice")
        prompt = wait_for(driver, "return document.getElementById('prompt').textContent")
        assert "Turn on the kitchen lights." in prompt
        driver.execute_script("document.getElementById('record').click()")
        wait_for(driver, "return document.getElementById('record').textContent === 'Stop'")
        time.sleep(2.6)
        driver.execute_script("document.getElementById('record').click()")
        result = wait_for(
            driver,
            "const r = document.getElementById('result').textContent;"
            "return r && !r.startsWith('Checking') && r",
        )
        assert result.startswith("Accepted"), result
        minutes = driver.execute_script("return document.getElementById('minutes').textContent")
        assert minutes.endswith(", 1 take")
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / "enroll-page.png"))
    finally:
        driver.quit()
    take = list((daemon.workdir / "state").rglob("browser-voice/wavs/*.wav"))
    assert len(take) == 1
