"""The stem over the front padding once, and the fused GELUs: the same answers, less work."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from bench.turn_reference import TABLE, clip_audio
from daemon.engines.models import resolve_turn_model
from daemon.engines.turn.features import constant_frames, log_mel
from daemon.engines.turn.gelu import fuse_gelu
from daemon.engines.turn.padding import POSITIONS, equal_leading_frames, trim
from daemon.engines.turn.qdq import dequantize
from daemon.engines.turn.smart_turn import INPUT, SAMPLES, SmartTurn, window

CLIPS = json.loads(TABLE.read_text())["clips"]


@pytest.fixture(scope="module")
def turn() -> SmartTurn:
    return SmartTurn(resolve_turn_model(""))


def test_constant_frames_are_those_reading_only_the_leading_samples() -> None:
    assert constant_frames(200, 800) == 0
    assert constant_frames(201, 800) == 1  # frame 0 reflects samples 1 .. 200
    assert constant_frames(360, 800) == 2  # frame 1 reads up to sample 359
    assert constant_frames(SAMPLES, 800) == 799  # the last frame also reads past the end
    for leading in (201, 359, 360, 361, 5000):
        rng = np.random.default_rng(leading)
        audio = np.zeros(SAMPLES, np.float32)
        audio[leading:] = rng.standard_normal(SAMPLES - leading) * 0.1
        features = log_mel(audio)
        assert equal_leading_frames(features) >= constant_frames(leading, 800)


@pytest.mark.parametrize("name", ["play-the", "lights", "silence", "long-then-for"])
def test_trimmed_frames_give_the_full_windows_answer(turn: SmartTurn, name: str) -> None:
    assert turn.skips_padding
    features = log_mel(window(clip_audio(name, CLIPS[name]), SAMPLES))
    frames, positions = trim(features)
    assert len(positions) == 400 and positions.max() == frames.shape[1] // 2 - 1
    if name != "long-then-for":
        assert frames.shape[1] < 800  # padded in front: fewer frames through the stem
    (full,) = turn.session.run(None, {INPUT: features[None], POSITIONS: np.arange(400)})
    (short,) = turn.session.run(None, {INPUT: frames[None], POSITIONS: positions})
    # Float rounding of a shorter sum: within 1e-5 on every CPU (1.01e-6 seen on AVX2).
    assert np.asarray(short).item() == pytest.approx(np.asarray(full).item(), abs=1e-5)


def test_every_gelu_is_fused_and_nothing_else_changes(turn: SmartTurn) -> None:
    model = dequantize(onnx.load_from_string(turn.path.read_bytes()))
    before = len(model.graph.node)
    assert fuse_gelu(model) == 8  # two after the convolutions, one per layer's MLP, two more
    ops = [node.op_type for node in model.graph.node]
    assert "Erf" not in ops and ops.count("Gelu") == 8
    assert len(ops) == before - 8 * 4
