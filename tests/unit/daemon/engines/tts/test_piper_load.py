"""Piper voices load once, also when several threads ask for the same voice at once."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from daemon.engines.tts.voices import VoiceInfo

piper = pytest.importorskip("piper")
from daemon.engines.tts import piper as piper_engine  # noqa: E402 - needs piper
from daemon.engines.tts.piper import PiperTts  # noqa: E402 - needs piper


def voice(name: str) -> VoiceInfo:
    path = Path(f"/voices/{name}.onnx")
    return VoiceInfo(name, path, Path(f"{path}.json"), "en_US", 22050, (), name, "user", False)


def test_one_voice_asked_for_by_many_threads_loads_once(monkeypatch):
    calls: list[Path] = []

    def load(model_path, config_path, use_cuda=False):
        calls.append(model_path)
        time.sleep(0.2)  # long enough for every thread to ask while it loads
        return object()

    monkeypatch.setattr(piper_engine, "load_voice", load)
    engine = PiperTts()
    with ThreadPoolExecutor(8) as pool:
        loaded = list(pool.map(lambda _: engine._load(voice("a")), range(8), timeout=10))
    assert len(calls) == 1
    assert all(item is loaded[0] for item in loaded)


def test_different_voices_load_at_the_same_time(monkeypatch):
    both = threading.Barrier(2, timeout=5)

    def load(model_path, config_path, use_cuda=False):
        both.wait()  # breaks (and fails the test) if the loads ran one after the other
        return object()

    monkeypatch.setattr(piper_engine, "load_voice", load)
    engine = PiperTts()
    with ThreadPoolExecutor(2) as pool:
        loaded = list(pool.map(engine._load, [voice("a"), voice("b")], timeout=10))
    assert loaded[0] is not loaded[1]


def test_a_failed_load_is_tried_again(monkeypatch):
    attempts = []

    def load(model_path, config_path, use_cuda=False):
        attempts.append(model_path)
        if len(attempts) == 1:
            raise OSError("disk hiccup")
        return object()

    monkeypatch.setattr(piper_engine, "load_voice", load)
    engine = PiperTts()
    with pytest.raises(OSError):
        engine._load(voice("a"))
    assert engine._load(voice("a")) is engine._load(voice("a"))
    assert len(attempts) == 2


def test_a_voice_keeps_no_arena_and_no_plan_per_sentence_length():
    # A new sentence length must not leave memory behind for months (bench/RESULTS.md,
    # "Soak"): onnxruntime's arena and its memory patterns are off for Piper's session.
    from pathlib import Path

    from daemon.engines.tts.piper import PiperTts
    from daemon.engines.tts.voices import VoiceStore

    voice = VoiceStore(Path("/nonexistent")).get("en_US-joe-medium")
    loaded = PiperTts()._read(voice)
    for session in loaded.sessions:  # the encoder and the decoder of a voice spoken as decoded
        options = session.get_session_options()
        assert options.enable_cpu_mem_arena is False and options.enable_mem_pattern is False
