"""Fixtures: real engines are loaded once per test session."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daemon.audio.pcm import RATE
from daemon.config import Config, parse_config
from daemon.engines.tts.base import SynthesisOptions

DETERMINISTIC = SynthesisOptions(sample_rate=RATE, noise_scale=0.0, noise_w_scale=0.0)
"""Piper without its random noise: the same audio on every run."""


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state")


@pytest.fixture(scope="session")
def config(state_dir: Path) -> Config:
    return parse_config(f"state_dir: {state_dir}\n", "test-config.yaml")


@pytest.fixture(scope="session")
def engines(config: Config):
    from daemon.engines.hardware import probe
    from daemon.runtime.loading import load_engines

    logging.getLogger("daemon").setLevel(logging.INFO)
    loaded = load_engines(config, probe())
    yield loaded
    loaded.close()


@pytest.fixture(scope="session")
def speak(engines):
    """speak(text) -> int16 samples at 16 kHz, spoken by the bundled Piper voice.

    Piper's noise scales are set to 0 so that the audio, and therefore every
    transcript in the tests, is the same on every run.
    """
    cache: dict[str, np.ndarray] = {}

    def _speak(text: str) -> np.ndarray:
        if text not in cache:

            async def run() -> bytes:
                opts = DETERMINISTIC
                return b"".join([b.pcm async for b in engines.tts.stream(text, opts)])

            # A worker thread of its own: callers may be inside a running loop.
            with ThreadPoolExecutor(1) as pool:
                pcm = pool.submit(asyncio.run, run()).result()
            cache[text] = np.frombuffer(pcm, dtype=np.int16).copy()
        return cache[text]

    return _speak


@pytest.fixture(scope="session")
def kitchen(speak) -> np.ndarray:
    return speak("Turn on the kitchen lights.")


@pytest.fixture
def driver() -> Iterator[Any]:
    """A headless Chromium with a fake microphone permission, closed after the test."""
    from tests.browser import chrome

    browser = chrome()
    yield browser
    browser.quit()
