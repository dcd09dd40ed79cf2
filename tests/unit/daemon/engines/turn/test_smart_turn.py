"""Smart Turn v3.2: Hearth gives the float32 model's probabilities, on any CPU.

The reference table and its clips come from ``bench/turn_reference.py``: Pipecat's
own features and the int8 file evaluated as float32 by ONNX's numpy reference
evaluator, which shares no code or kernel with Hearth's path. Float arithmetic
differs between CPUs in rounding only (about 1e-6); the integer kernels that the
file would otherwise run on moved these probabilities by up to 0.55.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.turn_reference import TABLE, clip_audio
from daemon.engines import models
from daemon.engines.models import EMBEDDED_TURN_PIN, resolve_turn_model
from daemon.engines.turn.features import log_mel
from daemon.engines.turn.smart_turn import SmartTurn, window
from daemon.errors import ModelUnavailable

REFERENCE = json.loads(TABLE.read_text())
CLIPS = REFERENCE["clips"]


@pytest.fixture(scope="module")
def turn() -> SmartTurn:
    return SmartTurn(resolve_turn_model(""), threshold=REFERENCE["threshold"])


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_probability_matches_the_float_reference(turn: SmartTurn, name: str) -> None:
    audio = clip_audio(name, CLIPS[name])
    assert audio.dtype == np.int16
    assert turn.predict(audio).probability == pytest.approx(CLIPS[name]["probability"], abs=0.02)


def test_the_reference_separates_what_the_cpu_kernels_blur() -> None:
    # The table is worth checking against only where its clips tell the classes apart.
    probabilities = {name: clip["probability"] for name, clip in CLIPS.items()}
    assert min(probabilities[n] for n in ("lights", "weather")) > 0.9
    assert max(probabilities[n] for n in ("call-um", "eggs-and", "long-then-for")) < 0.1


def test_the_graph_runs_without_integer_kernels(turn: SmartTurn) -> None:
    import onnx

    from daemon.engines.turn.qdq import float_model_bytes

    graph = onnx.load_from_string(float_model_bytes(turn.path.read_bytes())).graph
    ops = {node.op_type for node in graph.node}
    assert not ops & {"QuantizeLinear", "DequantizeLinear", "MatMulInteger", "QLinearMatMul"}
    assert {t.data_type for t in graph.initializer} <= {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.INT64,
    }
    assert turn.exact


def test_the_int8_kernels_are_still_there_for_comparison(turn: SmartTurn) -> None:
    raw = SmartTurn(turn.path, threshold=0.5, exact=False)
    audio = clip_audio("lights", CLIPS["lights"])
    # Not compared with a stored number: what the kernels give depends on the CPU.
    assert 0.0 <= raw.predict(audio).probability <= 1.0
    assert not raw.exact


def test_clips_cover_padding_and_truncation() -> None:
    seconds = [clip["seconds"] for clip in CLIPS.values()]
    assert min(seconds) < 8.0 < max(seconds)


@pytest.mark.parametrize("name", ["lights", "weather"])
def test_complete_sentence_is_complete(turn: SmartTurn, name: str) -> None:
    assert CLIPS[name]["probability"] > 0.9
    assert turn.predict(clip_audio(name, CLIPS[name])).complete


@pytest.mark.parametrize("name", ["call-um", "eggs-and"])
def test_trailing_filler_or_conjunction_is_incomplete(turn: SmartTurn, name: str) -> None:
    assert CLIPS[name]["probability"] < 0.25
    assert not turn.predict(clip_audio(name, CLIPS[name])).complete


def test_threshold_decides(turn: SmartTurn) -> None:
    strict = SmartTurn(turn.path, threshold=0.99)
    audio = clip_audio("lights", CLIPS["lights"])
    assert turn.predict(audio).complete and not strict.predict(audio).complete


def test_window_keeps_the_last_eight_seconds_padded_in_front() -> None:
    short = np.full(100, 16384, dtype=np.int16)
    x = window(short, 1000)
    assert x.dtype == np.float32 and len(x) == 1000
    assert not x[:900].any() and np.all(x[900:] == 0.5)
    long = np.arange(3000, dtype=np.int16)
    assert np.array_equal(window(long, 1000), long[-1000:].astype(np.float32) / 32768)


def test_features_shape_and_range() -> None:
    features = log_mel(window(np.zeros(10, dtype=np.int16), 128000))
    assert features.shape == (80, 800) and features.dtype == np.float32
    assert np.all(features == -1.5)  # silence: the log floor, (-10 + 4) / 4


def test_missing_embedded_model_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "package_dir", lambda package: None)
    with pytest.raises(ModelUnavailable) as caught:
        resolve_turn_model("")
    assert f"pip install --no-deps {EMBEDDED_TURN_PIN}" in str(caught.value)
    assert caught.value.code == "model-unavailable"


def test_missing_configured_model(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="vad.turn_model"):
        resolve_turn_model(str(tmp_path / "nope.onnx"))


def test_pin_matches_constraints() -> None:
    constraints = Path(__file__).resolve().parents[5] / "constraints.txt"
    assert EMBEDDED_TURN_PIN in constraints.read_text().splitlines()


def test_engines_load_the_turn_model_or_run_without(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from daemon.config import parse_config
    from daemon.runtime.engines import Engines
    from daemon.runtime.loading import _load_turn, model_keys

    config = parse_config(f"state_dir: {tmp_path}\n", "test-config.yaml")
    loaded = _load_turn(config)
    assert isinstance(loaded, SmartTurn) and loaded.window_s == 8.0
    engines = Engines(config)
    assert engines.turn_pool in engines.pools
    engines.close()
    broken = parse_config(
        f"state_dir: {tmp_path}\nvad:\n  turn_model: {tmp_path / 'gone.onnx'}\n", "test.yaml"
    )
    assert _load_turn(broken) is None
    assert "gone.onnx" in caplog.text
    assert model_keys(config)["turn"] != model_keys(broken)["turn"]
