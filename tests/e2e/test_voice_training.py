"""The whole custom-voice path: enroll Piper-spoken takes, train on CPU from scratch for a
few steps, export ONNX, and the voice registered in the store speaks."""

import time

import numpy as np
import pytest

from daemon.audio.pcm import RATE, resample_pcm
from daemon.config import parse_config
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.voices import VoiceStore
from daemon.voices.enroll import DATASET_RATE, Enrollment
from daemon.voices.training import Training, training_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(training_available() is not None, reason="training extra missing"),
]


async def test_enroll_train_export_and_speak(engines, speak, tmp_path):
    # max_wer: the takes' words are not under test here, and tiny.en may mishear one
    # of a short prompt's five words on another CPU (0.2, against the default 0.25).
    config = parse_config(
        f"state_dir: {tmp_path}\n"
        "voices:\n  min_minutes: 0\n  train_device: cpu\n  train_epochs: 1\n"
        "  train_max_steps: 2\n  train_batch_size: 2\n  train_threads: 2\n  max_wer: 0.5\n"
    )
    enrollment = Enrollment(config, "me")
    for index in range(4):
        pcm = resample_pcm(speak(enrollment.prompt(index)).tobytes(), RATE, DATASET_RATE)
        check = await enrollment.add_take(engines, np.frombuffer(pcm, dtype=np.int16), index)
        assert check.accepted, check.problems
    training = Training(config)
    started = time.monotonic()
    status = training.start("me", display_name="Me")
    assert status["status"] in ("queued", "running")
    while status["status"] in ("queued", "running", "exporting"):
        assert time.monotonic() - started < 840, status
        time.sleep(2)
        status = training.status("me")
    print(f"training {status['progress']}: {time.monotonic() - started:.0f} s")
    assert status["status"] == "done", status
    assert status["progress"]["step"] >= 2
    voice = VoiceStore(config.voices_path).get("me")
    assert voice.origin == "trained" and voice.display_name == "Me" and voice.sample_rate == 22050
    engines.tts.store = VoiceStore(config.voices_path)
    try:
        pcm = await engines.tts.synthesize("Hello there.", SynthesisOptions(voice="me"), "pcm")
    finally:
        engines.tts.store = VoiceStore(engines.config.voices_path)
    assert len(pcm) > 0.3 * 22050 * 2
