"""The Smart Turn reference table: Pipecat's own analyzer on a few spoken clips.

Two steps, each in its own environment, run once; the test
(``tests/unit/daemon/engines/turn/test_smart_turn.py``) compares Hearth's
probabilities with the table.

1. ``.venv/bin/python bench/turn_reference.py synth`` (Hearth's venv): speaks each
   text with the bundled Piper voice (en_US-joe-medium), resamples it to 16 kHz,
   trims the voice's own trailing silence, adds 200 ms of digital silence (about
   when the endpointer first asks the model) and writes
   ``tests/data/turn/<name>.wav``. Piper runs without its noise (the same audio on
   every run), but the clips are kept all the same: a newer Piper or voice would
   move the probabilities.
2. In a scratch venv with Pipecat itself::

       python3.11 -m venv /tmp/pipecat-ref
       /tmp/pipecat-ref/bin/pip install pipecat-ai==1.14.0 onnxruntime numpy transformers
       /tmp/pipecat-ref/bin/python bench/turn_reference.py reference

   runs ``LocalSmartTurnAnalyzerV3._predict_endpoint`` (its bundled
   smart-turn-v3.2-cpu.onnx, int16 scaled by 1/32768 as ``BaseSmartTurn`` does) on
   every clip, and the original recipe (``transformers.WhisperFeatureExtractor``
   with ``chunk_length=8``, as in pipecat-ai/smart-turn's ``inference.py``) as a
   second opinion, and writes ``tests/data/turn_reference.json``.

Clips built from others (``concat``) or from nothing (``silence_s``) are not stored
as audio; the test builds them the same way, with :func:`clip_audio`.
"""

from __future__ import annotations

import json
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CLIPS = DATA / "turn"
TABLE = DATA / "turn_reference.json"
RATE = 16000
TAIL_S = 0.2
VOICE = "en_US-joe-medium"

SPOKEN = {
    "weather": "What will the weather be like tomorrow?",
    "lights": "Please turn off the kitchen lights.",
    "timer-for": "Set a timer for",
    "eggs-and": "I need to buy milk, eggs and",
    "play-the": "Can you play the",
    "call-um": "Remind me to call, um",
}
"""Clips spoken by Piper: name -> text."""
BUILT: dict[str, dict[str, Any]] = {
    "silence": {"silence_s": 2.0},
    "long-then-for": {"concat": ["weather", "lights", "eggs-and", "weather", "timer-for"]},
}
"""Clips made from the spoken ones: longer than the model's 8 s window, or none at all."""


def read_wav(path: Path) -> np.ndarray:
    """A 16 kHz mono int16 wav file's samples."""
    with wave.open(str(path), "rb") as f:
        assert f.getframerate() == RATE and f.getnchannels() == 1 and f.getsampwidth() == 2
        return np.frombuffer(f.readframes(f.getnframes()), dtype="<i2").astype(np.int16)


def write_wav(path: Path, audio: np.ndarray) -> None:
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(RATE)
        f.writeframes(audio.astype("<i2").tobytes())


def clip_audio(name: str, recipe: dict[str, Any], clips: Path = CLIPS) -> np.ndarray:
    """The int16 samples of a clip, as the table's ``recipe`` describes it."""
    if "wav" in recipe:
        return read_wav(clips / recipe["wav"])
    if "silence_s" in recipe:
        return np.zeros(int(recipe["silence_s"] * RATE), dtype=np.int16)
    if "concat" in recipe:
        return np.concatenate([read_wav(clips / f"{part}.wav") for part in recipe["concat"]])
    raise ValueError(f"clip {name}: unknown recipe {recipe}")


def recipes() -> dict[str, dict[str, Any]]:
    return {name: {"wav": f"{name}.wav", "text": text} for name, text in SPOKEN.items()} | BUILT


def synth() -> None:
    """Step 1 (Hearth's venv): speak the texts into tests/data/turn/."""
    sys.path.insert(0, str(ROOT))
    from piper import PiperVoice, SynthesisConfig

    from daemon.audio.pcm import resample_pcm
    from daemon.engines.tts.voices import VoiceStore

    info = VoiceStore(Path("/nonexistent-user-voices")).get(VOICE)
    voice = PiperVoice.load(info.model_path, info.config_path)
    quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    CLIPS.mkdir(parents=True, exist_ok=True)
    for name, text in SPOKEN.items():
        chunks = voice.synthesize(text, syn_config=quiet)
        pcm = b"".join(c.audio_int16_bytes for c in chunks)
        audio = np.frombuffer(resample_pcm(pcm, voice.config.sample_rate, RATE), dtype="<i2")
        loud = np.flatnonzero(np.abs(audio.astype(np.int32)) > 300)
        audio = audio[: loud[-1] + 1] if len(loud) else audio
        tail = np.zeros(int(TAIL_S * RATE), dtype=np.int16)
        write_wav(CLIPS / f"{name}.wav", np.concatenate([audio, tail]))
        print(f"{name}: {len(audio) / RATE:.2f} s  {text!r}")


def reference() -> None:
    """Step 2 (a venv with pipecat-ai): Pipecat's probabilities into the table."""
    import importlib.metadata

    import onnxruntime
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    analyzer = LocalSmartTurnAnalyzerV3(sample_rate=RATE)
    second = _transformers_recipe(analyzer._session)
    table: dict[str, Any] = {
        "about": "Pipecat's LocalSmartTurnAnalyzerV3 on these clips; see bench/turn_reference.py",
        "pipecat_ai": importlib.metadata.version("pipecat-ai"),
        "onnxruntime": onnxruntime.__version__,
        "model": "smart-turn-v3.2-cpu.onnx",
        "threshold": 0.5,
        "clips": {},
    }
    for name, recipe in recipes().items():
        audio = clip_audio(name, recipe).astype(np.float32) / 32768.0
        p = float(analyzer._predict_endpoint(audio)["probability"])
        entry = recipe | {"seconds": round(len(audio) / RATE, 3), "probability": round(p, 5)}
        if second is not None:
            entry["transformers_probability"] = round(second(audio), 5)
        table["clips"][name] = entry
        print(f"{name:14s} {p:.4f}  {recipe.get('text', '')}")
    TABLE.write_text(json.dumps(table, indent=2) + "\n")


def _transformers_recipe(session: Any) -> Any:
    """smart-turn's inference.py recipe (transformers features), when installed."""
    try:
        from transformers import WhisperFeatureExtractor
    except ImportError:
        return None
    extractor = WhisperFeatureExtractor(chunk_length=8)
    n = 8 * RATE

    def predict(audio: np.ndarray) -> float:
        x = audio[-n:] if len(audio) > n else np.pad(audio, (n - len(audio), 0))
        features = extractor(
            x,
            sampling_rate=RATE,
            return_tensors="np",
            padding="max_length",
            max_length=n,
            truncation=True,
            do_normalize=True,
        ).input_features.astype(np.float32)
        return float(session.run(None, {"input_features": features})[0].reshape(-1)[0])

    return predict


if __name__ == "__main__":
    {"synth": synth, "reference": reference}[sys.argv[1]]()
