"""The Smart Turn reference table: the model's float32 answers on a few spoken clips.

Two steps, run once, both in Hearth's venv; the test
(``tests/unit/daemon/engines/turn/test_smart_turn.py``) compares Hearth's
probabilities with the table.

1. ``.venv/bin/python -m bench.turn_reference synth``: speaks each text with the
   bundled Piper voice (en_US-joe-medium), resamples it to 16 kHz, trims the voice's
   own trailing silence, adds 200 ms of digital silence (about when the endpointer
   first asks the model) and writes ``tests/data/turn/<name>.wav``. Piper runs
   without its noise (the same audio on every run), but the clips are kept all the
   same: a newer Piper or voice would move the probabilities.
2. ``.venv/bin/python -m bench.turn_reference reference``: the reference shares no
   code with Hearth's path. The features are Pipecat's own (its vendored numpy copy
   of ``transformers.WhisperFeatureExtractor(chunk_length=8)``, loaded from the
   pipecat-ai wheel by file, without importing Pipecat). The model is the
   smart-turn-v3.2-cpu.onnx file evaluated by ONNX's pure-numpy reference evaluator
   (``onnx.reference``), with the quantized activations passed through and the int8
   weights expanded to float: the float32 model the file encodes, with no CPU-specific
   kernel in the way. Hearth runs that model on ONNX Runtime
   (:mod:`daemon.engines.turn.qdq`).

   For comparison the table also keeps what Pipecat's analyzer gives on the machine
   that wrote it (ONNX Runtime's integer kernels, ``ORT_ENABLE_ALL``) and that
   machine's CPU flags: those numbers move with the CPU, and the test does not use
   them.

Clips built from others (``concat``) or from nothing (``silence_s``) are not stored
as audio; the test builds them the same way, with :func:`clip_audio`.
"""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import ROOT, arguments

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


def _pipecat_features() -> Any:
    """Pipecat's ``compute_whisper_log_mel_features``, loaded from its file alone."""
    import importlib.util

    spec = importlib.util.find_spec("pipecat")
    assert spec is not None and spec.submodule_search_locations, "pipecat-ai is not installed"
    path = Path(list(spec.submodule_search_locations)[0]) / "audio/turn/smart_turn"
    module_spec = importlib.util.spec_from_file_location(
        "pipecat_whisper_features", path / "_whisper_features.py"
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.compute_whisper_log_mel_features


def float_evaluator(model_path: Path) -> Any:
    """The QDQ file as float32 in ONNX's numpy reference evaluator: activations pass
    through ``QuantizeLinear``/``DequantizeLinear``; stored integers are expanded."""
    import onnx
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class QuantizeLinear(OpRun):
        op_domain = ""

        def _run(self, x: np.ndarray, *args: Any, **kwargs: Any) -> tuple[np.ndarray]:
            return (x,)

    class DequantizeLinear(OpRun):
        op_domain = ""

        def _run(
            self,
            x: np.ndarray,
            scale: np.ndarray,
            zero_point: np.ndarray | None = None,
            axis: int | None = None,
            **kwargs: Any,
        ) -> tuple[np.ndarray]:
            if x.dtype.kind == "f":
                return (x,)
            s = scale.astype(np.float64)
            z = np.zeros_like(s) if zero_point is None else zero_point.astype(np.float64)
            if s.size > 1:
                shape = [1] * x.ndim
                shape[1 if axis is None else axis] = s.size
                s, z = s.reshape(shape), z.reshape(shape)
            return (((x.astype(np.float64) - z) * s).astype(np.float32),)

    return ReferenceEvaluator(
        onnx.load(str(model_path)), new_ops=[QuantizeLinear, DequantizeLinear]
    )


def cpu_flags() -> str:
    """The CPU's model name and its vector extensions that pick integer kernels."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")),
        "unknown CPU",
    )
    flags = sorted({f for f in text.split() if f == "avx2" or "avx512" in f or "vnni" in f})
    return f"{name}: {' '.join(flags) or 'no AVX2'}"


def reference() -> None:
    """Step 2: the float32 reference and, for comparison, Pipecat's int8 answers here."""
    import importlib.metadata

    import onnx
    import onnxruntime

    from daemon.engines.models import resolve_turn_model

    path = resolve_turn_model("")
    features = _pipecat_features()
    evaluator = float_evaluator(path)
    opts = onnxruntime.SessionOptions()
    opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    int8 = onnxruntime.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    n = 8 * RATE
    table: dict[str, Any] = {
        "about": "the float32 model in smart-turn-v3.2-cpu.onnx (onnx.reference, numpy) on"
        " Pipecat's features; int8_probability: Pipecat's analyzer (ONNX Runtime's integer"
        " kernels) on int8_cpu, for comparison only; see bench/turn_reference.py",
        "pipecat_ai": importlib.metadata.version("pipecat-ai"),
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "model": path.name,
        "threshold": 0.5,
        "int8_cpu": cpu_flags(),
        "clips": {},
    }
    for name, recipe in recipes().items():
        audio = clip_audio(name, recipe).astype(np.float32) / 32768.0
        x = audio[-n:] if len(audio) > n else np.pad(audio, (n - len(audio), 0))
        mel = features(x, do_normalize=True)[None].astype(np.float32)
        (out,) = evaluator.run(None, {"input_features": mel})
        p = float(np.asarray(out).reshape(-1)[0])
        q = float(int8.run(None, {"input_features": mel})[0].reshape(-1)[0])
        entry = recipe | {
            "seconds": round(len(audio) / RATE, 3),
            "probability": round(p, 5),
            "int8_probability": round(q, 5),
        }
        table["clips"][name] = entry
        print(f"{name:14s} float32 {p:.4f}  int8 here {q:.4f}  {recipe.get('text', '')}")
    TABLE.write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    steps = {"synth": synth, "reference": reference}
    parser = arguments(__doc__, write=False)
    parser.add_argument("step", choices=steps, help="synth (step 1) or reference (step 2)")
    steps[parser.parse_args().step]()
