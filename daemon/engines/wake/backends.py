"""microWakeWord and openWakeWord detectors, run by the TFLite runtime in their wheels.

TFLite streaming models keep their state inside the interpreter, so every listener
gets its own interpreter; the model files are memory-mapped by TFLite, so the
weights themselves are shared through the page cache.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from daemon.engines.wake.base import Detector

MICRO_FEATURES = 40
"""microWakeWord front-end features per 10 ms step."""
MICRO_STEP = 160
"""Samples per microWakeWord feature step (10 ms)."""
OWW_FEATURES = 96
"""openWakeWord embedding size."""
TFLITE_MAGIC = b"TFL3"
"""FlatBuffer file identifier of a TFLite model (bytes 4-8)."""


def tflite_library(package: str) -> Path:
    """The TFLite C runtime shipped inside ``package`` (pymicro_wakeword or pyopen_wakeword)."""
    import importlib.resources

    lib_dir = Path(str(importlib.resources.files(package) / "lib"))
    found = sorted(lib_dir.glob("*tensorflowlite_c.*"))
    if not found:
        raise FileNotFoundError(f"{package} carries no TFLite runtime in {lib_dir}")
    return found[0]


def check_tflite(path: Path, max_bytes: int) -> str | None:
    """Why ``path`` cannot be a TFLite model (None: it may be one)."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return f"{path.name} is {size} bytes, over the {max_bytes}-byte limit"
        with path.open("rb") as f:
            head = f.read(8)
    except OSError as exc:
        return f"cannot read {path.name}: {exc.strerror or exc}"
    if len(head) < 8 or head[4:8] != TFLITE_MAGIC:
        return f"{path.name} is not a TFLite model (no TFL3 identifier)"
    return None


def _tensor_shape(lib: Any, tensor: Any) -> list[int]:
    return [lib.TfLiteTensorDim(tensor, i) for i in range(lib.TfLiteTensorNumDims(tensor))]


class MicroDetector(Detector):
    """A microWakeWord model with its own audio front end."""

    def __init__(
        self, name: str, model_path: Path, cutoff: float, window: int, lib_path: Path
    ) -> None:
        from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures

        self.name = name
        self._cutoff = cutoff
        self._model = MicroWakeWord(
            name,
            wake_word=name,
            tflite_model=model_path,
            probability_cutoff=cutoff,
            sliding_window_size=window,
            trained_languages=[],
            libtensorflowlite_c_path=lib_path,
        )
        lib = self._model.lib
        in_shape = _tensor_shape(lib, self._model.input_tensor)
        out_bytes = lib.TfLiteTensorByteSize(self._model.output_tensor)
        if len(in_shape) != 3 or in_shape[2] != MICRO_FEATURES or out_bytes != 1:
            self.close()
            raise ValueError(
                f"not a microWakeWord model (input {in_shape}, output {out_bytes} bytes; "
                f"expected [1, stride, {MICRO_FEATURES}] and one probability)"
            )
        self._features = MicroWakeWordFeatures()
        self._fed = 0
        """Samples fed since the last reset."""
        self._steps = 0
        """Feature steps computed since the last reset."""

    def process(self, pcm: bytes) -> list[tuple[int, float]]:
        """Feed audio; a firing wherever the windowed probability passes the cutoff."""
        out: list[tuple[int, float]] = []
        before = self._fed
        for features in self._features.process_streaming(pcm):
            self._steps += 1
            prob = self._model.process_streaming_prob(features)
            if prob is not None and prob > self._cutoff:
                offset = self._steps * MICRO_STEP - before
                out.append((min(max(offset, 0), len(pcm) // 2), float(prob)))
        self._fed += len(pcm) // 2
        return out

    def reset(self) -> None:
        """Start over: the front end and the interpreter's state."""
        self._features.reset()
        self._model.reset()
        self._fed = self._steps = 0

    def close(self) -> None:
        """Free the interpreter."""
        self._model.close()


class OpenWakeWordDetector(Detector):
    """An openWakeWord model with its own mel and embedding front end."""

    def __init__(
        self,
        name: str,
        model_path: Path,
        cutoff: float,
        window: int,
        lib_path: Path,
        features_dir: Path,
    ) -> None:
        from pyopen_wakeword import OpenWakeWord, OpenWakeWordFeatures

        self.name = name
        self._cutoff = cutoff
        self._window = max(1, window)
        self._model = OpenWakeWord(name, tflite_model=model_path, libtensorflowlite_c_path=lib_path)
        lib = self._model.lib
        in_shape = _tensor_shape(lib, self._model.input_tensor)
        out_bytes = lib.TfLiteTensorByteSize(self._model.output_tensor)
        if len(in_shape) != 3 or in_shape[2] != OWW_FEATURES or out_bytes != 4:
            self._model.close()
            raise ValueError(
                f"not an openWakeWord model (input {in_shape}, output {out_bytes} bytes; "
                f"expected [1, windows, {OWW_FEATURES}] and one float probability)"
            )
        self._features = OpenWakeWordFeatures(
            features_dir / "melspectrogram.tflite",
            features_dir / "embedding_model.tflite",
            lib_path,
        )
        self._probs: list[float] = []

    def process(self, pcm: bytes) -> list[tuple[int, float]]:
        """Feed audio; a firing wherever the windowed probability passes the cutoff."""
        out: list[tuple[int, float]] = []
        for embedding in self._features.process_streaming(pcm):
            for prob in self._model.process_streaming(embedding):
                self._probs = [*self._probs[-(self._window - 1) :], prob][-self._window :]
                mean = sum(self._probs) / len(self._probs)
                if len(self._probs) >= self._window and mean > self._cutoff:
                    # Embeddings come every 80 ms: the firing is placed at the chunk's end.
                    out.append((len(pcm) // 2, float(mean)))
        return out

    def reset(self) -> None:
        """Start over: the front end and the model's embedding window."""
        self._features.reset()
        self._model.reset()
        self._probs = []

    def close(self) -> None:
        """Free the interpreters."""
        self._model.close()
        self._features.close()


def probe_tflite(lib_path: Path, model_path: Path) -> str | None:
    """Why the TFLite runtime refuses ``model_path`` (None: it loads)."""
    lib = ctypes.CDLL(str(lib_path))
    lib.TfLiteModelCreateFromFile.argtypes = [ctypes.c_char_p]
    lib.TfLiteModelCreateFromFile.restype = ctypes.c_void_p
    lib.TfLiteModelDelete.argtypes = [ctypes.c_void_p]
    lib.TfLiteModelDelete.restype = None
    model = lib.TfLiteModelCreateFromFile(str(model_path.resolve()).encode("utf-8"))
    if not model:
        return f"the TFLite runtime cannot load {model_path.name}"
    lib.TfLiteModelDelete(model)
    return None


def silence_check(detector: Detector) -> None:
    """Run one second of silence through a fresh detector (raises if it cannot run)."""
    detector.process(np.zeros(16000, dtype="<i2").tobytes())
    detector.reset()
