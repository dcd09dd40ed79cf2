"""A Piper voice spoken as it is decoded: the first piece is a fifth of a second, the
pieces together are the sentence the whole graph makes, and loudness is the voice's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("piper")
from piper import SynthesisConfig  # noqa: E402 - needs piper

from daemon.engines.tts import piper_stream  # noqa: E402 - needs piper
from daemon.engines.tts.piper import load_voice  # noqa: E402 - needs piper
from daemon.engines.tts.voices import VoiceStore  # noqa: E402

SENTENCE = "The blinds in the living room are closed, and the kitchen lights are on."
QUIET = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)


@pytest.fixture(scope="module")
def joe():
    voice = VoiceStore(Path("/nonexistent")).get("en_US-joe-medium")
    streaming = load_voice(voice.model_path, voice.config_path)
    whole = load_voice(voice.model_path, voice.config_path, streaming=False)
    return streaming, whole


def test_the_bundled_voice_is_split_at_its_decoder(joe) -> None:
    streaming, _ = joe
    assert isinstance(streaming, piper_stream.StreamingVoice)
    assert streaming.hop == 256 and 1.0 < streaming.gain < 4.0


def test_the_pieces_are_the_whole_graphs_sentence(joe) -> None:
    streaming, whole = joe
    (ids,) = list(streaming._sentences(SENTENCE))
    pieces = list(streaming._decoded(ids, QUIET))
    assert len(pieces) > 2
    assert pieces[0].size == piper_stream.FIRST_FRAMES * streaming.hop
    joined = np.concatenate(pieces)
    reference = whole.phoneme_ids_to_audio(ids, QUIET)
    assert joined.shape == reference.shape
    # Each piece decoded with its context is the whole decode but for rounding.
    assert float(np.abs(joined - reference).max()) < 2e-3


def test_every_sentence_of_a_voice_gets_its_gain_under_a_soft_limit(joe) -> None:
    streaming, _ = joe
    pcm = b"".join(streaming.synthesize(SENTENCE, QUIET))
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32767
    (ids,) = list(streaming._sentences(SENTENCE))
    raw = np.concatenate(list(streaming._decoded(ids, QUIET)))
    expected = piper_stream.soft_limit(raw * streaming.gain)
    assert np.abs(audio - expected).max() < 1e-3
    assert np.abs(audio).max() <= 1.0


def test_the_soft_limit_leaves_quiet_samples_alone_and_stays_within_one() -> None:
    samples = np.array([-3.0, -0.95, -0.5, 0.0, 0.5, 0.89, 0.95, 3.0], np.float32)
    limited = piper_stream.soft_limit(samples)
    assert np.array_equal(limited[2:6], samples[2:6])
    assert np.all(np.abs(limited) <= 1.0) and np.all(np.diff(limited) > 0)
    assert 0.9 < limited[6] < 0.95  # bent, not cut


def test_a_graph_without_a_decoder_entry_is_spoken_whole(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["input"], ["output"])
    graph = helper.make_graph(
        [node],
        "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "tiny.onnx"
    onnx.save(helper.make_model(graph), str(path))
    assert piper_stream.split_graph(path) is None
