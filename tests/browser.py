"""Headless Chromium for end-to-end tests of the browser pages.

Chromium and chromedriver come from Debian (`make test` installs them when run as
root). The fake microphone plays a WAV file in a loop; WebRTC media stays on
loopback (no mDNS-obfuscated candidates, loopback candidates allowed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import wav

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def chromium_or_skip() -> tuple[str, str]:
    """Paths of chromium and chromedriver, or skip the test saying what is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("needs Debian's chromium and chromium-driver (make test installs them as root)")
    return browser, driver


def write_wav(path: Path, samples: np.ndarray, rate: int = 16000) -> Path:
    """int16 samples as a WAV file (the fake microphone's input)."""
    path.write_bytes(wav(samples, rate))
    return path


def chrome(microphone_wav: Path | None = None, fake_ui: bool = True):  # noqa: ANN201
    """A headless Chromium driven by selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_or_skip()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--use-fake-device-for-media-stream",
        "--ignore-certificate-errors",
        "--disable-background-networking",
        "--no-first-run",
        "--autoplay-policy=no-user-gesture-required",
        "--disable-features=WebRtcHideLocalIpsWithMdns",
        "--allow-loopback-in-peer-connection",
        "--window-size=900,1100",
    ):
        options.add_argument(arg)
    if fake_ui:
        options.add_argument("--use-fake-ui-for-media-stream")
    if microphone_wav is not None:
        options.add_argument(f"--use-file-for-fake-audio-capture={microphone_wav}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def wait_for(driver: Any, script: str, timeout: float = 90) -> Any:
    """Run ``script`` until it returns something truthy; fail with the browser's log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    logs = [entry["message"] for entry in driver.get_log("browser")][-20:]
    page = driver.execute_script("return document.body ? document.body.innerText : ''")
    raise AssertionError(
        f"timed out waiting for: {script}\nbrowser log: {logs}\npage: {str(page)[:800]!r}"
    )


FIREFOX_PREFS = {
    "media.autoplay.default": 0,  # allowed: the page plays the answer without a click
    "media.autoplay.block-webaudio": False,
    "media.autoplay.blocking_policy": 0,
    "media.cubeb.force_null_context": True,  # no sound device here: a silent sink
    "media.peerconnection.ice.loopback": True,  # media on 127.0.0.1
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    "media.navigator.permission.disabled": True,
    "browser.shell.checkDefaultBrowser": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "app.update.auto": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
}


def firefox(url: str, profile: Path) -> subprocess.Popen[bytes]:
    """Headless Firefox (Debian's firefox-esr) on ``url``, with no WebDriver: the page
    drives itself and reports back (see tests/data/ha-card-page.html, ?autotest=1)."""
    browser = shutil.which("firefox-esr") or shutil.which("firefox")
    if not browser:
        pytest.skip("needs Debian's firefox-esr (make test installs it as root)")
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "user.js").write_text(
        "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in FIREFOX_PREFS.items())
    )
    return subprocess.Popen(
        [browser, "--headless", "--no-remote", "--profile", str(profile), url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ | {"MOZ_HEADLESS": "1", "HOME": str(profile)},
    )


def screenshot(driver: Any, name: str, selector: str | None = None) -> None:
    """Save the page, or one element of it, as tests/artifacts/NAME."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = str(ARTIFACTS / name)
    if selector:
        driver.find_element("css selector", selector).screenshot(path)
    else:
        driver.save_screenshot(path)
